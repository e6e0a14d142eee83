-- The kept figures' triggers read the transaction's figure shard once, into a variable, and
-- update their row by its whole key. payorch_figure_shard() is VOLATILE, so written in a WHERE
-- clause it was no index key: the UPDATE scanned every shard row of the state (or of the
-- provider and currency) and called it once per row, 29 calls per payment in all
-- (bench/pg-writes prints the calls; docs/performance.md, "What the triggers run"). It returns
-- the same shard every time within a transaction, so the rows written are the same.

CREATE OR REPLACE FUNCTION payments_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  here SMALLINT := payorch_figure_shard();
BEGIN
  UPDATE payment_counts SET count = count + 1 WHERE state = NEW.state AND shard = here;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION payments_exposure_enter() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  here SMALLINT := payorch_figure_shard();
BEGIN
  UPDATE exposure SET count = count + 1, amount_minor = amount_minor + NEW.amount_minor
    WHERE provider = NEW.provider AND currency = NEW.currency AND shard = here;
  IF NOT FOUND THEN
    INSERT INTO exposure (provider, currency, shard, count, amount_minor)
      VALUES (NEW.provider, NEW.currency, here, 1, NEW.amount_minor)
      ON CONFLICT (provider, currency, shard) DO UPDATE
      SET count = exposure.count + 1, amount_minor = exposure.amount_minor + excluded.amount_minor;
  END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION payments_exposure_leave() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  here SMALLINT := payorch_figure_shard();
BEGIN
  UPDATE exposure SET count = count - 1, amount_minor = amount_minor - OLD.amount_minor
    WHERE provider = OLD.provider AND currency = OLD.currency AND shard = here;
  IF NOT FOUND THEN
    INSERT INTO exposure (provider, currency, shard, count, amount_minor)
      VALUES (OLD.provider, OLD.currency, here, -1, -OLD.amount_minor)
      ON CONFLICT (provider, currency, shard) DO UPDATE
      SET count = exposure.count - 1, amount_minor = exposure.amount_minor + excluded.amount_minor;
  END IF;
  RETURN NULL;
END
$$;
