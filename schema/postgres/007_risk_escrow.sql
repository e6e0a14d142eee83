-- payorch schema on PostgreSQL, v7: risk caps exact across every node without a claim lock
-- (docs/postgres.md, "Risk caps across nodes").
--
-- Each cap is split into 16 shares (escrow). A key is a provider's count cap (currency '') or
-- its amount cap in one currency. Each of the key's shard rows holds a share of the cap and
-- what is counted against that share; a submit that enters the exposure takes its units (1, or
-- its amount) from one shard with room, by a conditional UPDATE on a row no other transaction
-- holds (SKIP LOCKED), and its payment records the shard, so that leaving the exposure gives
-- them back there. Room moves between shards only between rows the mover holds; a changed cap
-- is written under every shard row's lock. So, always:
--
--   (1) used <= share in every shard row (the CHECK below),
--   (2) sum(share) = cap + debt over a key's rows (risk_caps.debt),
--   (3) debt > 0 only while every shard of the key has used = share (no room anywhere),
--
-- hence whenever a submit can be counted (debt = 0) the key's total is at most its cap. A debt
-- comes from a cap lowered below what is exposed, or from the one payment larger than the
-- amount cap that may go while nothing of its currency is exposed (core/risk.h); what leaves
-- the exposure pays it back before any room appears again.

-- A key's cap, as the last node to write it has it configured (NULL: none yet), and its debt.
CREATE TABLE risk_caps (
  provider TEXT COLLATE "C" NOT NULL,
  currency TEXT COLLATE "C" NOT NULL,  -- '': the provider's count cap, over every currency
  cap      BIGINT CHECK (cap >= 0),
  debt     BIGINT NOT NULL DEFAULT 0 CHECK (debt >= 0),
  PRIMARY KEY (provider, currency)
);

CREATE TABLE risk_escrow (
  provider TEXT COLLATE "C" NOT NULL,
  currency TEXT COLLATE "C" NOT NULL,
  shard    SMALLINT NOT NULL CHECK (shard BETWEEN 0 AND 15),
  share    BIGINT NOT NULL,
  used     BIGINT NOT NULL,
  CONSTRAINT risk_escrow_within_share CHECK (used >= 0 AND used <= share),
  PRIMARY KEY (provider, currency, shard)
);

-- Where an exposed payment is counted: the shard of its provider's count key and of its
-- currency's amount key. NULL while it is not counted (not exposed, or exposed by a node with
-- no cap for its provider).
ALTER TABLE payments ADD COLUMN risk_count_shard SMALLINT CHECK (risk_count_shard BETWEEN 0 AND 15),
  ADD COLUMN risk_amount_shard SMALLINT CHECK (risk_amount_shard BETWEEN 0 AND 15),
  ADD CONSTRAINT payments_risk_shards CHECK ((risk_count_shard IS NULL) = (risk_amount_shard IS NULL));

-- Writes `new_cap` as the key's cap, under the lock of every shard row of the key (in shard
-- order, then risk_caps): the first use of a key, or a node whose cap differs. What is used
-- stays where it is; the room left under the new cap is spread over the shards; what is used
-- beyond it becomes the debt.
CREATE FUNCTION payorch_risk_resize(p_provider TEXT, p_currency TEXT, new_cap BIGINT)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  stored BIGINT;
  total BIGINT;
  spare BIGINT;
BEGIN
  INSERT INTO risk_escrow (provider, currency, shard, share, used)
    SELECT p_provider, p_currency, g, 0, 0 FROM generate_series(0, 15) AS g
    ON CONFLICT DO NOTHING;
  INSERT INTO risk_caps (provider, currency, cap, debt) VALUES (p_provider, p_currency, NULL, 0)
    ON CONFLICT DO NOTHING;
  PERFORM 1 FROM risk_escrow WHERE provider = p_provider AND currency = p_currency
    ORDER BY shard FOR UPDATE;
  SELECT cap INTO stored FROM risk_caps WHERE provider = p_provider AND currency = p_currency
    FOR UPDATE;
  IF stored IS NOT DISTINCT FROM new_cap THEN
    RETURN;  -- another node wrote it meanwhile
  END IF;
  SELECT SUM(used) INTO total FROM risk_escrow
    WHERE provider = p_provider AND currency = p_currency;
  spare := GREATEST(new_cap - total, 0);
  UPDATE risk_escrow SET share = used + spare / 16 + CASE WHEN shard < spare % 16 THEN 1 ELSE 0 END
    WHERE provider = p_provider AND currency = p_currency;
  UPDATE risk_caps SET cap = new_cap, debt = GREATEST(total - new_cap, 0)
    WHERE provider = p_provider AND currency = p_currency;
