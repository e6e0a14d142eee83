-- payorch schema v1. Times are UTC milliseconds since the Unix epoch (INTEGER).
-- Business rows (payments, conflicts, cases, outbox events) are never purged.

CREATE TABLE payments (
  id                   TEXT PRIMARY KEY,            -- pay_<ULID>
  tenant_id            TEXT NOT NULL,
  operation_type       TEXT NOT NULL,               -- 'payment'
  operation_id         TEXT NOT NULL,
  provider             TEXT NOT NULL,               -- resolved at intake, immutable
  client_key           TEXT NOT NULL,               -- ck_...: the key the vendor sees
  request_digest       TEXT NOT NULL,
  amount_minor         INTEGER NOT NULL CHECK (typeof(amount_minor) = 'integer'
                                               AND amount_minor BETWEEN 1 AND 9007199254740991),
  currency             TEXT NOT NULL CHECK (length(currency) = 3),
  payee                TEXT NOT NULL,
  source               TEXT NOT NULL,
  description          TEXT,
  metadata             TEXT NOT NULL DEFAULT '{}',  -- JSON object of strings
  state                TEXT NOT NULL CHECK (state IN ('PROCESSING','UNKNOWN','SUCCEEDED','FAILED_FINAL')),
  next_action          TEXT NOT NULL DEFAULT 'submit' CHECK (next_action IN ('submit','query','none')),
  next_attempt_at      INTEGER NOT NULL,            -- when a worker may next pick it up
  fence                INTEGER NOT NULL DEFAULT 0,  -- +1 on every lease claim
  lease_owner          TEXT,
  lease_expires_at     INTEGER,
  attempt_count        INTEGER NOT NULL DEFAULT 0,  -- vendor calls made (submits + queries)
  first_submit_at      INTEGER,
  last_submit_ended_at INTEGER,
  vendor_reference     TEXT,
  failure_code         TEXT,
  failure_message      TEXT,
  created_at           INTEGER NOT NULL,
  updated_at           INTEGER NOT NULL,
  -- One business intent per scope: the intake transaction relies on this constraint, never on
  -- "select, then insert".
  UNIQUE (tenant_id, operation_type, operation_id),
  -- The vendor-facing key is unique per provider.
  UNIQUE (provider, client_key)
);

-- Tenant listing, newest first (ULID ids sort by creation time).
CREATE INDEX payments_by_tenant ON payments (tenant_id, id);
CREATE INDEX payments_by_tenant_state ON payments (tenant_id, state, id);
-- Worker claims: due non-terminal payments.
CREATE INDEX payments_due ON payments (next_attempt_at)
  WHERE state IN ('PROCESSING','UNKNOWN') AND next_action <> 'none';

-- The intent's parameters and identities are immutable once committed.
CREATE TRIGGER payments_immutable BEFORE UPDATE ON payments
WHEN OLD.id IS NOT NEW.id OR OLD.tenant_id IS NOT NEW.tenant_id
  OR OLD.operation_type IS NOT NEW.operation_type OR OLD.operation_id IS NOT NEW.operation_id
  OR OLD.provider IS NOT NEW.provider OR OLD.client_key IS NOT NEW.client_key
  OR OLD.request_digest IS NOT NEW.request_digest OR OLD.amount_minor IS NOT NEW.amount_minor
  OR OLD.currency IS NOT NEW.currency OR OLD.payee IS NOT NEW.payee OR OLD.source IS NOT NEW.source
  OR OLD.description IS NOT NEW.description OR OLD.metadata IS NOT NEW.metadata
  OR OLD.created_at IS NOT NEW.created_at
BEGIN
  SELECT RAISE(ABORT, 'payments: immutable column changed');
END;

CREATE TRIGGER payments_no_delete BEFORE DELETE ON payments
BEGIN
  SELECT RAISE(ABORT, 'payments: rows are never deleted');
END;

-- Same key, different request: the refused attempt, kept for audit.
CREATE TABLE idempotency_conflicts (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  tenant_id        TEXT NOT NULL,
  operation_type   TEXT NOT NULL,
  operation_id     TEXT NOT NULL,
  payment_id       TEXT NOT NULL REFERENCES payments (id),
  stored_digest    TEXT NOT NULL,
  attempted_digest TEXT NOT NULL,
  attempted_body   TEXT NOT NULL,                   -- the canonical digest fields of the attempt
  created_at       INTEGER NOT NULL
);

-- One row per state change (and per escalation), written in the transaction that made it.
CREATE TABLE outbox (
  seq             INTEGER PRIMARY KEY AUTOINCREMENT, -- feed order (the events cursor)
  event_id        TEXT NOT NULL UNIQUE,              -- evt_<ULID>
  tenant_id       TEXT NOT NULL,
  payment_id      TEXT NOT NULL REFERENCES payments (id),
  type            TEXT NOT NULL,
  payload         TEXT NOT NULL,                     -- the event body as sent to tenants
  created_at      INTEGER NOT NULL,
  delivered_at    INTEGER,
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  last_error      TEXT
);
CREATE INDEX outbox_by_tenant ON outbox (tenant_id, seq);
CREATE INDEX outbox_pending ON outbox (next_attempt_at) WHERE delivered_at IS NULL;
CREATE INDEX outbox_by_payment ON outbox (payment_id, seq);

-- Vendor callbacks, deduplicated by the vendor's event id.
CREATE TABLE callback_inbox (
  provider    TEXT NOT NULL,
  event_id    TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  payment_id  TEXT,
  payload     TEXT NOT NULL,
  result      TEXT NOT NULL,
  PRIMARY KEY (provider, event_id)
);

CREATE TABLE reconciliation_cases (
  id               TEXT PRIMARY KEY,                -- rc_<ULID>
  payment_id       TEXT NOT NULL REFERENCES payments (id),
  reason           TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('open','resolved')),
  opened_at        INTEGER NOT NULL,
  resolved_at      INTEGER,
  outcome          TEXT,
  vendor_reference TEXT,
  note             TEXT,
  resolved_by      TEXT,
  evidence         TEXT NOT NULL DEFAULT '[]'       -- JSON array
);
-- At most one open case per payment.
CREATE UNIQUE INDEX reconciliation_one_open ON reconciliation_cases (payment_id) WHERE status = 'open';
CREATE INDEX reconciliation_by_status ON reconciliation_cases (status, opened_at);
