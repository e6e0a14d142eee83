-- Refunds (docs/refunds.md). A refund is its own operation: a row of `payments` with
-- operation_type 'refund', its own id (re_…), client_key, lease, fence, counting and cases, so
-- claims, transitions, callbacks, reconciliation and the exposure treat it as they treat a
-- payment. What is a refund's own:
--  - refund_of: the payment it refunds (immutable);
--  - deferred: 1 while it waits for its payment to succeed (the refund's DEFERRED state). A
--    deferred row is PROCESSING with next_action 'none' and was never sent, so no claim takes it
--    and no transition matches it (they compare on deferred = 0); its payment's transition
--    releases it, in the same transaction.
-- And on the payment: the money rule's reservation and the refunded total, kept by triggers in
-- the refunds' own transactions.
ALTER TABLE payments ADD COLUMN refund_of TEXT REFERENCES payments (id)
  CHECK ((refund_of IS NULL) = (operation_type <> 'refund'));
ALTER TABLE payments ADD COLUMN deferred INTEGER NOT NULL DEFAULT 0
  CHECK (deferred = 0 OR (deferred = 1 AND operation_type = 'refund' AND state = 'PROCESSING'
                          AND next_action = 'none' AND last_submit_started_at IS NULL));
-- Payments: the sum of their SUCCEEDED refunds (the view's amount_refunded_minor).
ALTER TABLE payments ADD COLUMN amount_refunded_minor INTEGER NOT NULL DEFAULT 0
  CHECK (amount_refunded_minor BETWEEN 0 AND amount_minor);
-- Payments: the sum of their refunds that are not FAILED_FINAL. The money rule is checked in
-- the refund's intake transaction (core/refund.h); this CHECK backs it, so no writer, however
-- wrong, can commit refunds above the payment.
ALTER TABLE payments ADD COLUMN amount_reserved_minor INTEGER NOT NULL DEFAULT 0
  CHECK (amount_reserved_minor BETWEEN 0 AND amount_minor);

-- A payment's refunds, oldest first (listing, the money rule, releasing deferred ones).
CREATE INDEX payments_refunds ON payments (refund_of, id) WHERE refund_of IS NOT NULL;

DROP TRIGGER payments_immutable;
CREATE TRIGGER payments_immutable BEFORE UPDATE ON payments
WHEN OLD.id IS NOT NEW.id OR OLD.tenant_id IS NOT NEW.tenant_id
  OR OLD.operation_type IS NOT NEW.operation_type OR OLD.operation_id IS NOT NEW.operation_id
  OR OLD.provider IS NOT NEW.provider OR OLD.client_key IS NOT NEW.client_key
  OR OLD.request_digest IS NOT NEW.request_digest OR OLD.amount_minor IS NOT NEW.amount_minor
  OR OLD.currency IS NOT NEW.currency OR OLD.payee IS NOT NEW.payee OR OLD.source IS NOT NEW.source
  OR OLD.description IS NOT NEW.description OR OLD.metadata IS NOT NEW.metadata
  OR OLD.created_at IS NOT NEW.created_at OR OLD.refund_of IS NOT NEW.refund_of
BEGIN
  SELECT RAISE(ABORT, 'payments: immutable column changed');
END;

-- A refund is only ever deferred at its intake: once released it never waits again.
CREATE TRIGGER refunds_not_deferred_again BEFORE UPDATE OF deferred ON payments
WHEN NEW.deferred = 1 AND OLD.deferred = 0
BEGIN
  SELECT RAISE(ABORT, 'payments: a released refund cannot be deferred again');
END;

-- payment_counts counts payments; refunds are counted by their own query (store/refunds.h).
DROP TRIGGER payments_counts_insert;
CREATE TRIGGER payments_counts_insert AFTER INSERT ON payments WHEN NEW.operation_type = 'payment'
BEGIN
  UPDATE payment_counts SET count = count + 1 WHERE state = NEW.state;
END;
DROP TRIGGER payments_counts_move;
CREATE TRIGGER payments_counts_move AFTER UPDATE OF state ON payments
WHEN OLD.state <> NEW.state AND NEW.operation_type = 'payment'
BEGIN
  UPDATE payment_counts SET count = count - 1 WHERE state = OLD.state;
  UPDATE payment_counts SET count = count + 1 WHERE state = NEW.state;
END;

-- The reservation (refunds not FAILED_FINAL) and the refunded total (SUCCEEDED refunds) on the
-- refunded payment, in the refund's own transaction. A refund reserves its amount from its
-- insert until it is FAILED_FINAL (an operator's correction out of FAILED_FINAL reserves it
-- again).
CREATE TRIGGER refunds_figures_insert AFTER INSERT ON payments WHEN NEW.refund_of IS NOT NULL
BEGIN
  UPDATE payments
    SET amount_reserved_minor = amount_reserved_minor
          + CASE WHEN NEW.state <> 'FAILED_FINAL' THEN NEW.amount_minor ELSE 0 END,
        amount_refunded_minor = amount_refunded_minor
          + CASE WHEN NEW.state = 'SUCCEEDED' THEN NEW.amount_minor ELSE 0 END
    WHERE id = NEW.refund_of;
END;
CREATE TRIGGER refunds_figures_move AFTER UPDATE OF state ON payments
WHEN NEW.refund_of IS NOT NULL AND OLD.state <> NEW.state
BEGIN
  UPDATE payments
    SET amount_reserved_minor = amount_reserved_minor
          + CASE WHEN OLD.state = 'FAILED_FINAL' THEN NEW.amount_minor
                 WHEN NEW.state = 'FAILED_FINAL' THEN -NEW.amount_minor ELSE 0 END,
        amount_refunded_minor = amount_refunded_minor
          + CASE WHEN NEW.state = 'SUCCEEDED' THEN NEW.amount_minor
                 WHEN OLD.state = 'SUCCEEDED' THEN -NEW.amount_minor ELSE 0 END
    WHERE id = NEW.refund_of;
END;
