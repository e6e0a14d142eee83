-- As SQLite's schema/012: undelivered events are found through outbox_due (tenant_id,
-- next_attempt_at) alone, since every query of them names its tenants; outbox_pending only
-- cost an index entry for every event written (docs/performance.md, "Index entries per
-- payment").
DROP INDEX outbox_pending;
