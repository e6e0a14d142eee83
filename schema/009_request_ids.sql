-- Request tracing (docs/operations.md, "Logs and request tracing"):
--  - payments.request_id: the X-Request-Id of the request that created the row (a payment's or
--    a refund's intake); NULL for rows created before it was kept.
--  - payments.trace_id, trace_flags: the W3C traceparent that request carried, if valid; the
--    engine's vendor calls for the row send `traceparent: 00-<trace_id>-<new span>-<flags>`.
--  - outbox.request_id: the request whose transition wrote the event (the intake's created
--    event); NULL for events the engine's own transitions wrote.
ALTER TABLE payments ADD COLUMN request_id TEXT;
ALTER TABLE payments ADD COLUMN trace_id TEXT;
ALTER TABLE payments ADD COLUMN trace_flags TEXT;
ALTER TABLE outbox ADD COLUMN request_id TEXT;
