-- A kept-figure shard of its own for each writing transaction.
--
-- The kept counts (payment_counts) and the kept exposure (exposure) are split into 16 shard rows
-- so that transactions on different connections do not queue on one row (002). The shard was
-- the backend's pid modulo 16: with more writing connections than that, or two pids alike modulo
-- 16, two transactions shared a shard. A node's transaction holds many jobs (group commit), each
-- moving a payment between states, so two transactions sharing a shard locked its rows in
-- whatever order their jobs came, and could deadlock; the loser of such a cycle lost its job and
-- waited again with every later job that touched the same rows.
--
-- Now a transaction takes a shard nobody else holds, the first time it writes a figure: from its
-- pid's shard onwards, the first whose advisory lock it gets without waiting (pg_locks: locktype
-- 'advisory', classid 1885436291, objid the shard; classid 1885436275 + 0..15 are the risk
-- rows', 007). It keeps that shard until it ends, in a transaction-local setting; a savepoint
-- rolled back before it took the lock rolls both back, and the next job takes one anew. Only
-- when 16 other transactions hold one each does it share its pid's shard, and may wait as
-- before. Which shard a change lands in never changes a figure: the figures are the sums over
-- the shards, each change made under its row's lock.
CREATE OR REPLACE FUNCTION payorch_figure_shard() RETURNS SMALLINT LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  chosen TEXT := NULLIF(current_setting('payorch.figure_shard', true), '');
  home INTEGER;
  candidate INTEGER;
BEGIN
  IF chosen IS NOT NULL THEN
    RETURN chosen::SMALLINT;
  END IF;
  home := pg_backend_pid() % 16;
  candidate := home;
  FOR i IN 0..15 LOOP
    IF pg_try_advisory_xact_lock(1885436291, (home + i) % 16) THEN
      candidate := (home + i) % 16;
      EXIT;
    END IF;
  END LOOP;
  PERFORM set_config('payorch.figure_shard', candidate::TEXT, true);
  RETURN candidate;
END
$$;
