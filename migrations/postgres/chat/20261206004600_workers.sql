-- Each worker process beats here about once a second; one whose `alive_until` passed is gone.
-- A question an MCP server asks over an open call lives in the memory of the worker that made the
-- call, so the job that carries its answer names that worker (`jobs.holder`): only it takes the
-- job while it beats, anyone once it stopped (and the question is then handed back).
CREATE TABLE workers (
    instance    TEXT   PRIMARY KEY,
    alive_until BIGINT NOT NULL
);
ALTER TABLE jobs ADD COLUMN holder TEXT;
