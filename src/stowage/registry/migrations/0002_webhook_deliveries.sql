-- The webhook delivery queue and log (registry/base.py: WebhookDelivery).
CREATE TABLE webhook_deliveries (
    id BIGSERIAL PRIMARY KEY,
    event_id BIGINT NOT NULL,
    api_key TEXT NOT NULL,
    url TEXT NOT NULL,
    action TEXT NOT NULL,
    handle TEXT NOT NULL,
    body TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt DOUBLE PRECISION NOT NULL DEFAULT 0,
    lease_until DOUBLE PRECISION NOT NULL DEFAULT 0,
    response_code INTEGER,
    last_error TEXT NOT NULL DEFAULT '',
    created DOUBLE PRECISION NOT NULL,
    updated DOUBLE PRECISION NOT NULL DEFAULT 0,
    claimed_by TEXT NOT NULL DEFAULT ''
);
CREATE INDEX webhook_due ON webhook_deliveries (status, next_attempt);
CREATE INDEX webhook_by_app ON webhook_deliveries (api_key, id);
