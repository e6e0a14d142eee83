-- Vendor execution (engine): when a submit left, and the current retry budget's start.

-- Set when a submit is about to be sent (in the claim transaction, before the call). A submit
-- whose start is later than its end never reported back: its outcome is unknown.
ALTER TABLE payments ADD COLUMN last_submit_started_at INTEGER;
-- An operator's `retry` resolution starts a fresh budget: attempts and give_up_after count from
-- here (key retention still counts from first_submit_at: the vendor's clock does not reset).
ALTER TABLE payments ADD COLUMN budget_started_at INTEGER;
ALTER TABLE payments ADD COLUMN budget_attempts_base INTEGER NOT NULL DEFAULT 0;

-- Risk exposure per provider: UNKNOWN payments and submits in flight.
CREATE INDEX payments_exposure ON payments (provider, state, currency);
-- Settlement import and callbacks find payments by the key the vendor saw.
-- (UNIQUE (provider, client_key) already indexes it.)
