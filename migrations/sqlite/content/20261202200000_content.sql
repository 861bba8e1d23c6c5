-- The guided tour's small website. A page's body is an ordered list of blocks stored as one JSON
-- array: a block's position is its stable address, and the tools never add or remove blocks.
-- `version` grows by one with every change, so an approval card made for one version cannot
-- overwrite a newer text. Times are Unix seconds (INTEGER).

CREATE TABLE pages (
    id          INTEGER PRIMARY KEY,
    slug        TEXT    NOT NULL UNIQUE,
    title       TEXT    NOT NULL,
    description TEXT    NOT NULL DEFAULT '',
    blocks      TEXT    NOT NULL DEFAULT '[]',
    version     INTEGER NOT NULL DEFAULT 1,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
