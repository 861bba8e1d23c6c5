-- The list shows a user's latest conversations, a tie in the update time going to the one created
-- later: `ORDER BY updated_at DESC, seq DESC`. An index on (user_id, updated_at DESC) left each tie
-- to be sorted before the limit could apply; this one is in the list's order.
DROP INDEX conversations_user;
CREATE INDEX conversations_user ON conversations(user_id, updated_at DESC, seq DESC);
