-- As SQLite's 008_vendor_close.sql: when the vendor accepted the close of a payment's order.
ALTER TABLE payments ADD COLUMN vendor_closed_at BIGINT;
