-- Vendor callbacks: cases about a charge no payment of ours matches, and inbox retention.

-- A verified callback naming a client_key that no payment of its provider has is stored,
-- acknowledged, and held in a callback_mismatch case with no payment (docs/contract.md §6): payment_id
-- becomes nullable, and such a case keeps the vendor's provider and reference itself. A case
-- about a payment takes both from the payment. SQLite cannot relax NOT NULL in place, so the
-- table is rebuilt; no other table references it, so this runs with foreign keys on, inside the
-- migration's transaction.
CREATE TABLE reconciliation_cases_v3 (
  id               TEXT PRIMARY KEY,                -- rc_<ULID>
  payment_id       TEXT REFERENCES payments (id),   -- NULL: no payment matched (see reference)
  reason           TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('open','resolved')),
  opened_at        INTEGER NOT NULL,
  resolved_at      INTEGER,
  outcome          TEXT,
  vendor_reference TEXT,
  note             TEXT,
  resolved_by      TEXT,
  evidence         TEXT NOT NULL DEFAULT '[]',      -- JSON array
  provider         TEXT,                            -- set when payment_id is NULL
  reference        TEXT,                            -- the client_key the vendor named, likewise
  CHECK (payment_id IS NOT NULL OR (provider IS NOT NULL AND reference IS NOT NULL))
);
INSERT INTO reconciliation_cases_v3 (id, payment_id, reason, status, opened_at, resolved_at,
                                     outcome, vendor_reference, note, resolved_by, evidence)
  SELECT id, payment_id, reason, status, opened_at, resolved_at, outcome, vendor_reference, note,
         resolved_by, evidence
  FROM reconciliation_cases;
DROP TABLE reconciliation_cases;
ALTER TABLE reconciliation_cases_v3 RENAME TO reconciliation_cases;

-- At most one open case per payment.
CREATE UNIQUE INDEX reconciliation_one_open ON reconciliation_cases (payment_id) WHERE status = 'open';
-- And at most one open case per unknown reference: later callbacks naming it add evidence.
CREATE UNIQUE INDEX reconciliation_one_open_orphan ON reconciliation_cases (provider, reference)
  WHERE status = 'open' AND payment_id IS NULL;
CREATE INDEX reconciliation_by_status ON reconciliation_cases (status, opened_at);

-- Retention purges the oldest inbox rows first.
CREATE INDEX callback_inbox_by_received ON callback_inbox (received_at);
