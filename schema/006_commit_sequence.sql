-- The commit sequence: the writer adds one to it in every transaction it commits that changed
-- rows, so the database itself says how many of them it holds (docs/operations.md).
CREATE TABLE commit_sequence (
  id  INTEGER PRIMARY KEY CHECK (id = 1),
  seq INTEGER NOT NULL CHECK (seq >= 0)
);
INSERT INTO commit_sequence (id, seq) VALUES (1, 0);
