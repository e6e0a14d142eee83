-- The vendor-side fence with confirmation (docs/execution.md, "Closing an order"): when the
-- vendor accepted the close of a payment's order. Set once, by the transition that records
-- the close (trigger vendor_closed); the query that follows reads it to confirm the order
-- closed and unpaid before FAILED_FINAL.
ALTER TABLE payments ADD COLUMN vendor_closed_at INTEGER;
