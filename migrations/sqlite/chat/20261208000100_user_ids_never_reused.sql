-- Issue 62: an id that named a person never names another. users.id is the rowid without
-- AUTOINCREMENT (rebuilding the table would cascade through every table that names a user), so
-- SQLite would give a removed newest account's id to the next one, and with it the audit log's
-- rows that name it (they outlive the account by design). The highest id ever given, or named by
-- the audit log, is kept here; a new account takes the next one (`Store::add_user`).
CREATE TABLE user_ids (
    only    INTEGER PRIMARY KEY CHECK (only = 1),
    highest INTEGER NOT NULL
);
INSERT INTO user_ids (only, highest) VALUES (1, MAX(
    COALESCE((SELECT MAX(id) FROM users), 0),
    COALESCE((SELECT MAX(owner_id) FROM audit_log), 0),
    COALESCE((SELECT MAX(actor_id) FROM audit_log), 0)));
CREATE TRIGGER user_ids_highest AFTER INSERT ON users
BEGIN
    UPDATE user_ids SET highest = NEW.id WHERE highest < NEW.id;
END;
