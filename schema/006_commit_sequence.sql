-- The commit sequence: the writer adds one to it in every transaction it commits, so that every
-- writer transaction writes at least one page (a readiness probe is a real write), and the
-- database itself says how many writer transactions it holds (docs/operations.md).
CREATE TABLE commit_sequence (
  id  INTEGER PRIMARY KEY CHECK (id = 1),
  seq INTEGER NOT NULL CHECK (seq >= 0)
);
INSERT INTO commit_sequence (id, seq) VALUES (1, 0);
