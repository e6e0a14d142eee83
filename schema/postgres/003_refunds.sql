-- payorch schema on PostgreSQL, v3: refunds (docs/refunds.md), as SQLite's schema/007. A refund
-- is a row of `payments` with operation_type 'refund'; see 007 for what each column means.
ALTER TABLE payments
  ADD COLUMN refund_of TEXT COLLATE "C" REFERENCES payments (id),
  ADD COLUMN deferred BOOLEAN NOT NULL DEFAULT false,
  ADD COLUMN amount_refunded_minor BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN amount_reserved_minor BIGINT NOT NULL DEFAULT 0,
  ADD CONSTRAINT payments_refund_of CHECK ((refund_of IS NULL) = (operation_type <> 'refund')),
  ADD CONSTRAINT payments_deferred CHECK (NOT deferred OR (operation_type = 'refund'
    AND state = 'PROCESSING' AND next_action = 'none' AND last_submit_started_at IS NULL)),
  ADD CONSTRAINT payments_refunded CHECK (amount_refunded_minor BETWEEN 0 AND amount_minor),
  -- Backs the money rule of the refund's intake transaction (core/refund.h): no writer, however
  -- wrong, can commit refunds above the payment.
  ADD CONSTRAINT payments_reserved CHECK (amount_reserved_minor BETWEEN 0 AND amount_minor);

CREATE INDEX payments_refunds ON payments (refund_of, id) WHERE refund_of IS NOT NULL;

DROP TRIGGER payments_immutable ON payments;
CREATE TRIGGER payments_immutable BEFORE UPDATE ON payments FOR EACH ROW
WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id
  OR OLD.operation_type IS DISTINCT FROM NEW.operation_type
  OR OLD.operation_id IS DISTINCT FROM NEW.operation_id OR OLD.provider IS DISTINCT FROM NEW.provider
  OR OLD.client_key IS DISTINCT FROM NEW.client_key
  OR OLD.request_digest IS DISTINCT FROM NEW.request_digest
  OR OLD.amount_minor IS DISTINCT FROM NEW.amount_minor OR OLD.currency IS DISTINCT FROM NEW.currency
  OR OLD.payee IS DISTINCT FROM NEW.payee OR OLD.source IS DISTINCT FROM NEW.source
  OR OLD.description IS DISTINCT FROM NEW.description
  OR OLD.metadata IS DISTINCT FROM NEW.metadata OR OLD.created_at IS DISTINCT FROM NEW.created_at
  OR OLD.refund_of IS DISTINCT FROM NEW.refund_of)
EXECUTE FUNCTION payorch_refuse('payments: immutable column changed');

CREATE TRIGGER refunds_not_deferred_again BEFORE UPDATE OF deferred ON payments FOR EACH ROW
WHEN (NEW.deferred AND NOT OLD.deferred)
EXECUTE FUNCTION payorch_refuse('payments: a released refund cannot be deferred again');

-- payment_counts counts payments; refunds are counted by their own query.
DROP TRIGGER payments_counts_insert ON payments;
CREATE TRIGGER payments_counts_insert AFTER INSERT ON payments FOR EACH ROW
WHEN (NEW.operation_type = 'payment') EXECUTE FUNCTION payments_counts_insert();
DROP TRIGGER payments_counts_move ON payments;
CREATE TRIGGER payments_counts_move AFTER UPDATE OF state ON payments FOR EACH ROW
WHEN (OLD.state <> NEW.state AND NEW.operation_type = 'payment')
EXECUTE FUNCTION payments_counts_move();

-- The reservation (refunds not FAILED_FINAL) and the refunded total (SUCCEEDED refunds) on the
-- refunded payment, in the refund's own transaction. The refund intake locks the payment row
-- first, so these updates never wait on a refund's own intake.
CREATE FUNCTION refunds_figures() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  reserved_delta BIGINT := 0;
  refunded_delta BIGINT := 0;
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.state <> 'FAILED_FINAL' THEN reserved_delta := NEW.amount_minor; END IF;
    IF NEW.state = 'SUCCEEDED' THEN refunded_delta := NEW.amount_minor; END IF;
  ELSE
    IF (OLD.state = 'FAILED_FINAL') <> (NEW.state = 'FAILED_FINAL') THEN
      reserved_delta := CASE WHEN NEW.state = 'FAILED_FINAL' THEN -NEW.amount_minor ELSE NEW.amount_minor END;
    END IF;
    IF (OLD.state = 'SUCCEEDED') <> (NEW.state = 'SUCCEEDED') THEN
      refunded_delta := CASE WHEN NEW.state = 'SUCCEEDED' THEN NEW.amount_minor ELSE -NEW.amount_minor END;
    END IF;
  END IF;
  IF reserved_delta <> 0 OR refunded_delta <> 0 THEN
    UPDATE payments SET amount_reserved_minor = amount_reserved_minor + reserved_delta,
                        amount_refunded_minor = amount_refunded_minor + refunded_delta
      WHERE id = NEW.refund_of;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER refunds_figures_insert AFTER INSERT ON payments FOR EACH ROW
WHEN (NEW.refund_of IS NOT NULL) EXECUTE FUNCTION refunds_figures();
CREATE TRIGGER refunds_figures_move AFTER UPDATE OF state ON payments FOR EACH ROW
WHEN (NEW.refund_of IS NOT NULL AND OLD.state <> NEW.state) EXECUTE FUNCTION refunds_figures();
