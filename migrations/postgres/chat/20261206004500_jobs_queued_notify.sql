-- A job queued (inserted, or put back by a sweep) announces itself on `tourguide_jobs`, in the
-- transaction that queued it: delivered when that commits, once per transaction however many
-- rows it queued (PostgreSQL folds equal notifications), and never for a change that queues no
-- work. Workers listen on it instead of on every conversation change, so a worker's own writes
-- no longer wake it. Every path that queues a job is covered, present and future.
CREATE FUNCTION tourguide_job_queued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tourguide_jobs', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_queued AFTER INSERT OR UPDATE OF state ON jobs
    FOR EACH ROW WHEN (NEW.state = 'queued') EXECUTE FUNCTION tourguide_job_queued();
