-- payorch schema on PostgreSQL, v7: risk caps exact across every node, without a lock that the
-- claim rounds share (docs/postgres.md, "Risk caps across nodes").
--
-- A key is a provider's count cap (currency '') or its amount cap in one currency. What is left
-- under a key's cap is kept as room in 16 rows (risk_room), none of them below zero. A capped
-- submit takes its units (1 for the count, its amount for the amount) out of rows that no other
-- transaction holds, in the statement that marks it started; leaving the exposure puts them back
-- into any such row. A cap lowered below what is exposed, or the one payment larger than the
-- amount cap that may go while nothing of its currency is exposed (core/risk.h), leaves a debt
-- (risk_caps.debt) that what leaves pays before any room appears. So, for every key, always:
--
--   (1) room >= 0 in every row, debt >= 0 (the CHECKs below),
--   (2) sum(room) - debt = cap - exposed, where exposed counts the payments taken in,
--   (3) debt > 0 only while every room row of the key is 0.
--
-- A take needs a row with room, so by (3) debt = 0, and by (2) exposed = cap - sum(room) <= cap
-- after it. (3) holds because room only appears where there is no debt: a debt is created with
-- every row of the key held (resize, the lone payment), and a give reads the debt only once it
-- holds the row it gives to.
--
-- "Holds a row": a transaction-scoped advisory lock per row (payorch_risk_hold), not a row lock.
-- The jobs of a batch run in savepoints of one transaction, and a row lock taken in one savepoint
-- on a row an earlier savepoint wrote makes PostgreSQL keep both in a MultiXact, for every take:
-- a hot spot of its own. The rows themselves are written by plain UPDATEs, never waiting, since
-- whoever writes a row holds it first.

CREATE TABLE risk_caps (
  provider TEXT COLLATE "C" NOT NULL,
  currency TEXT COLLATE "C" NOT NULL,  -- '': the provider's count cap, over every currency
  cap      BIGINT NOT NULL CHECK (cap >= 0),
  debt     BIGINT NOT NULL DEFAULT 0 CHECK (debt >= 0),
  PRIMARY KEY (provider, currency)
);

CREATE TABLE risk_room (
  provider TEXT COLLATE "C" NOT NULL,
  currency TEXT COLLATE "C" NOT NULL,
  shard    SMALLINT NOT NULL CHECK (shard BETWEEN 0 AND 15),
  room     BIGINT NOT NULL CHECK (room >= 0),
  PRIMARY KEY (provider, currency, shard)
);

-- Whether the payment's exposure was taken from its keys (and goes back when it leaves).
ALTER TABLE payments ADD COLUMN risk_taken BOOLEAN NOT NULL DEFAULT false;

-- Holds row `p_shard` of the key until the transaction ends: at once if free (or already held
-- by this transaction), false if another transaction holds it; `wait`: waits for it instead.
-- In pg_locks: locktype 'advisory', classid 1885436275 + shard ("pays" + shard), objid the
-- key's hashtext, objsubid 2. Nothing else uses these classes.
CREATE FUNCTION payorch_risk_hold(p_provider TEXT, p_currency TEXT, p_shard INTEGER, wait BOOLEAN)
RETURNS BOOLEAN LANGUAGE plpgsql AS $$
BEGIN
  IF wait THEN
    PERFORM pg_advisory_xact_lock(1885436275 + p_shard, hashtext(p_provider || '/' || p_currency));
    RETURN true;
  END IF;
  RETURN pg_try_advisory_xact_lock(1885436275 + p_shard, hashtext(p_provider || '/' || p_currency));
END
$$;

-- Writes `new_cap` as the key's cap (creating the key on its first use), with every row of the
-- key held (in shard order, so two resizes cannot deadlock). What is exposed stays exposed: the
-- room under the new cap is spread over the rows, or, if there is none, what is exposed beyond
-- it is the debt.
CREATE FUNCTION payorch_risk_resize(p_provider TEXT, p_currency TEXT, new_cap BIGINT)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  stored risk_caps%ROWTYPE;
  free BIGINT;
BEGIN
  FOR g IN 0..15 LOOP
    PERFORM payorch_risk_hold(p_provider, p_currency, g, true);
  END LOOP;
  INSERT INTO risk_caps (provider, currency, cap, debt) VALUES (p_provider, p_currency, 0, 0)
    ON CONFLICT DO NOTHING;
  INSERT INTO risk_room (provider, currency, shard, room)
    SELECT p_provider, p_currency, g, 0 FROM generate_series(0, 15) AS g
    ON CONFLICT DO NOTHING;
  SELECT * INTO stored FROM risk_caps WHERE provider = p_provider AND currency = p_currency;
  IF stored.cap = new_cap THEN
    RETURN;  -- written meanwhile
  END IF;
  SELECT SUM(room) - stored.debt + (new_cap - stored.cap) INTO free FROM risk_room
    WHERE provider = p_provider AND currency = p_currency;
  UPDATE risk_room SET room = CASE WHEN free <= 0 THEN 0
                                   ELSE free / 16 + CASE WHEN shard < free % 16 THEN 1 ELSE 0 END END
    WHERE provider = p_provider AND currency = p_currency;
  UPDATE risk_caps SET cap = new_cap, debt = GREATEST(-free, 0)
    WHERE provider = p_provider AND currency = p_currency;
