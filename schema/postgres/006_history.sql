-- As SQLite's 010_history.sql: the payment history, one row per change of a payment or refund
-- row, written in the transaction that made it; never purged. Rows of a database older than
-- this table have no history from before the upgrade.
CREATE TABLE payment_history (
  seq          BIGSERIAL PRIMARY KEY,
  payment_id   TEXT COLLATE "C" NOT NULL REFERENCES payments (id),
  at           BIGINT NOT NULL,
  from_state   TEXT COLLATE "C",
  to_state     TEXT COLLATE "C" NOT NULL,
  next_action  TEXT COLLATE "C" NOT NULL,
  fence        BIGINT NOT NULL,
  cause        TEXT COLLATE "C" NOT NULL CHECK (cause <> ''),
  event_type   TEXT COLLATE "C",
  event_id     TEXT COLLATE "C",
  case_reason  TEXT COLLATE "C",
  request_id   TEXT
);
CREATE INDEX payment_history_by_payment ON payment_history (payment_id, seq);

-- Every case of one row, for its timeline (reconciliation_one_open indexes the open ones only).
CREATE INDEX reconciliation_by_payment ON reconciliation_cases (payment_id, id);
