-- payorch schema on PostgreSQL, v2: for several payorchd on one database (docs/postgres.md).
--
-- 1. No hot row. The kept figures (exposure, payment_counts) get a `shard` in their key: each
--    trigger adds its delta to the shard of the backend it runs in (payorch_figure_shard), so
--    transactions on different connections rarely wait for one another's row lock, where before
--    every intake and every transition of every node queued on one row per state. The figures
--    are the sums over the shards (store/postgres/figures.cpp). One shard alone may go below
--    zero (a payment enters the exposure on one connection and leaves it on another), so the
--    per-row CHECKs go; the recount (exposure_differences, payorchd check-exposure) checks the
--    sums.
--
-- 2. A feed that never skips. outbox.seq is taken at insert, and transactions commit in another
--    order, so a reader paging by seq could pass a seq whose writer had not committed yet and
--    never see its event. Each event gets `feed_pos` = (id of its writing transaction) * 2^20 +
--    (its rank among that transaction's events). The feed (store/postgres/outbox.cpp) returns
--    events in feed_pos order and only those whose transaction id is below the reader's
--    snapshot xmin: every transaction still able to commit has an id at or above that xmin, so
--    whatever commits later sorts after everything already returned. A payment's events keep
--    their order in the feed too (outbox_feed_order, below). seq stays the order of a payment's
--    events for pushes.

-- ---- 1. Sharded figures ----

-- The shard of the current backend: one connection's transactions always add to one row per
-- key, and different connections (pids) mostly to different ones.
CREATE FUNCTION payorch_figure_shard() RETURNS SMALLINT LANGUAGE sql VOLATILE AS $$
  SELECT (pg_backend_pid() % 16)::smallint
$$;

-- The figures so far go to shard 0.
ALTER TABLE exposure ADD COLUMN shard SMALLINT NOT NULL DEFAULT 0 CHECK (shard BETWEEN 0 AND 15);
ALTER TABLE exposure ALTER COLUMN shard DROP DEFAULT;
ALTER TABLE exposure DROP CONSTRAINT exposure_pkey,
  DROP CONSTRAINT exposure_count_check, DROP CONSTRAINT exposure_amount_minor_check;
ALTER TABLE exposure ADD CONSTRAINT exposure_pkey PRIMARY KEY (provider, currency, shard);

ALTER TABLE payment_counts ADD COLUMN shard SMALLINT NOT NULL DEFAULT 0 CHECK (shard BETWEEN 0 AND 15);
ALTER TABLE payment_counts ALTER COLUMN shard DROP DEFAULT;
ALTER TABLE payment_counts DROP CONSTRAINT payment_counts_pkey,
  DROP CONSTRAINT payment_counts_count_check;
ALTER TABLE payment_counts ADD CONSTRAINT payment_counts_pkey PRIMARY KEY (state, shard);
-- Every (state, shard) row exists from here on, so the triggers only UPDATE.
INSERT INTO payment_counts (state, shard, count)
  SELECT s.state, g.shard, 0
  FROM (VALUES ('PROCESSING'), ('UNKNOWN'), ('SUCCEEDED'), ('FAILED_FINAL')) AS s (state),
       generate_series(1, 15) AS g (shard);

-- The triggers of 001 stay; their functions now write to the backend's shard.
CREATE OR REPLACE FUNCTION payments_exposure_enter() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO exposure (provider, currency, shard, count, amount_minor)
    VALUES (NEW.provider, NEW.currency, payorch_figure_shard(), 1, NEW.amount_minor)
    ON CONFLICT (provider, currency, shard) DO UPDATE
    SET count = exposure.count + 1, amount_minor = exposure.amount_minor + excluded.amount_minor;
  RETURN NULL;
END
$$;

-- The shard it leaves from may not be the one it entered on: that row may not exist yet.
CREATE OR REPLACE FUNCTION payments_exposure_leave() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO exposure (provider, currency, shard, count, amount_minor)
    VALUES (OLD.provider, OLD.currency, payorch_figure_shard(), -1, -OLD.amount_minor)
    ON CONFLICT (provider, currency, shard) DO UPDATE
    SET count = exposure.count - 1, amount_minor = exposure.amount_minor + excluded.amount_minor;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION payments_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE payment_counts SET count = count + 1
    WHERE state = NEW.state AND shard = payorch_figure_shard();
  RETURN NULL;
END
$$;

-- The two rows in the order of their states, whichever is left and whichever entered: two
-- transactions on one shard then always lock them in the same order (PROCESSING → UNKNOWN beside
-- UNKNOWN → PROCESSING could deadlock otherwise). Intakes take one row, the exposure comes
-- after the counts (triggers fire in name order), so the figures' rows never form a cycle.
CREATE OR REPLACE FUNCTION payments_counts_move() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  here SMALLINT := payorch_figure_shard();
BEGIN
  UPDATE payment_counts SET count = count + CASE WHEN state = NEW.state THEN 1 ELSE -1 END
    WHERE state = LEAST(OLD.state, NEW.state) AND shard = here;
  UPDATE payment_counts SET count = count + CASE WHEN state = NEW.state THEN 1 ELSE -1 END
    WHERE state = GREATEST(OLD.state, NEW.state) AND shard = here;
  RETURN NULL;
END
$$;

-- ---- 2. The feed position ----

-- The next event's feed position in this transaction: its transaction id * 2^20 + how many
-- events the transaction wrote before it (counted in a transaction-local setting, which a
-- rolled-back savepoint rolls back with its rows). Out of range it refuses the event rather
-- than give it a position that sorts wrong: 2^20 events in one transaction, or a transaction
-- id of 2^43 (at 10,000 writing transactions a second, after 27 years).
CREATE FUNCTION payorch_next_feed_pos() RETURNS BIGINT LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  xid BIGINT := pg_current_xact_id()::text::bigint;
  ord BIGINT := COALESCE(NULLIF(current_setting('payorch.feed_ord', true), ''), '0')::bigint;
BEGIN
  IF xid >= 8796093022208 OR ord >= 1048576 THEN
    RAISE EXCEPTION 'outbox: no feed position for event % of transaction %', ord, xid
      USING ERRCODE = 'program_limit_exceeded';
  END IF;
  PERFORM set_config('payorch.feed_ord', (ord + 1)::text, true);
  RETURN xid * 1048576 + ord;
END
$$;

-- The events so far keep their seq as their position, so a cursor handed out before this
-- migration stays where it was. Every transaction that writes an event from now on has an id at
-- or above this snapshot's xmin, so its positions sort after them; refused if they would not.
ALTER TABLE outbox ADD COLUMN feed_pos BIGINT;
UPDATE outbox SET feed_pos = seq;
DO $$
BEGIN
  IF (SELECT MAX(seq) FROM outbox) >= pg_snapshot_xmin(pg_current_snapshot())::text::bigint * 1048576 THEN
    RAISE EXCEPTION 'outbox: seq too high to become a feed position';
  END IF;
END
$$;
ALTER TABLE outbox ALTER COLUMN feed_pos SET NOT NULL,
  ALTER COLUMN feed_pos SET DEFAULT payorch_next_feed_pos();
-- The feed reads a tenant's events by position; seq no longer orders it.
DROP INDEX outbox_by_tenant;
CREATE UNIQUE INDEX outbox_by_tenant ON outbox (tenant_id, feed_pos);

-- A payment's events keep their order in the feed. Its writers hold the payment's row lock, so
-- they write its events one transaction after another; but a transaction takes its id at its
-- first write, which may come before it waited for that lock (a callback writes its inbox row
-- first). Such a transaction would give the payment's next event a position below the one
-- before it. It is refused as a serialization failure instead, and the store runs it again
-- with a new, higher id (store/postgres/transaction.h). One look through outbox_by_payment.
CREATE FUNCTION outbox_feed_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM outbox WHERE payment_id = NEW.payment_id AND feed_pos > NEW.feed_pos) THEN
    RAISE EXCEPTION 'outbox: an event of payment % sorts after this transaction''s in the feed',
      NEW.payment_id USING ERRCODE = 'serialization_failure';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER outbox_feed_order BEFORE INSERT ON outbox FOR EACH ROW
EXECUTE FUNCTION outbox_feed_order();
