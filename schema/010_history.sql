-- The payment history (docs/contract.md, "History"): one row per change of a payment or refund
-- row, written in the transaction that made the change — intake, every applied transition,
-- the release of a DEFERRED refund, a refund put in front of a human because its payment was
-- corrected. The outbox holds the same changes as events, but delivered events are purged; this
-- table is never purged, and it keeps what the events do not: the fence and the cause.
--  - payment_id: the row that changed (a payment's or a refund's id);
--  - from_state: the state before (NULL for the creation), to_state after, as the views spell
--    them (a refund's DEFERRED too); next_action and fence as the row has them after the change;
--  - cause: what made the change: 'intake', a trigger of the state machine (core/state_machine.h:
--    'submit_succeeded', 'resolve_retry', …), or the case reason of an escalation no trigger
--    names ('callback_mismatch', 'payment_corrected');
--  - event_type, event_id: the outbox event the change wrote (NULL when it wrote none);
--  - case_reason: the reconciliation case the change opened (NULL when none);
--  - request_id: the request whose change this is (the outbox event's), NULL for the engine's.
-- Rows of a database older than this table start at the upgrade: no history is made up for
-- them (their outbox events, while kept, show what happened before).
CREATE TABLE payment_history (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  payment_id   TEXT NOT NULL REFERENCES payments (id),
  at           INTEGER NOT NULL,
  from_state   TEXT,
  to_state     TEXT NOT NULL,
  next_action  TEXT NOT NULL,
  fence        INTEGER NOT NULL,
  cause        TEXT NOT NULL CHECK (cause <> ''),
  event_type   TEXT,
  event_id     TEXT,
  case_reason  TEXT,
  request_id   TEXT
);
CREATE INDEX payment_history_by_payment ON payment_history (payment_id, seq);

-- Every case of one row, for its timeline (reconciliation_one_open indexes the open ones only).
CREATE INDEX reconciliation_by_payment ON reconciliation_cases (payment_id, id);
