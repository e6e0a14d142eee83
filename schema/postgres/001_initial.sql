-- payorch schema on PostgreSQL, v1: the tables, constraints, indexes and triggers of SQLite's
-- schema/001-006 as they stand after 006, in one migration (no PostgreSQL database predates it).
-- store/postgres/migrations.cpp applies it in one transaction, under the migration advisory lock.
--
-- As on SQLite: times are UTC milliseconds since the Unix epoch and money is in minor units,
-- both BIGINT. Business rows (payments, conflicts, cases, outbox events) are never purged.
-- Identifiers compare byte by byte (COLLATE "C"), as SQLite's BINARY does: listing order and
-- cursors must not depend on the server's locale.
--
-- Left out on purpose: SQLite's commit_sequence (006). It counts the commits of the one writer
-- so that a deleted -wal file or an older copy of the database file is noticed at start-up; on
-- PostgreSQL durability is the server's (synchronous_commit, replication), and one row every
-- transaction of every node rewrites would serialise them all.
--
-- Not yet for many nodes (docs/postgres.md): exposure and payment_counts keep one row per key,
-- as on SQLite, which every node's transactions would queue on, and outbox.seq is taken at
-- insert, not at commit, so concurrent writers can commit a lower seq after a higher one. The
-- store seam changes both before any node serves from PostgreSQL.

CREATE TABLE payments (
  id                     TEXT COLLATE "C" PRIMARY KEY,  -- pay_<ULID>
  tenant_id              TEXT COLLATE "C" NOT NULL,
  operation_type         TEXT COLLATE "C" NOT NULL,     -- 'payment'
  operation_id           TEXT COLLATE "C" NOT NULL,
  provider               TEXT COLLATE "C" NOT NULL,     -- resolved at intake, immutable
  client_key             TEXT COLLATE "C" NOT NULL,     -- ck_...: the key the vendor sees
  request_digest         TEXT NOT NULL,
  amount_minor           BIGINT NOT NULL CHECK (amount_minor BETWEEN 1 AND 9007199254740991),
  currency               TEXT COLLATE "C" NOT NULL CHECK (length(currency) = 3),
  payee                  TEXT NOT NULL,
  source                 TEXT NOT NULL,
  description            TEXT,
  metadata               TEXT NOT NULL DEFAULT '{}',    -- JSON object of strings, as received
  state                  TEXT COLLATE "C" NOT NULL
                           CHECK (state IN ('PROCESSING','UNKNOWN','SUCCEEDED','FAILED_FINAL')),
  next_action            TEXT COLLATE "C" NOT NULL DEFAULT 'submit'
                           CHECK (next_action IN ('submit','query','none')),
  next_attempt_at        BIGINT NOT NULL,               -- when a worker may next pick it up
  fence                  BIGINT NOT NULL DEFAULT 0,     -- +1 on every lease claim
  lease_owner            TEXT,
  lease_expires_at       BIGINT,
  attempt_count          INTEGER NOT NULL DEFAULT 0,    -- vendor calls made (submits + queries)
  first_submit_at        BIGINT,
  last_submit_ended_at   BIGINT,
  vendor_reference       TEXT,
  failure_code           TEXT,
  failure_message        TEXT,
  created_at             BIGINT NOT NULL,
  updated_at             BIGINT NOT NULL,
  -- Set when a submit is about to be sent (in the claim transaction, before the call). A submit
  -- whose start is later than its end never reported back: its outcome is unknown.
  last_submit_started_at BIGINT,
  -- An operator's `retry` resolution starts a fresh budget: attempts and give_up_after count
  -- from here (key retention still counts from first_submit_at: the vendor's clock does not
  -- reset).
  budget_started_at      BIGINT,
  budget_attempts_base   INTEGER NOT NULL DEFAULT 0,
  -- The one home of "counts against the risk caps": UNKNOWN, or a submit started and not ended.
  exposed                BOOLEAN NOT NULL GENERATED ALWAYS AS (
    state = 'UNKNOWN' OR (state = 'PROCESSING' AND last_submit_started_at IS NOT NULL
      AND (last_submit_ended_at IS NULL OR last_submit_started_at > last_submit_ended_at))) STORED,
  -- One business intent per scope: the intake transaction relies on this constraint, never on
  -- "select, then insert". Named, so that a unique_violation says which key it was.
  CONSTRAINT payments_business_key UNIQUE (tenant_id, operation_type, operation_id),
  -- The vendor-facing key is unique per provider (and indexes the lookups by it: settlement
  -- import, callbacks).
  CONSTRAINT payments_client_key UNIQUE (provider, client_key)
);

-- Tenant listing, newest first (ULID ids sort by creation time).
CREATE INDEX payments_by_tenant ON payments (tenant_id, id);
CREATE INDEX payments_by_tenant_state ON payments (tenant_id, state, id);
-- Due work per provider, oldest due first: a claim reads the head of each provider whose calls
-- it may make. A claimed payment's next_attempt_at is its lease expiry, so leased payments are
-- not due until their lease lapses.
CREATE INDEX payments_due ON payments (provider, next_attempt_at, id)
  WHERE state IN ('PROCESSING','UNKNOWN') AND next_action <> 'none';
