-- When the answer or decision the worker is to deliver was recorded, in Unix milliseconds: the
-- start of the answer → continuation latency that /metrics reports, across processes.
ALTER TABLE conversations ADD COLUMN recorded_at_ms BIGINT;
