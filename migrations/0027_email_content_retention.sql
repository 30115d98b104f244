-- The rendered content of sent mail (what the dashboard's Emails page shows and downloads) is kept for
-- EMAIL_CONTENT_RETENTION_DAYS. Past it a worker empties html, headers and attachments and stamps
-- content_expired_at; the row itself stays (status, timeline, counters and tracking links need it).
-- Numbered 0027: 0026 is taken by another change in flight.
ALTER TABLE emails ADD COLUMN content_expired_at timestamptz;
-- The sweep's next rows: finished mail whose content is still kept, oldest first.
CREATE INDEX emails_content_kept ON emails (created_at)
  WHERE content_expired_at IS NULL AND status NOT IN ('PENDING', 'SENDING');
