-- The vendor-side fence with confirmation (docs/execution.md, "Closing an order"):
--  - vendor_closed_at: when the vendor accepted the close of a payment's order. Set once, by the
--    transition that records the close (trigger vendor_closed); the query that follows it
--    confirms the order closed and unpaid before FAILED_FINAL.
--  - stop_requested_at: when an operator resolved the payment's case failed_final on a provider
--    that closes orders. Automatic work then stops the payment as a spent budget would: the
--    close, its confirming query, and FAILED_FINAL only when the vendor shows it unpaid.
ALTER TABLE payments ADD COLUMN vendor_closed_at INTEGER;
ALTER TABLE payments ADD COLUMN stop_requested_at INTEGER;
