-- What an approver sees of a held call besides its arguments: the page's title, and a
-- screenshot of the viewport with the target outlined (secret fields painted over).
-- Screenshots live apart so that listing approvals never loads image bytes.
ALTER TABLE approvals ADD COLUMN page_title TEXT;
CREATE TABLE approval_screenshots (
    id    TEXT PRIMARY KEY REFERENCES approvals (id) ON DELETE CASCADE,
    mime  TEXT NOT NULL,
    data  BLOB NOT NULL
);
