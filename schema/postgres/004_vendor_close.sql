-- As SQLite's 008_vendor_close.sql: when the vendor accepted the close of a payment's order,
-- and when an operator's failed_final asked automatic work to stop it that way.
ALTER TABLE payments ADD COLUMN vendor_closed_at BIGINT;
ALTER TABLE payments ADD COLUMN stop_requested_at BIGINT;