-- The recount of the exposure reads non-terminal payments only, never the finished ones.
CREATE INDEX payments_open ON payments (provider, currency) WHERE state IN ('PROCESSING','UNKNOWN');

-- Refuses the change a trigger fired on; TG_ARGV[0] says why. The SQLSTATE is
-- integrity_constraint_violation, as SQLite's RAISE(ABORT) in a trigger is a constraint error.
CREATE FUNCTION payorch_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'integrity_constraint_violation';
END
$$;

-- The intent's parameters and identities are immutable once committed.
CREATE TRIGGER payments_immutable BEFORE UPDATE ON payments FOR EACH ROW
WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id
  OR OLD.operation_type IS DISTINCT FROM NEW.operation_type
  OR OLD.operation_id IS DISTINCT FROM NEW.operation_id OR OLD.provider IS DISTINCT FROM NEW.provider
  OR OLD.client_key IS DISTINCT FROM NEW.client_key
  OR OLD.request_digest IS DISTINCT FROM NEW.request_digest
  OR OLD.amount_minor IS DISTINCT FROM NEW.amount_minor OR OLD.currency IS DISTINCT FROM NEW.currency
  OR OLD.payee IS DISTINCT FROM NEW.payee OR OLD.source IS DISTINCT FROM NEW.source
  OR OLD.description IS DISTINCT FROM NEW.description
  OR OLD.metadata IS DISTINCT FROM NEW.metadata OR OLD.created_at IS DISTINCT FROM NEW.created_at)
EXECUTE FUNCTION payorch_refuse('payments: immutable column changed');

-- Rows are never deleted; TRUNCATE skips row triggers, so it is refused on its own.
CREATE TRIGGER payments_no_delete BEFORE DELETE ON payments FOR EACH ROW
EXECUTE FUNCTION payorch_refuse('payments: rows are never deleted');
CREATE TRIGGER payments_no_truncate BEFORE TRUNCATE ON payments FOR EACH STATEMENT
EXECUTE FUNCTION payorch_refuse('payments: rows are never deleted');

-- Same key, different request: the refused attempt, kept for audit.
CREATE TABLE idempotency_conflicts (
  id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id        TEXT COLLATE "C" NOT NULL,
  operation_type   TEXT COLLATE "C" NOT NULL,
  operation_id     TEXT COLLATE "C" NOT NULL,
  payment_id       TEXT COLLATE "C" NOT NULL REFERENCES payments (id),
  stored_digest    TEXT NOT NULL,
  attempted_digest TEXT NOT NULL,
  attempted_body   TEXT NOT NULL,                  -- the canonical digest fields of the attempt
  created_at       BIGINT NOT NULL
);

-- One row per state change (and per escalation), written in the transaction that made it.
CREATE TABLE outbox (
  seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- feed order (the cursor)
  event_id        TEXT COLLATE "C" NOT NULL UNIQUE,                 -- evt_<ULID>
  tenant_id       TEXT COLLATE "C" NOT NULL,
  payment_id      TEXT COLLATE "C" NOT NULL REFERENCES payments (id),
  type            TEXT NOT NULL,
  payload         TEXT NOT NULL,                                    -- the body sent to tenants
  created_at      BIGINT NOT NULL,
  delivered_at    BIGINT,
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT,
  last_error      TEXT
);
CREATE INDEX outbox_by_tenant ON outbox (tenant_id, seq);
CREATE INDEX outbox_pending ON outbox (next_attempt_at) WHERE delivered_at IS NULL;
CREATE INDEX outbox_by_payment ON outbox (payment_id, seq);
-- The push queue: per tenant with a webhook, its undelivered events by when they are due.
CREATE INDEX outbox_due ON outbox (tenant_id, next_attempt_at) WHERE delivered_at IS NULL;
-- Retention purges delivered events oldest first, in small batches; undelivered events are not
-- in it and are never purged.
CREATE INDEX outbox_delivered ON outbox (delivered_at) WHERE delivered_at IS NOT NULL;

-- Vendor callbacks, deduplicated by the vendor's event id.
CREATE TABLE callback_inbox (
  provider    TEXT COLLATE "C" NOT NULL,
  event_id    TEXT COLLATE "C" NOT NULL,
  received_at BIGINT NOT NULL,
  payment_id  TEXT COLLATE "C",
  payload     TEXT NOT NULL,
  result      TEXT NOT NULL,
  PRIMARY KEY (provider, event_id)
);
-- Retention purges the oldest inbox rows first.
CREATE INDEX callback_inbox_by_received ON callback_inbox (received_at);