END
$$;

-- Takes `units` out of the key's room, under `p_cap` (written first if the key has another):
-- true if taken, false (nothing taken) when they would take the key over its cap. Waits for no
-- other transaction, except to write a changed cap. `lone_ok`: the amount rule of core/risk.h,
-- a payment larger than the cap may go while nothing of the key is exposed.
CREATE FUNCTION payorch_risk_take(p_provider TEXT, p_currency TEXT, units BIGINT, p_cap BIGINT,
                                  lone_ok BOOLEAN)
RETURNS BOOLEAN LANGUAGE plpgsql AS $$
DECLARE
  own SMALLINT := payorch_figure_shard();
  stored risk_caps%ROWTYPE;
  r RECORD;
  held SMALLINT[] := '{}';
  total BIGINT := 0;
  here BIGINT;
BEGIN
  SELECT * INTO stored FROM risk_caps WHERE provider = p_provider AND currency = p_currency;
  IF NOT FOUND OR stored.cap <> p_cap THEN
    PERFORM payorch_risk_resize(p_provider, p_currency, p_cap);
    SELECT * INTO stored FROM risk_caps WHERE provider = p_provider AND currency = p_currency;
  END IF;
  -- This backend's own row, if nobody else holds it and it has room enough.
  IF payorch_risk_hold(p_provider, p_currency, own, false) THEN
    UPDATE risk_room SET room = room - units
      WHERE provider = p_provider AND currency = p_currency AND shard = own AND room >= units;
    IF FOUND THEN
      RETURN true;
    END IF;
  END IF;
  -- Else rows nobody else holds, the roomiest first (as last committed), each read again once
  -- held, until their room adds up; the rest of it is gathered into the first, so the room does
  -- not stay in crumbs. Moving room between rows this transaction holds keeps their sum.
  FOR r IN SELECT shard FROM risk_room WHERE provider = p_provider AND currency = p_currency
           ORDER BY room DESC, shard LOOP
    CONTINUE WHEN NOT payorch_risk_hold(p_provider, p_currency, r.shard, false);
    SELECT room INTO here FROM risk_room
      WHERE provider = p_provider AND currency = p_currency AND shard = r.shard;
    held := held || r.shard;
    total := total + here;
    IF total >= units THEN
      UPDATE risk_room SET room = CASE WHEN shard = held[1] THEN total - units ELSE 0 END
        WHERE provider = p_provider AND currency = p_currency AND shard = ANY (held);
      RETURN true;
    END IF;
  END LOOP;
  -- The lone payment over the amount cap: every row held, nothing exposed (all the cap is room,
  -- no debt), a cap above 0. All the room goes, and what the payment is beyond it is the debt.
  -- (The key is read again: nothing changes it while every row is held.)
  SELECT * INTO stored FROM risk_caps WHERE provider = p_provider AND currency = p_currency;
  IF lone_ok AND cardinality(held) = 16 AND stored.debt = 0 AND total = stored.cap
     AND stored.cap > 0 THEN
    UPDATE risk_room SET room = 0 WHERE provider = p_provider AND currency = p_currency;
    UPDATE risk_caps SET debt = units - total
      WHERE provider = p_provider AND currency = p_currency;
    RETURN true;
  END IF;
  RETURN false;
END
$$;

-- A submit of `amount` taken against its provider's count cap and its currency's amount cap:
-- true if both had room (both taken), false if either holds it back (nothing taken).
CREATE FUNCTION payorch_risk_take_submit(p_provider TEXT, p_currency TEXT, amount BIGINT,
                                         max_count BIGINT, max_amount BIGINT)
RETURNS BOOLEAN LANGUAGE plpgsql AS $$
BEGIN
  IF NOT payorch_risk_take(p_provider, '', 1, max_count, false) THEN
    RETURN false;
  END IF;
  IF payorch_risk_take(p_provider, p_currency, amount, max_amount, true) THEN
    RETURN true;
  END IF;
  -- Back where there is no debt (the count had room), into a row this transaction holds.
  PERFORM payorch_risk_give(p_provider, '', 1);
  RETURN false;
END
$$;

