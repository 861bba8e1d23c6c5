-- An assistant line's HTML, rendered and sanitised once when the line is written, and the
-- renderer version that made it: a reader gets it as stored unless the version differs (then it
-- is rendered again from `content`). NULL for user lines and for lines written in SQL alone.
ALTER TABLE messages ADD COLUMN html TEXT;
ALTER TABLE messages ADD COLUMN html_version BIGINT;
