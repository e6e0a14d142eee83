-- The outbox keeps one index of undelivered events, outbox_due (tenant_id, next_attempt_at;
-- schema/004): every query of undelivered events names its tenants (the push's due events, the
-- backlog of /status and /metrics), so outbox_pending (next_attempt_at), which no query chose,
-- only cost an index entry for every event written.
DROP INDEX outbox_pending;