-- A verified callback naming a client_key that no payment of its provider has is held in a
-- callback_mismatch case with no payment (docs/contract.md §6): such a case keeps the vendor's
-- provider and reference itself. A case about a payment takes both from the payment.
CREATE TABLE reconciliation_cases (
  id               TEXT COLLATE "C" PRIMARY KEY,              -- rc_<ULID>
  payment_id       TEXT COLLATE "C" REFERENCES payments (id), -- NULL: no payment matched
  reason           TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('open','resolved')),
  opened_at        BIGINT NOT NULL,
  resolved_at      BIGINT,
  outcome          TEXT,
  vendor_reference TEXT,
  note             TEXT,
  resolved_by      TEXT,
  evidence         TEXT NOT NULL DEFAULT '[]',                -- JSON array
  provider         TEXT COLLATE "C",                          -- set when payment_id is NULL
  reference        TEXT COLLATE "C",                          -- the client_key the vendor named
  CHECK (payment_id IS NOT NULL OR (provider IS NOT NULL AND reference IS NOT NULL))
);
-- At most one open case per payment.
CREATE UNIQUE INDEX reconciliation_one_open ON reconciliation_cases (payment_id)
  WHERE status = 'open';
-- And at most one open case per unknown reference: later callbacks naming it add evidence.
CREATE UNIQUE INDEX reconciliation_one_open_orphan ON reconciliation_cases (provider, reference)
  WHERE status = 'open' AND payment_id IS NULL;
CREATE INDEX reconciliation_by_status ON reconciliation_cases (status, opened_at);

-- Figures kept as the rows change, so that the engine's cost follows due work and not the pile
-- of pending or finished payments: risk exposure per provider and currency (docs/contract.md
-- §5, invariant 8) and payments per state (/status, /metrics). Triggers keep them in the
-- transaction of the change that moves them, so a rolled-back change rolls its figures back;
-- `payorchd check-exposure` recounts them from the rows.
CREATE TABLE exposure (
  provider     TEXT COLLATE "C" NOT NULL,
  currency     TEXT COLLATE "C" NOT NULL,
  count        BIGINT NOT NULL CHECK (count >= 0),
  amount_minor BIGINT NOT NULL CHECK (amount_minor >= 0),
  PRIMARY KEY (provider, currency)
);

CREATE TABLE payment_counts (
  state TEXT COLLATE "C" PRIMARY KEY
    CHECK (state IN ('PROCESSING','UNKNOWN','SUCCEEDED','FAILED_FINAL')),
  count BIGINT NOT NULL CHECK (count >= 0)
);
INSERT INTO payment_counts (state, count)
  VALUES ('PROCESSING', 0), ('UNKNOWN', 0), ('SUCCEEDED', 0), ('FAILED_FINAL', 0);

-- provider, currency and amount_minor are immutable (payments_immutable), so OLD and NEW agree
-- on them: only entering or leaving the exposed set moves the exposure.
CREATE FUNCTION payments_exposure_enter() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO exposure (provider, currency, count, amount_minor)
    VALUES (NEW.provider, NEW.currency, 1, NEW.amount_minor)
    ON CONFLICT (provider, currency) DO UPDATE
    SET count = exposure.count + 1, amount_minor = exposure.amount_minor + excluded.amount_minor;
  RETURN NULL;
END
$$;

CREATE FUNCTION payments_exposure_leave() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE exposure SET count = count - 1, amount_minor = amount_minor - OLD.amount_minor
    WHERE provider = OLD.provider AND currency = OLD.currency;
  RETURN NULL;
END
$$;

CREATE FUNCTION payments_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE payment_counts SET count = count + 1 WHERE state = NEW.state;
  RETURN NULL;
END
$$;

CREATE FUNCTION payments_counts_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE payment_counts SET count = count - 1 WHERE state = OLD.state;
  UPDATE payment_counts SET count = count + 1 WHERE state = NEW.state;
  RETURN NULL;
END
$$;

CREATE TRIGGER payments_exposure_insert AFTER INSERT ON payments FOR EACH ROW
WHEN (NEW.exposed) EXECUTE FUNCTION payments_exposure_enter();
CREATE TRIGGER payments_exposure_enter
AFTER UPDATE OF state, last_submit_started_at, last_submit_ended_at ON payments FOR EACH ROW
WHEN (NEW.exposed AND NOT OLD.exposed) EXECUTE FUNCTION payments_exposure_enter();
CREATE TRIGGER payments_exposure_leave
AFTER UPDATE OF state, last_submit_started_at, last_submit_ended_at ON payments FOR EACH ROW
WHEN (OLD.exposed AND NOT NEW.exposed) EXECUTE FUNCTION payments_exposure_leave();
CREATE TRIGGER payments_counts_insert AFTER INSERT ON payments FOR EACH ROW
EXECUTE FUNCTION payments_counts_insert();
CREATE TRIGGER payments_counts_move AFTER UPDATE OF state ON payments FOR EACH ROW
WHEN (OLD.state <> NEW.state) EXECUTE FUNCTION payments_counts_move();
