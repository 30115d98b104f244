-- Inbound mail (issue 37, item 2): mail received over SMTP (INBOUND_SMTP_PORT) or from SES through SNS is
-- an `emails` row of direction 'inbound' (status RECEIVED, billing category 'inbound') beside the
-- email.received event on its sender's contact. Every new column is nullable or has a default.
ALTER TABLE emails
  ADD COLUMN direction text NOT NULL DEFAULT 'outbound',
  -- The message's own Message-ID (our message_id column holds one we made, unique across all mail):
  -- a retried delivery of the same message to the same project is stored once.
  ADD COLUMN external_message_id text,
  -- The email of ours this one answers (In-Reply-To, else the newest of References that is ours).
  ADD COLUMN in_reply_to_email_id uuid,
  -- SPF, DKIM and DMARC as checked on arrival: { spf, dkim, dmarc, ... }.
  ADD COLUMN auth_results jsonb,
  -- The message as received (emptied with the rest of the content past EMAIL_CONTENT_RETENTION_DAYS).
  ADD COLUMN raw_message bytea;

CREATE UNIQUE INDEX emails_inbound_message ON emails (project_id, external_message_id)
  WHERE direction = 'inbound' AND external_message_id IS NOT NULL;
CREATE INDEX emails_in_reply_to ON emails (in_reply_to_email_id) WHERE in_reply_to_email_id IS NOT NULL;

-- The email rollups count sent mail: received mail is not queued, sent or delivered by us.
CREATE OR REPLACE FUNCTION ms_emails_inserted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  PERFORM ms_apply_email_deltas(ARRAY(SELECT ms_email_fact_deltas(ARRAY(
    SELECT ROW(n.project_id, n.campaign_id, n.workflow_id, n.to_email, n.created_at, n.sent_at, n.delivered_at, n.opened_at,
               n.clicked_at, n.bounced_at, n.complained_at)::ms_email_fact
    FROM new_rows n WHERE n.direction = 'outbound'), 1)))
  ; INSERT INTO activity_log (project_id, type, occurred_at, contact_id, campaign_id, workflow_id, subject, data)
    SELECT n.project_id, 'email.' || lower(n.status), now(), n.contact_id, n.campaign_id, n.workflow_id, left(n.subject, 998),
           jsonb_build_object('emailId', n.id, 'to', n.to_email, 'error', n.error)
    FROM new_rows n WHERE n.status IN ('FAILED', 'SUPPRESSED')
  ; RETURN NULL
; END $$;
