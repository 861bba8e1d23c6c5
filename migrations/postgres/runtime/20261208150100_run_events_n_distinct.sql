-- What `run_events.run_id` holds, told to the planner: many runs, each a few events (a tenth of
-- the rows, so it holds as the table grows), so an ANALYZE that met one run's events does not
-- turn a run's lookups (its next sequence, its history) into reads of the whole table. The same
-- for `messages` in the chat's migrations.
ALTER TABLE run_events ALTER COLUMN run_id SET (n_distinct = -0.1);
ANALYZE run_events;
