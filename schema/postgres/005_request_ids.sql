-- As SQLite's 009_request_ids.sql: the request that created an operation row and the W3C trace
-- it arrived in, and the request whose transition wrote an outbox event.
ALTER TABLE payments ADD COLUMN request_id TEXT;
ALTER TABLE payments ADD COLUMN trace_id TEXT;
ALTER TABLE payments ADD COLUMN trace_flags TEXT;
ALTER TABLE outbox ADD COLUMN request_id TEXT;
