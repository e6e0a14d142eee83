-- Money that left is always recordable (docs/refunds.md, "Over-refunded payments").
--
-- A refund that went FAILED_FINAL frees its amount for a newer refund. If a human or a
-- settlement file later shows that the vendor paid it after all, recording that puts the
-- payment's refunds above its amount; the CHECKs of 007 (amount_reserved_minor and
-- amount_refunded_minor BETWEEN 0 AND amount_minor) rolled that record back, so what the vendor
-- did could not be written down. Now:
--  - the two figures are bounded below only; the store opens an `over_refunded` case on the
--    payment in the transaction that takes it over its amount (store/refund_flow.h);
--  - the money rule keeps its backing where it belongs, at the refund's insert: no writer,
--    however wrong, can insert a refund (not FAILED_FINAL) that takes the payment's refunds
--    above its amount (core/refund.h checks it first, with the 422 the tenant sees).
--
-- SQLite cannot drop a column's CHECK, and the constraint is not stored in the file's pages:
-- the table's CREATE statement in sqlite_schema is edited in place, the documented way to drop a
-- CHECK without rebuilding the table (sqlite.org/lang_altertable.html, "Making Other Kinds Of
-- Table Schema Changes"). The CREATE TRIGGER below bumps the schema cookie, so every other
-- connection reloads the schema; RESET reloads this one's.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
  SET sql = replace(replace(sql,
      'CHECK (amount_refunded_minor BETWEEN 0 AND amount_minor)', 'CHECK (amount_refunded_minor >= 0)'),
      'CHECK (amount_reserved_minor BETWEEN 0 AND amount_minor)', 'CHECK (amount_reserved_minor >= 0)')
  WHERE type = 'table' AND name = 'payments';

CREATE TRIGGER refunds_money_rule BEFORE INSERT ON payments
WHEN NEW.refund_of IS NOT NULL AND NEW.state <> 'FAILED_FINAL'
  AND (SELECT amount_reserved_minor + NEW.amount_minor > amount_minor
         FROM payments WHERE id = NEW.refund_of)
BEGIN
  SELECT RAISE(ABORT, 'payments: refunds above the payment');
END;
PRAGMA writable_schema = RESET;
