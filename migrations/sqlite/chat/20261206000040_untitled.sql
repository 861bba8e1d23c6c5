-- An untitled conversation is stored with an empty title (each reader sees "New conversation" in
-- their own language); those created before, still without a message, become untitled again.
UPDATE conversations SET title = ''
WHERE title = 'New conversation' AND NOT EXISTS (SELECT 1 FROM messages WHERE messages.conversation_id = conversations.id);
