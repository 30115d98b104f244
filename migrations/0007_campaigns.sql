-- Campaigns: one mail to an audience, resolved when sending starts and frozen into recipient rows.

CREATE TABLE campaigns (
  id                    uuid PRIMARY KEY,
  project_id            uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  partition             int NOT NULL,
  name                  text NOT NULL,
  description           text,
  subject               text NOT NULL,
  body                  text NOT NULL,
  from_email            text NOT NULL,
  from_name             text,
  reply_to              text,
  type                  text NOT NULL DEFAULT 'MARKETING',
  status                text NOT NULL DEFAULT 'DRAFT',
  audience_type         text NOT NULL,
  segment_id            uuid,
  audience_condition    jsonb,
  scheduled_for         timestamptz,
  -- Fan-out progress: the audience is frozen (resolved) first, then its mail is queued in chunks.
  resolve_cursor        uuid,
  resolved              boolean NOT NULL DEFAULT false,
  queue_cursor          uuid,
  queued                boolean NOT NULL DEFAULT false,
  total_recipients      int NOT NULL DEFAULT 0,
  sent_count            int NOT NULL DEFAULT 0,
  delivered_count       int NOT NULL DEFAULT 0,
  opened_count          int NOT NULL DEFAULT 0,
  clicked_count         int NOT NULL DEFAULT 0,
  bounced_count         int NOT NULL DEFAULT 0,
  complained_count      int NOT NULL DEFAULT 0,
  failed_count          int NOT NULL DEFAULT 0,
  skipped_unsubscribed  int NOT NULL DEFAULT 0,
  skipped_suppressed    int NOT NULL DEFAULT 0,
  sending_started_at    timestamptz,
  resolved_at           timestamptz,
  sent_at               timestamptz,
  cancelled_at          timestamptz,
  created_at            timestamptz NOT NULL,
  updated_at            timestamptz NOT NULL
);
CREATE INDEX campaigns_project_created ON campaigns (project_id, created_at, id);
-- Scheduled campaigns are durable timers, polled by the worker owning their partition.
CREATE INDEX campaigns_due ON campaigns (partition, scheduled_for) WHERE status = 'SCHEDULED';

-- The frozen audience: one row per contact, with why it was skipped or which email it got.
CREATE TABLE campaign_recipients (
  campaign_id  uuid NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
  contact_id   uuid NOT NULL,
  skipped      text,
  email_id     uuid,
  PRIMARY KEY (campaign_id, contact_id)
);

-- A campaign is done when none of its mail is still queued or in flight.
CREATE INDEX emails_campaign_open ON emails (campaign_id) WHERE status IN ('PENDING', 'SENDING');