-- Gives `units` back to the key, into a row nobody else holds (this backend's own first; it
-- waits for its own only if other transactions hold all 16): to the debt first, read once the
-- row is held, then as room in that row.
CREATE FUNCTION payorch_risk_give(p_provider TEXT, p_currency TEXT, units BIGINT)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  own SMALLINT := payorch_figure_shard();
  target SMALLINT;
  owed BIGINT;
  paid BIGINT;
BEGIN
  FOR i IN 0..15 LOOP
    IF payorch_risk_hold(p_provider, p_currency, (own + i) % 16, false) THEN
      target := (own + i) % 16;
      EXIT;
    END IF;
  END LOOP;
  IF target IS NULL THEN
    PERFORM payorch_risk_hold(p_provider, p_currency, own, true);
    target := own;
  END IF;
  SELECT debt INTO owed FROM risk_caps WHERE provider = p_provider AND currency = p_currency;
  IF owed > 0 THEN
    SELECT debt INTO owed FROM risk_caps WHERE provider = p_provider AND currency = p_currency
      FOR UPDATE;
    paid := LEAST(owed, units);
    UPDATE risk_caps SET debt = debt - paid
      WHERE provider = p_provider AND currency = p_currency;
    units := units - paid;
  END IF;
  IF units > 0 THEN
    UPDATE risk_room SET room = room + units
      WHERE provider = p_provider AND currency = p_currency AND shard = target;
  END IF;
END
$$;

-- A taken payment leaving the exposure gives its units back. BEFORE, so that it clears
-- risk_taken in the same row write; the other BEFORE UPDATE triggers on payments only refuse.
-- The condition is payments.exposed's (a generated column has no value yet in a BEFORE trigger).
CREATE FUNCTION payments_risk_leave() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.state = 'UNKNOWN' OR (NEW.state = 'PROCESSING' AND NEW.last_submit_started_at IS NOT NULL
      AND (NEW.last_submit_ended_at IS NULL OR NEW.last_submit_started_at > NEW.last_submit_ended_at)) THEN
    RETURN NEW;
  END IF;
  PERFORM payorch_risk_give(OLD.provider, '', 1);
  PERFORM payorch_risk_give(OLD.provider, OLD.currency, OLD.amount_minor);
  NEW.risk_taken := false;
  RETURN NEW;
END
$$;
CREATE TRIGGER payments_risk_leave
BEFORE UPDATE OF state, last_submit_started_at, last_submit_ended_at ON payments FOR EACH ROW
WHEN (OLD.risk_taken) EXECUTE FUNCTION payments_risk_leave();

-- The kept exposure's triggers (002) update the backend's shard row with a plain UPDATE, and
-- insert it only the first time: an INSERT … ON CONFLICT DO UPDATE locks the row before it
-- writes it, which in a batch's later savepoint makes the same MultiXact as above.
CREATE OR REPLACE FUNCTION payments_exposure_enter() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE exposure SET count = count + 1, amount_minor = amount_minor + NEW.amount_minor
    WHERE provider = NEW.provider AND currency = NEW.currency AND shard = payorch_figure_shard();
  IF NOT FOUND THEN
    INSERT INTO exposure (provider, currency, shard, count, amount_minor)
      VALUES (NEW.provider, NEW.currency, payorch_figure_shard(), 1, NEW.amount_minor)
      ON CONFLICT (provider, currency, shard) DO UPDATE
      SET count = exposure.count + 1, amount_minor = exposure.amount_minor + excluded.amount_minor;
  END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION payments_exposure_leave() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE exposure SET count = count - 1, amount_minor = amount_minor - OLD.amount_minor
    WHERE provider = OLD.provider AND currency = OLD.currency AND shard = payorch_figure_shard();
  IF NOT FOUND THEN
    INSERT INTO exposure (provider, currency, shard, count, amount_minor)
      VALUES (OLD.provider, OLD.currency, payorch_figure_shard(), -1, -OLD.amount_minor)
      ON CONFLICT (provider, currency, shard) DO UPDATE
      SET count = exposure.count - 1, amount_minor = exposure.amount_minor + excluded.amount_minor;
  END IF;
  RETURN NULL;
END
$$;

-- What is exposed now counts as taken, under a cap of 0 until the first node to take from the
-- key writes its own (payorch_risk_resize): each key starts with no room and its exposure as the
-- debt, which that cap then eats into, and what leaves pays back.
UPDATE payments SET risk_taken = true WHERE exposed;
INSERT INTO risk_caps (provider, currency, cap, debt)
  SELECT provider, '', 0, COUNT(*) FROM payments WHERE exposed GROUP BY provider
  UNION ALL
  SELECT provider, currency, 0, SUM(amount_minor) FROM payments WHERE exposed
    GROUP BY provider, currency;
INSERT INTO risk_room (provider, currency, shard, room)
  SELECT k.provider, k.currency, g, 0 FROM risk_caps AS k, generate_series(0, 15) AS g;
