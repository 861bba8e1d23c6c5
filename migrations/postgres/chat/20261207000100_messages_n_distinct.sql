-- What `messages.conversation_id` holds, told to the planner: many conversations, each a share of
-- the lines (about 20 lines a conversation, as a fraction of the rows, so it holds as the table
-- grows). Autovacuum's first ANALYZE of a young install can meet the table holding one
-- conversation; its statistics then say every line is of that conversation, and the polls' count
-- of a conversation's lines read the whole table until the next ANALYZE (the bench's polls fell
-- to half over a minute at four times the CPU). With this, every ANALYZE keeps the index.
ALTER TABLE messages ALTER COLUMN conversation_id SET (n_distinct = -0.05);
ANALYZE messages;
