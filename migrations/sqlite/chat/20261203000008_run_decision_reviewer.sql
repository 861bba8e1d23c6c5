-- Who decided an inbox decision, when a reviewer approved a change its owner may not approve
-- (four-eyes) on a run the owner's chat moved on from; NULL: the run's owner.
ALTER TABLE run_decisions ADD COLUMN decided_by BIGINT;
