-- Money that left is always recordable, as SQLite's schema/011: the payment's refund figures
-- are bounded below only, the store opens an `over_refunded` case on a payment a recorded
-- refund takes over its amount (store/refund_flow.h), and the money rule's backing moves to
-- the refund's insert: no writer, however wrong, can insert a refund (not FAILED_FINAL) that
-- takes the payment's refunds above its amount. The intake locked the payment row first
-- (FOR UPDATE), so the figure read here cannot change before the insert commits.
ALTER TABLE payments
  DROP CONSTRAINT payments_refunded,
  DROP CONSTRAINT payments_reserved,
  ADD CONSTRAINT payments_refunded CHECK (amount_refunded_minor >= 0),
  ADD CONSTRAINT payments_reserved CHECK (amount_reserved_minor >= 0);

CREATE FUNCTION refunds_money_rule() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM payments
               WHERE id = NEW.refund_of AND amount_reserved_minor + NEW.amount_minor > amount_minor) THEN
    RAISE EXCEPTION 'payments: refunds above the payment' USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER refunds_money_rule BEFORE INSERT ON payments FOR EACH ROW
WHEN (NEW.refund_of IS NOT NULL AND NEW.state <> 'FAILED_FINAL')
EXECUTE FUNCTION refunds_money_rule();
