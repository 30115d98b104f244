-- Email: sending domains (DKIM keys), templates, email records (the durable send queue), suppressions
-- and inbound notification receipts.

-- Per project: the send throttle (emails per second; NULL = the deployment default, 0 = unthrottled),
-- open/click tracking, and the secret that signs tracking and subscription links.
ALTER TABLE projects
  ADD COLUMN send_rate_per_second  numeric,
  ADD COLUMN tracking_enabled      boolean NOT NULL DEFAULT true,
  ADD COLUMN link_secret           text NOT NULL
    DEFAULT encode(sha256((gen_random_uuid()::text || gen_random_uuid()::text)::bytea), 'hex');

CREATE TABLE domains (
  id                uuid PRIMARY KEY,
  project_id        uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  domain            text NOT NULL,
  dkim_selector     text NOT NULL,
  dkim_private_key  text NOT NULL,
  dkim_public_key   text NOT NULL,
  status            text NOT NULL DEFAULT 'PENDING',
  -- The records to publish and what the last check found for each: [{ type, name, value, status }].
  records           jsonb NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  last_checked_at   timestamptz,
  verified_at       timestamptz
);
CREATE UNIQUE INDEX domains_project_domain ON domains (project_id, domain);
CREATE INDEX domains_checked ON domains (last_checked_at NULLS FIRST);

CREATE TABLE templates (
  id           uuid PRIMARY KEY,
  project_id   uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name         text NOT NULL,
  description  text,
  subject      text NOT NULL,
  body         text NOT NULL,
  from_email   text NOT NULL,
  from_name    text,
  reply_to     text,
  type         text NOT NULL DEFAULT 'MARKETING',
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL
);
CREATE INDEX templates_project_created ON templates (project_id, created_at, id);

-- One row per email. PENDING rows are the send queue of their partition's worker; status only moves
-- forward (see src/mail/status.ts).
CREATE TABLE emails (
  id               uuid PRIMARY KEY,
  project_id       uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  partition        int NOT NULL,
  contact_id       uuid,
  to_email         text NOT NULL,
  to_name          text,
  from_email       text NOT NULL,
  from_name        text,
  reply_to         text,
  subject          text NOT NULL,
  html             text NOT NULL,
  headers          jsonb NOT NULL DEFAULT '{}'::jsonb,
  attachments      jsonb NOT NULL DEFAULT '[]'::jsonb,
  type             text NOT NULL,           -- TRANSACTIONAL | MARKETING
  priority         smallint NOT NULL,       -- 0 transactional, 1 campaign and workflow mail
  template_id      uuid,
  campaign_id      uuid,
  workflow_id      uuid,
  message_id       text NOT NULL,
  status           text NOT NULL DEFAULT 'PENDING',
  attempts         int NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  error            text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  sent_at          timestamptz,
  delivered_at     timestamptz,
  opened_at        timestamptz,
  clicked_at       timestamptz,
  bounced_at       timestamptz,
  complained_at    timestamptz
);
CREATE INDEX emails_queue ON emails (project_id, priority, next_attempt_at, id) WHERE status = 'PENDING';
CREATE INDEX emails_partition_open ON emails (partition) WHERE status IN ('PENDING', 'SENDING');
CREATE UNIQUE INDEX emails_message_id ON emails (message_id);
CREATE INDEX emails_contact ON emails (contact_id);

-- Addresses that hard-bounced or complained: no mail of any kind goes to them again.
CREATE TABLE suppressions (
  project_id  uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  email       text NOT NULL,
  reason      text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, email)
);

-- Inbound delivery notifications already applied (providers redeliver).
CREATE TABLE webhook_receipts (
  provider     text NOT NULL,
  id           text NOT NULL,
  received_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (provider, id)
);
