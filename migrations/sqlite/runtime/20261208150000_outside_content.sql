-- The run holds content from outside (an attachment, a result of an outside tool): open-world tools
-- then go through an approval card. Never cleared: it outlives the run, so a later turn of the
-- same conversation is asked about it.
ALTER TABLE runs ADD COLUMN outside_content INTEGER NOT NULL DEFAULT 0;
