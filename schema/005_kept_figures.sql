-- Figures kept as the rows change, so that the engine's cost follows due work and not the pile
-- of pending or finished payments: risk exposure per provider and currency (docs/contract.md §5,
-- invariant 8), payments per state (/status, /metrics), and a due-work index per provider.
--
-- Triggers keep the figures, in the transaction of the change that moves them: every writer
-- (intake, engine, callbacks, operators, settlement import) updates them without knowing, and a
-- rolled-back change rolls its figures back with it. `payorchd check-exposure` recounts them
-- from the rows; the simulation, the storage-fault loops and the chaos runs do the same.

-- The one home of "counts against the risk caps": UNKNOWN, or a submit started and not ended.
ALTER TABLE payments ADD COLUMN exposed INTEGER GENERATED ALWAYS AS (
  state = 'UNKNOWN' OR (state = 'PROCESSING' AND last_submit_started_at IS NOT NULL
    AND (last_submit_ended_at IS NULL OR last_submit_started_at > last_submit_ended_at))) VIRTUAL;

CREATE TABLE exposure (
  provider     TEXT NOT NULL,
  currency     TEXT NOT NULL,
  count        INTEGER NOT NULL CHECK (count >= 0),
  amount_minor INTEGER NOT NULL CHECK (amount_minor >= 0),
  PRIMARY KEY (provider, currency)
) WITHOUT ROWID;
INSERT INTO exposure (provider, currency, count, amount_minor)
  SELECT provider, currency, COUNT(*), SUM(amount_minor) FROM payments WHERE exposed
  GROUP BY provider, currency;

CREATE TABLE payment_counts (
  state TEXT PRIMARY KEY CHECK (state IN ('PROCESSING','UNKNOWN','SUCCEEDED','FAILED_FINAL')),
  count INTEGER NOT NULL CHECK (count >= 0)
) WITHOUT ROWID;
INSERT INTO payment_counts (state, count)
  SELECT s.state, (SELECT COUNT(*) FROM payments p WHERE p.state = s.state)
  FROM (SELECT 'PROCESSING' AS state UNION ALL SELECT 'UNKNOWN' UNION ALL SELECT 'SUCCEEDED'
        UNION ALL SELECT 'FAILED_FINAL') s;

-- provider, currency and amount_minor are immutable (payments_immutable), so OLD and NEW agree
-- on them: only entering or leaving the exposed set moves the figures.
CREATE TRIGGER payments_exposure_insert AFTER INSERT ON payments WHEN NEW.exposed
BEGIN
  INSERT INTO exposure (provider, currency, count, amount_minor)
    VALUES (NEW.provider, NEW.currency, 1, NEW.amount_minor)
    ON CONFLICT (provider, currency) DO UPDATE
    SET count = count + 1, amount_minor = amount_minor + excluded.amount_minor;
END;

CREATE TRIGGER payments_exposure_enter
AFTER UPDATE OF state, last_submit_started_at, last_submit_ended_at ON payments
WHEN NEW.exposed AND NOT OLD.exposed
BEGIN
  INSERT INTO exposure (provider, currency, count, amount_minor)
    VALUES (NEW.provider, NEW.currency, 1, NEW.amount_minor)
    ON CONFLICT (provider, currency) DO UPDATE
    SET count = count + 1, amount_minor = amount_minor + excluded.amount_minor;
END;

CREATE TRIGGER payments_exposure_leave
AFTER UPDATE OF state, last_submit_started_at, last_submit_ended_at ON payments
WHEN OLD.exposed AND NOT NEW.exposed
BEGIN
  UPDATE exposure SET count = count - 1, amount_minor = amount_minor - OLD.amount_minor
    WHERE provider = OLD.provider AND currency = OLD.currency;
END;

CREATE TRIGGER payments_counts_insert AFTER INSERT ON payments
BEGIN
  UPDATE payment_counts SET count = count + 1 WHERE state = NEW.state;
END;

CREATE TRIGGER payments_counts_move AFTER UPDATE OF state ON payments WHEN OLD.state <> NEW.state
BEGIN
  UPDATE payment_counts SET count = count - 1 WHERE state = OLD.state;
  UPDATE payment_counts SET count = count + 1 WHERE state = NEW.state;
END;

-- Due work per provider, oldest due first: a claim reads the head of each provider whose calls
-- it may make, so a provider whose breaker is open costs nothing however many payments it has
-- waiting. A claimed payment's next_attempt_at is its lease expiry, so leased payments are not
-- due until their lease lapses and a claim never walks over them.
DROP INDEX payments_due;
CREATE INDEX payments_due ON payments (provider, next_attempt_at, id)
  WHERE state IN ('PROCESSING','UNKNOWN') AND next_action <> 'none';

-- The recount of the exposure reads non-terminal payments only, never the finished ones.
DROP INDEX payments_exposure;
CREATE INDEX payments_open ON payments (provider, currency) WHERE state IN ('PROCESSING','UNKNOWN');