END
$$;

-- Counts `units` against the key within `cap`: returns the shard they were taken from, or NULL
-- when they would take the key over its cap. Never waits for another transaction's shard row,
-- except to write a changed cap. `lone_ok`: the amount rule of core/risk.h, a payment larger
-- than the cap may go while nothing of the key is used.
CREATE FUNCTION payorch_risk_take(p_provider TEXT, p_currency TEXT, units BIGINT, p_cap BIGINT,
                                  lone_ok BOOLEAN)
RETURNS SMALLINT LANGUAGE plpgsql AS $$
DECLARE
  own SMALLINT := payorch_figure_shard();
  got SMALLINT;
  r RECORD;
  held SMALLINT[] := '{}';
  target SMALLINT;
  target_room BIGINT := -1;
  spare BIGINT := 0;
  total_used BIGINT := 0;
  total_share BIGINT := 0;
  need BIGINT;
  moved BIGINT;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM risk_caps WHERE provider = p_provider AND currency = p_currency
                   AND cap IS NOT DISTINCT FROM p_cap) THEN
    PERFORM payorch_risk_resize(p_provider, p_currency, p_cap);
  END IF;
  -- A shard with room that no other transaction holds, this backend's own first, then the next
  -- ones round: different connections start on different shards.
  UPDATE risk_escrow SET used = used + units
    WHERE provider = p_provider AND currency = p_currency AND share - used >= units
      AND shard = (SELECT shard FROM risk_escrow
                   WHERE provider = p_provider AND currency = p_currency AND share - used >= units
                   ORDER BY (shard - own + 16) % 16 LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING shard INTO got;
  IF got IS NOT NULL THEN
    RETURN got;
  END IF;
  -- No single free shard has room: gather the room of every shard row nobody else holds into
  -- one of them. Moving share between rows this transaction holds keeps their sum.
  FOR r IN SELECT shard, share, used FROM risk_escrow
           WHERE provider = p_provider AND currency = p_currency
           ORDER BY (shard - own + 16) % 16 FOR UPDATE SKIP LOCKED LOOP
    held := held || r.shard;
    spare := spare + (r.share - r.used);
    total_used := total_used + r.used;
    total_share := total_share + r.share;
    IF r.share - r.used > target_room THEN
      target := r.shard;
      target_room := r.share - r.used;
    END IF;
  END LOOP;
  IF target IS NULL THEN
    RETURN NULL;
  END IF;
  IF spare >= units THEN
    need := units - target_room;
    FOR r IN SELECT shard, share - used AS room FROM risk_escrow
             WHERE provider = p_provider AND currency = p_currency AND shard = ANY (held)
               AND shard <> target AND share > used ORDER BY shard LOOP
      EXIT WHEN need <= 0;
      moved := LEAST(r.room, need);
      UPDATE risk_escrow SET share = share - moved
        WHERE provider = p_provider AND currency = p_currency AND shard = r.shard;
      UPDATE risk_escrow SET share = share + moved
        WHERE provider = p_provider AND currency = p_currency AND shard = target;
      need := need - moved;
    END LOOP;
    UPDATE risk_escrow SET used = used + units
      WHERE provider = p_provider AND currency = p_currency AND shard = target;
    RETURN target;
  END IF;
  -- The lone payment over the amount cap: every shard held, nothing used, a cap above 0. All
  -- the share goes to the target, which takes the payment whole; the excess is the debt.
  IF lone_ok AND cardinality(held) = 16 AND total_used = 0 AND p_cap > 0 THEN
    UPDATE risk_escrow SET share = 0
      WHERE provider = p_provider AND currency = p_currency AND shard <> target;
    UPDATE risk_escrow SET share = units, used = units
      WHERE provider = p_provider AND currency = p_currency AND shard = target;
    UPDATE risk_caps SET debt = debt + units - total_share
      WHERE provider = p_provider AND currency = p_currency;
    RETURN target;
  END IF;
  RETURN NULL;
END
$$;

-- A submit of `amount` counted against its provider's count cap and its currency's amount cap:
-- the shards it was counted in {count, amount}, or NULL (and nothing counted) when either cap
-- holds it back.
CREATE FUNCTION payorch_risk_take_submit(p_provider TEXT, p_currency TEXT, amount BIGINT,
                                         max_count BIGINT, max_amount BIGINT)
RETURNS SMALLINT[] LANGUAGE plpgsql AS $$
DECLARE
  count_shard SMALLINT;
  amount_shard SMALLINT;
BEGIN
  count_shard := payorch_risk_take(p_provider, '', 1, max_count, false);
  IF count_shard IS NULL THEN
    RETURN NULL;
  END IF;
  amount_shard := payorch_risk_take(p_provider, p_currency, amount, max_amount, true);
  IF amount_shard IS NULL THEN
    -- Taken from a row this transaction holds, and no debt while it had room: back as it was.
    UPDATE risk_escrow SET used = used - 1
      WHERE provider = p_provider AND currency = '' AND shard = count_shard;
    RETURN NULL;
  END IF;
  RETURN ARRAY[count_shard, amount_shard];
END
$$;

-- Gives `units` back to the shard they were taken from; a debt of the key is paid from them
-- first (the shard's share shrinks by what is paid), so no room appears while it lasts.
CREATE FUNCTION payorch_risk_give(p_provider TEXT, p_currency TEXT, p_shard SMALLINT, units BIGINT)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  owed BIGINT;
  paid BIGINT;
BEGIN
  UPDATE risk_escrow SET used = used - units
    WHERE provider = p_provider AND currency = p_currency AND shard = p_shard;
  SELECT debt INTO owed FROM risk_caps
    WHERE provider = p_provider AND currency = p_currency AND debt > 0 FOR UPDATE;
  IF owed IS NOT NULL THEN
    paid := LEAST(owed, units);
    UPDATE risk_caps SET debt = debt - paid WHERE provider = p_provider AND currency = p_currency;
    UPDATE risk_escrow SET share = share - paid
      WHERE provider = p_provider AND currency = p_currency AND shard = p_shard;
  END IF;
END
$$;

-- A counted payment leaving the exposure gives its units back and is counted nowhere. BEFORE,
-- so that it can clear its shards in the same row write; the other BEFORE UPDATE triggers on
-- payments only refuse. The condition is payments.exposed's (a generated column has no value
-- yet in a BEFORE trigger).
CREATE FUNCTION payments_risk_leave() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.state = 'UNKNOWN' OR (NEW.state = 'PROCESSING' AND NEW.last_submit_started_at IS NOT NULL
      AND (NEW.last_submit_ended_at IS NULL OR NEW.last_submit_started_at > NEW.last_submit_ended_at)) THEN
    RETURN NEW;
  END IF;
  PERFORM payorch_risk_give(OLD.provider, '', OLD.risk_count_shard, 1);
  PERFORM payorch_risk_give(OLD.provider, OLD.currency, OLD.risk_amount_shard, OLD.amount_minor);
  NEW.risk_count_shard := NULL;
  NEW.risk_amount_shard := NULL;
  RETURN NEW;
END
$$;
CREATE TRIGGER payments_risk_leave
BEFORE UPDATE OF state, last_submit_started_at, last_submit_ended_at ON payments FOR EACH ROW
WHEN (OLD.risk_count_shard IS NOT NULL) EXECUTE FUNCTION payments_risk_leave();

-- What is exposed now is counted in shard 0 of its keys, each key's share = what it uses (no
-- room) and no cap yet: the first node to count a submit of the key writes its cap, and the
-- room under it (payorch_risk_resize).
UPDATE payments SET risk_count_shard = 0, risk_amount_shard = 0 WHERE exposed;
INSERT INTO risk_escrow (provider, currency, shard, share, used)
  SELECT k.provider, k.currency, g, CASE WHEN g = 0 THEN k.used ELSE 0 END,
         CASE WHEN g = 0 THEN k.used ELSE 0 END
  FROM (SELECT provider, '' AS currency, COUNT(*) AS used FROM payments WHERE exposed
          GROUP BY provider
        UNION ALL
        SELECT provider, currency, SUM(amount_minor) FROM payments WHERE exposed
          GROUP BY provider, currency) AS k,
       generate_series(0, 15) AS g;
INSERT INTO risk_caps (provider, currency, cap, debt)
  SELECT DISTINCT provider, currency, NULL::bigint, 0 FROM risk_escrow;
