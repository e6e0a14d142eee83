-- Push delivery and retention of outbox events (docs/contract.md §6, §7).

-- The push queue: per tenant with a webhook, its undelivered events by when they are due.
-- (outbox_pending alone would walk the undelivered events of every tenant, including those
-- that only read the feed and never take delivery; outbox_by_tenant would walk delivered ones.)
CREATE INDEX outbox_due ON outbox (tenant_id, next_attempt_at) WHERE delivered_at IS NULL;

-- Retention purges delivered events oldest first, in small batches: a batch costs its own rows
-- rather than a scan of the outbox. Undelivered events are not in it and are never purged.
-- (The callback inbox's index is in 003.)
CREATE INDEX outbox_delivered ON outbox (delivered_at) WHERE delivered_at IS NOT NULL;
