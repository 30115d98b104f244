-- Analytics and the activity feed, answered from rollups kept by Postgres itself (issue #17).
--
-- Every count an analytics or activity endpoint reads is added up by triggers on the tables that record
-- what happened (events, emails, contacts, workflow executions, campaigns), in the same transaction as
-- the write. So the rollups are exact whichever process, worker or lane writes, and under redelivery
-- and crashes (a rolled-back write rolls back its counts; a replayed event that is not inserted again
-- is not counted again). Triggers are per statement with transition tables: a batch of 500 events is
-- one grouped upsert of a few rows, not 500.
--
-- Grains: each delta is added to its hour and (UTC) day bucket, and the project-wide series (mail per
-- stream, activity types) to its 15-minute bucket too. A range is read as whole days in its middle,
-- whole hours and quarter hours at its ends; local days and hours of every zone start on a quarter hour
-- (Asia/Kolkata +05:30, Asia/Kathmandu +05:45), so every bucket edge of those series is exact. Per-key
-- rows (campaigns, domains, links, event names) have no quarter hours: there are many keys, and a
-- project busy all day would keep ~35,000 quarter rows a year per key; their ranges are whole UTC hours
-- (the endpoints say which range they counted).
--
-- Shards: concurrent writers (several workers' lanes of one busy project, the sender, api processes
-- recording opens) would otherwise all add to the same row per project and bucket, and each would hold
-- its row lock until its batch commits: one hot row serialising every batch of the project. Each
-- connection adds to its own shard (its backend pid mod 16), so concurrent transactions touch different
-- rows; readers sum the shards, and ms_compact_rollups folds the shards of closed buckets into shard 0
-- so a long range reads about one row per bucket.

-- Items of the activity feed that are not events: emails that failed or were suppressed, workflow
-- executions started and finished, campaign state changes. Written by the triggers below.
CREATE TABLE activity_log (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id   uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  type         text NOT NULL,
  occurred_at  timestamptz NOT NULL,
  contact_id   uuid,
  campaign_id  uuid,
  workflow_id  uuid,
  subject      text,
  data         jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX activity_log_feed ON activity_log (project_id, occurred_at DESC, id DESC);
CREATE INDEX activity_log_contact ON activity_log (project_id, contact_id, occurred_at DESC) WHERE contact_id IS NOT NULL;

-- Email metrics per project and stream (kind 'p', key ''), per campaign ('c', key = campaign id,
-- stream ALL) and per recipient domain ('d', key = domain). stream is ALL or the mail's own stream
-- (TRANSACTIONAL, CAMPAIGN, WORKFLOW). Keyed so one index range scan per grain reads every key of a range.
CREATE TABLE analytics_email_rollups (
  project_id    uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  kind          text NOT NULL,
  stream        text NOT NULL,
  grain         smallint NOT NULL,
  bucket        timestamptz NOT NULL,
  key           text NOT NULL,
  shard         smallint NOT NULL,
  queued        bigint NOT NULL DEFAULT 0,
  sent          bigint NOT NULL DEFAULT 0,
  delivered     bigint NOT NULL DEFAULT 0,
  opened        bigint NOT NULL DEFAULT 0,
  clicked       bigint NOT NULL DEFAULT 0,
  bounced       bigint NOT NULL DEFAULT 0,
  hard_bounced  bigint NOT NULL DEFAULT 0,
  soft_bounced  bigint NOT NULL DEFAULT 0,
  complained    bigint NOT NULL DEFAULT 0,
  unsubscribed  bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, kind, stream, grain, bucket, key, shard)
);
CREATE INDEX analytics_email_rollups_unfolded ON analytics_email_rollups (bucket) WHERE shard <> 0;

-- Counts: activity types ('type', key = type), custom events ('event', key = name), clicked links
-- ('link', key = URL, stream ALL or the mail's stream). Keys are cut to 500 characters.
CREATE TABLE analytics_counters (
  project_id  uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  kind        text NOT NULL,
  stream      text NOT NULL,
  grain       smallint NOT NULL,
  bucket      timestamptz NOT NULL,
  key         text NOT NULL,
  shard       smallint NOT NULL,
  n           bigint NOT NULL,
  PRIMARY KEY (project_id, kind, stream, grain, bucket, key, shard)
);
CREATE INDEX analytics_counters_unfolded ON analytics_counters (bucket) WHERE shard <> 0;

-- /activity/upcoming: a project's workflow delays and timeouts due soon.
CREATE INDEX workflow_timers_project_due ON workflow_timers (project_id, due_at);

CREATE FUNCTION ms_rollup_shard() RETURNS smallint LANGUAGE sql STABLE AS $$ SELECT (pg_backend_pid() % 16)::smallint $$;

CREATE FUNCTION ms_email_stream(has_campaign boolean, has_workflow boolean) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN has_campaign THEN 'CAMPAIGN' WHEN has_workflow THEN 'WORKFLOW' ELSE 'TRANSACTIONAL' END $$;

CREATE FUNCTION ms_email_domain(address text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT left(lower(substring(address from '@([^@]*)$')), 255) $$;

CREATE FUNCTION ms_try_uuid(value text) RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN value ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN value::uuid END $$;

-- The activity type of a stored event (src/analytics/activityTypes.ts lists the same names).
CREATE FUNCTION ms_activity_type(name text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE name
    WHEN 'email.sent' THEN 'email.sent' WHEN 'email.delivery' THEN 'email.delivered' WHEN 'email.open' THEN 'email.opened'
    WHEN 'email.click' THEN 'email.clicked' WHEN 'email.bounce' THEN 'email.bounced' WHEN 'email.complaint' THEN 'email.complained'
    WHEN 'email.received' THEN 'email.received' WHEN 'contact.subscribed' THEN 'contact.subscribed'
    WHEN 'contact.unsubscribed' THEN 'contact.unsubscribed'
    ELSE CASE WHEN name ~ '^segment\.[^.]+\.entry$' THEN 'segment.entry' WHEN name ~ '^segment\.[^.]+\.exit$' THEN 'segment.exit' ELSE 'event' END
  END $$;

-- ---------------------------------------------------------------------------------- applying deltas

CREATE TYPE ms_email_delta AS (project_id uuid, stream text, campaign_id uuid, domain text, metric text, at timestamptz, n bigint);
CREATE TYPE ms_counter_delta AS (project_id uuid, kind text, stream text, key text, at timestamptz, n bigint);

-- Deltas are summed per quarter hour first (a batch's rows mostly share one), spread over the keys they
-- count under, then summed again into hours and days. Rows are upserted in key order, so two writers
-- sharing a shard wait for each other instead of deadlocking within a statement.
CREATE FUNCTION ms_apply_email_deltas(deltas ms_email_delta[]) RETURNS void LANGUAGE sql AS $$
  WITH base AS (
    SELECT d.project_id, d.stream, d.campaign_id, d.domain,
           date_bin(interval '15 minutes', d.at, TIMESTAMPTZ '2000-01-01 00:00:00+00') AS bucket,
           COALESCE(sum(d.n) FILTER (WHERE d.metric = 'queued'), 0) AS queued,
           COALESCE(sum(d.n) FILTER (WHERE d.metric = 'sent'), 0) AS sent,
           COALESCE(sum(d.n) FILTER (WHERE d.metric = 'delivered'), 0) AS delivered,
           COALESCE(sum(d.n) FILTER (WHERE d.metric = 'opened'), 0) AS opened,
           COALESCE(sum(d.n) FILTER (WHERE d.metric = 'clicked'), 0) AS clicked,
           COALESCE(sum(d.n) FILTER (WHERE d.metric = 'bounced'), 0) AS bounced,
           COALESCE(sum(d.n) FILTER (WHERE d.metric = 'hard_bounced'), 0) AS hard_bounced,
           COALESCE(sum(d.n) FILTER (WHERE d.metric = 'soft_bounced'), 0) AS soft_bounced,
           COALESCE(sum(d.n) FILTER (WHERE d.metric = 'complained'), 0) AS complained,
           COALESCE(sum(d.n) FILTER (WHERE d.metric = 'unsubscribed'), 0) AS unsubscribed
    FROM unnest(deltas) d
    GROUP BY 1, 2, 3, 4, 5
  ), quarters AS (
    SELECT b.project_id, s.kind, s.stream, s.key, b.bucket, sum(b.queued) AS queued, sum(b.sent) AS sent, sum(b.delivered) AS delivered, sum(b.opened) AS opened, sum(b.clicked) AS clicked, sum(b.bounced) AS bounced, sum(b.hard_bounced) AS hard_bounced, sum(b.soft_bounced) AS soft_bounced, sum(b.complained) AS complained, sum(b.unsubscribed) AS unsubscribed
    FROM base b
    CROSS JOIN LATERAL (VALUES ('p', 'ALL', ''), ('p', b.stream, ''), ('d', 'ALL', b.domain), ('d', b.stream, b.domain),
                               ('c', 'ALL', b.campaign_id::text)) s(kind, stream, key)
    WHERE s.stream IS NOT NULL AND s.key IS NOT NULL
    GROUP BY 1, 2, 3, 4, 5
  ), grains AS (
    SELECT project_id, kind, stream, 15::smallint AS grain, bucket, key, queued, sent, delivered, opened, clicked, bounced, hard_bounced, soft_bounced, complained, unsubscribed FROM quarters WHERE kind = 'p'
    UNION ALL
    SELECT q.project_id, q.kind, q.stream, g.grain, date_bin(make_interval(mins => g.grain), q.bucket, TIMESTAMPTZ '2000-01-01 00:00:00+00'),
           q.key, sum(q.queued), sum(q.sent), sum(q.delivered), sum(q.opened), sum(q.clicked), sum(q.bounced), sum(q.hard_bounced), sum(q.soft_bounced), sum(q.complained), sum(q.unsubscribed)
    FROM quarters q CROSS JOIN (VALUES (60::smallint), (1440::smallint)) g(grain)
    GROUP BY 1, 2, 3, 4, 5, 6
  )
  INSERT INTO analytics_email_rollups AS r (project_id, kind, stream, grain, bucket, key, shard, queued, sent, delivered, opened, clicked, bounced, hard_bounced, soft_bounced, complained, unsubscribed)
  SELECT project_id, kind, stream, grain, bucket, key, ms_rollup_shard(), queued, sent, delivered, opened, clicked, bounced, hard_bounced, soft_bounced, complained, unsubscribed FROM grains
  WHERE (queued, sent, delivered, opened, clicked, bounced, hard_bounced, soft_bounced, complained, unsubscribed) <> (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
  ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (project_id, kind, stream, grain, bucket, key, shard) DO UPDATE SET
    queued = r.queued + EXCLUDED.queued, sent = r.sent + EXCLUDED.sent, delivered = r.delivered + EXCLUDED.delivered, opened = r.opened + EXCLUDED.opened, clicked = r.clicked + EXCLUDED.clicked, bounced = r.bounced + EXCLUDED.bounced, hard_bounced = r.hard_bounced + EXCLUDED.hard_bounced, soft_bounced = r.soft_bounced + EXCLUDED.soft_bounced, complained = r.complained + EXCLUDED.complained, unsubscribed = r.unsubscribed + EXCLUDED.unsubscribed
$$;

CREATE FUNCTION ms_apply_counter_deltas(deltas ms_counter_delta[]) RETURNS void LANGUAGE sql AS $$
  WITH quarters AS (
    SELECT d.project_id, d.kind, d.stream, left(d.key, 500) AS key,
           date_bin(interval '15 minutes', d.at, TIMESTAMPTZ '2000-01-01 00:00:00+00') AS bucket, sum(d.n) AS n
    FROM unnest(deltas) d
    WHERE d.key IS NOT NULL AND d.stream IS NOT NULL
    GROUP BY 1, 2, 3, 4, 5
  ), grains AS (
    SELECT project_id, kind, stream, 15::smallint AS grain, bucket, key, n FROM quarters WHERE kind = 'type'
    UNION ALL
    SELECT q.project_id, q.kind, q.stream, g.grain, date_bin(make_interval(mins => g.grain), q.bucket, TIMESTAMPTZ '2000-01-01 00:00:00+00'),
           q.key, sum(q.n)
    FROM quarters q CROSS JOIN (VALUES (60::smallint), (1440::smallint)) g(grain)
    GROUP BY 1, 2, 3, 4, 5, 6
  )
  INSERT INTO analytics_counters AS r (project_id, kind, stream, grain, bucket, key, shard, n)
  SELECT project_id, kind, stream, grain, bucket, key, ms_rollup_shard(), n FROM grains
  WHERE n <> 0
  ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (project_id, kind, stream, grain, bucket, key, shard) DO UPDATE SET n = r.n + EXCLUDED.n
$$;

-- ------------------------------------------------------------------------------------------- emails

-- What of an email the rollups read (never its content).
CREATE TYPE ms_email_fact AS (
  project_id uuid, campaign_id uuid, workflow_id uuid, to_email text, created_at timestamptz, sent_at timestamptz,
  delivered_at timestamptz, opened_at timestamptz, clicked_at timestamptz, bounced_at timestamptz, complained_at timestamptz
);

-- Each stamped time is its metric's moment: an email counts once per metric (unique opens and clicks).
CREATE FUNCTION ms_email_fact_deltas(facts ms_email_fact[], sign bigint) RETURNS SETOF ms_email_delta LANGUAGE sql STABLE AS $$
  SELECT f.project_id, ms_email_stream(f.campaign_id IS NOT NULL, f.workflow_id IS NOT NULL), f.campaign_id, ms_email_domain(f.to_email),
         m.metric, m.at, sign
  FROM unnest(facts) f
  CROSS JOIN LATERAL (VALUES ('queued', f.created_at), ('sent', f.sent_at), ('delivered', f.delivered_at), ('opened', f.opened_at),
                             ('clicked', f.clicked_at), ('bounced', f.bounced_at), ('complained', f.complained_at)) m(metric, at)
  WHERE m.at IS NOT NULL
$$;

CREATE FUNCTION ms_emails_inserted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  PERFORM ms_apply_email_deltas(ARRAY(SELECT ms_email_fact_deltas(ARRAY(
    SELECT ROW(n.project_id, n.campaign_id, n.workflow_id, n.to_email, n.created_at, n.sent_at, n.delivered_at, n.opened_at,
               n.clicked_at, n.bounced_at, n.complained_at)::ms_email_fact
    FROM new_rows n), 1)))
  ; INSERT INTO activity_log (project_id, type, occurred_at, contact_id, campaign_id, workflow_id, subject, data)
    SELECT n.project_id, 'email.' || lower(n.status), now(), n.contact_id, n.campaign_id, n.workflow_id, left(n.subject, 998),
           jsonb_build_object('emailId', n.id, 'to', n.to_email, 'error', n.error)
    FROM new_rows n WHERE n.status IN ('FAILED', 'SUPPRESSED')
  ; RETURN NULL
; END $$;

-- Only rows whose counted columns changed are read (the sender's status updates change none).
CREATE FUNCTION ms_emails_updated() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  PERFORM ms_apply_email_deltas(ARRAY(
    SELECT ms_email_fact_deltas(ARRAY(
      SELECT ROW(o.project_id, o.campaign_id, o.workflow_id, o.to_email, o.created_at, o.sent_at, o.delivered_at, o.opened_at,
                 o.clicked_at, o.bounced_at, o.complained_at)::ms_email_fact
      FROM old_rows o JOIN new_rows n USING (id)
      WHERE (o.project_id, o.campaign_id, o.workflow_id, o.to_email, o.created_at, o.sent_at, o.delivered_at, o.opened_at, o.clicked_at,
             o.bounced_at, o.complained_at)
            IS DISTINCT FROM (n.project_id, n.campaign_id, n.workflow_id, n.to_email, n.created_at, n.sent_at, n.delivered_at, n.opened_at,
             n.clicked_at, n.bounced_at, n.complained_at)), -1)
    UNION ALL
    SELECT ms_email_fact_deltas(ARRAY(
      SELECT ROW(n.project_id, n.campaign_id, n.workflow_id, n.to_email, n.created_at, n.sent_at, n.delivered_at, n.opened_at,
                 n.clicked_at, n.bounced_at, n.complained_at)::ms_email_fact
      FROM old_rows o JOIN new_rows n USING (id)
      WHERE (o.project_id, o.campaign_id, o.workflow_id, o.to_email, o.created_at, o.sent_at, o.delivered_at, o.opened_at, o.clicked_at,
             o.bounced_at, o.complained_at)
            IS DISTINCT FROM (n.project_id, n.campaign_id, n.workflow_id, n.to_email, n.created_at, n.sent_at, n.delivered_at, n.opened_at,
             n.clicked_at, n.bounced_at, n.complained_at)), 1)))
  ; INSERT INTO activity_log (project_id, type, occurred_at, contact_id, campaign_id, workflow_id, subject, data)
    SELECT n.project_id, 'email.' || lower(n.status), now(), n.contact_id, n.campaign_id, n.workflow_id, left(n.subject, 998),
           jsonb_build_object('emailId', n.id, 'to', n.to_email, 'error', n.error)
    FROM old_rows o JOIN new_rows n USING (id)
    WHERE n.status IN ('FAILED', 'SUPPRESSED') AND o.status IS DISTINCT FROM n.status
  ; RETURN NULL
; END $$;

CREATE TRIGGER emails_rollup_insert AFTER INSERT ON emails REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ms_emails_inserted();
CREATE TRIGGER emails_rollup_update AFTER UPDATE ON emails REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ms_emails_updated();

-- ------------------------------------------------------------------------------------------- events

CREATE TYPE ms_event_fact AS (
  project_id uuid, contact_id uuid, name text, created_at timestamptz, link text, email_id text, bounce_type text,
  campaign_id text, workflow_id text
);

CREATE FUNCTION ms_event_counter_deltas(facts ms_event_fact[], sign bigint) RETURNS SETOF ms_counter_delta LANGUAGE sql STABLE AS $$
  SELECT f.project_id, 'type', 'ALL', ms_activity_type(f.name), f.created_at, sign FROM unnest(facts) f
  UNION ALL
  SELECT f.project_id, 'event', 'ALL', f.name, f.created_at, sign FROM unnest(facts) f WHERE ms_activity_type(f.name) = 'event'
  UNION ALL
  SELECT f.project_id, 'link', s.stream, f.link, f.created_at, sign
  FROM unnest(facts) f
  CROSS JOIN LATERAL (VALUES ('ALL'), (ms_email_stream(f.campaign_id IS NOT NULL, f.workflow_id IS NOT NULL))) s(stream)
  WHERE f.name = 'email.click' AND f.link IS NOT NULL
$$;

-- Bounce types live on the bounce events (the email row has none); an unsubscribe is attributed to the
-- last mail the contact was sent at or before it (its stream, campaign and domain), if any.
CREATE FUNCTION ms_event_email_deltas(facts ms_event_fact[], sign bigint) RETURNS SETOF ms_email_delta LANGUAGE sql STABLE AS $$
  SELECT f.project_id, ms_email_stream(e.campaign_id IS NOT NULL, e.workflow_id IS NOT NULL), e.campaign_id, ms_email_domain(e.to_email),
         CASE WHEN f.bounce_type = 'Permanent' THEN 'hard_bounced' ELSE 'soft_bounced' END, f.created_at, sign
  FROM unnest(facts) f JOIN emails e ON e.id = ms_try_uuid(f.email_id) AND e.project_id = f.project_id
  WHERE f.name = 'email.bounce'
  UNION ALL
  SELECT f.project_id, CASE WHEN last.found THEN ms_email_stream(last.campaign_id IS NOT NULL, last.workflow_id IS NOT NULL) END,
         last.campaign_id, ms_email_domain(last.to_email), 'unsubscribed', f.created_at, sign
  FROM unnest(facts) f
  LEFT JOIN LATERAL (
    SELECT true AS found, e.campaign_id, e.workflow_id, e.to_email FROM emails e
    WHERE e.contact_id = f.contact_id AND e.project_id = f.project_id AND e.sent_at <= f.created_at
    ORDER BY e.sent_at DESC, e.id DESC LIMIT 1
  ) last ON true
  WHERE f.name = 'contact.unsubscribed'
$$;

CREATE FUNCTION ms_apply_event_facts(facts ms_event_fact[], sign bigint) RETURNS void LANGUAGE sql AS $$
  SELECT ms_apply_counter_deltas(ARRAY(SELECT ms_event_counter_deltas(facts, sign))),
         ms_apply_email_deltas(ARRAY(SELECT ms_event_email_deltas(facts, sign)))
$$;

CREATE FUNCTION ms_events_inserted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  PERFORM ms_apply_event_facts(ARRAY(
    SELECT ROW(n.project_id, n.contact_id, n.name, n.created_at, n.data->>'link', n.data->>'emailId', n.data->>'bounceType',
               n.data->>'campaignId', n.data->>'workflowId')::ms_event_fact
    FROM new_rows n), 1)
  ; RETURN NULL
; END $$;

-- Deleting events (DELETE /events/:name) takes their counts back; a project being deleted takes its rollups with it.
CREATE FUNCTION ms_events_deleted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  PERFORM ms_apply_event_facts(ARRAY(
    SELECT ROW(o.project_id, o.contact_id, o.name, o.created_at, o.data->>'link', o.data->>'emailId', o.data->>'bounceType',
               o.data->>'campaignId', o.data->>'workflowId')::ms_event_fact
    FROM old_rows o WHERE EXISTS (SELECT 1 FROM projects p WHERE p.id = o.project_id)), -1)
  ; RETURN NULL
; END $$;

CREATE TRIGGER events_rollup_insert AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ms_events_inserted();
CREATE TRIGGER events_rollup_delete AFTER DELETE ON events REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ms_events_deleted();

-- ----------------------------------------------------------------------------------------- contacts

-- contact.created counts the contacts that exist, by creation time (a deleted contact leaves the feed and the counts).
CREATE FUNCTION ms_contacts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  PERFORM ms_apply_counter_deltas(ARRAY(
    SELECT ROW(n.project_id, 'type', 'ALL', 'contact.created', n.created_at, 1)::ms_counter_delta FROM new_rows n))
  ; RETURN NULL
; END $$;

CREATE FUNCTION ms_contacts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  PERFORM ms_apply_counter_deltas(ARRAY(
    SELECT ROW(o.project_id, 'type', 'ALL', 'contact.created', o.created_at, -1)::ms_counter_delta FROM old_rows o
    WHERE EXISTS (SELECT 1 FROM projects p WHERE p.id = o.project_id)))
  ; RETURN NULL
; END $$;

CREATE TRIGGER contacts_rollup_insert AFTER INSERT ON contacts REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ms_contacts_inserted();
CREATE TRIGGER contacts_rollup_delete AFTER DELETE ON contacts REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ms_contacts_deleted();

-- ------------------------------------------------------------------- workflow executions, campaigns

CREATE FUNCTION ms_execution_outcome(status text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN status = 'FAILED' THEN 'workflow.failed' WHEN status IN ('COMPLETED', 'EXITED', 'CANCELLED') THEN 'workflow.finished' END $$;

CREATE FUNCTION ms_executions_inserted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  INSERT INTO activity_log (project_id, type, occurred_at, contact_id, workflow_id, data)
  SELECT n.project_id, 'workflow.started', n.started_at, n.contact_id, n.workflow_id, jsonb_build_object('executionId', n.id)
  FROM new_rows n
  UNION ALL
  SELECT n.project_id, ms_execution_outcome(n.status), COALESCE(n.finished_at, now()), n.contact_id, n.workflow_id,
         jsonb_strip_nulls(jsonb_build_object('executionId', n.id, 'status', n.status, 'error', n.error, 'exitReason', n.exit_reason))
  FROM new_rows n WHERE ms_execution_outcome(n.status) IS NOT NULL
  ; RETURN NULL
; END $$;

CREATE FUNCTION ms_executions_updated() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  INSERT INTO activity_log (project_id, type, occurred_at, contact_id, workflow_id, data)
  SELECT n.project_id, ms_execution_outcome(n.status), COALESCE(n.finished_at, now()), n.contact_id, n.workflow_id,
         jsonb_strip_nulls(jsonb_build_object('executionId', n.id, 'status', n.status, 'error', n.error, 'exitReason', n.exit_reason))
  FROM old_rows o JOIN new_rows n USING (id)
  WHERE ms_execution_outcome(n.status) IS NOT NULL AND ms_execution_outcome(o.status) IS NULL
  ; RETURN NULL
; END $$;

CREATE TRIGGER workflow_executions_activity_insert AFTER INSERT ON workflow_executions REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ms_executions_inserted();
CREATE TRIGGER workflow_executions_activity_update AFTER UPDATE ON workflow_executions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ms_executions_updated();

CREATE FUNCTION ms_campaigns_updated() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  INSERT INTO activity_log (project_id, type, occurred_at, campaign_id, subject, data)
  SELECT n.project_id, 'campaign.' || lower(n.status), now(), n.id, left(n.subject, 998),
         jsonb_strip_nulls(jsonb_build_object('from', o.status, 'to', n.status, 'scheduledFor', n.scheduled_for))
  FROM old_rows o JOIN new_rows n USING (id)
  WHERE o.status IS DISTINCT FROM n.status AND n.status IN ('SCHEDULED', 'SENDING', 'SENT', 'CANCELLED')
  ; RETURN NULL
; END $$;

CREATE TRIGGER campaigns_activity_update AFTER UPDATE ON campaigns REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ms_campaigns_updated();

CREATE FUNCTION ms_activity_log_inserted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  PERFORM ms_apply_counter_deltas(ARRAY(
    SELECT ROW(n.project_id, 'type', 'ALL', n.type, n.occurred_at, 1)::ms_counter_delta FROM new_rows n))
  ; RETURN NULL
; END $$;

CREATE TRIGGER activity_log_rollup_insert AFTER INSERT ON activity_log REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ms_activity_log_inserted();

-- ------------------------------------------------------------------------------------------ folding

-- Folds the shards of buckets closed before `closed_before` into shard 0 (one compactor at a time;
-- a writer adding to a closed bucket later just makes a new shard row, folded next time).
CREATE FUNCTION ms_compact_rollups(closed_before timestamptz) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  folded bigint := 0
  ; counted bigint := 0
; BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('ms_compact_rollups')) THEN RETURN 0
  ; END IF
  ; WITH taken AS (
    DELETE FROM analytics_email_rollups
    WHERE shard <> 0 AND bucket < closed_before AND bucket + make_interval(mins => grain) <= closed_before
    RETURNING *
  ), added AS (
    INSERT INTO analytics_email_rollups AS r (project_id, kind, stream, grain, bucket, key, shard, queued, sent, delivered, opened,
                                             clicked, bounced, hard_bounced, soft_bounced, complained, unsubscribed)
    SELECT project_id, kind, stream, grain, bucket, key, 0, sum(queued), sum(sent), sum(delivered), sum(opened), sum(clicked),
           sum(bounced), sum(hard_bounced), sum(soft_bounced), sum(complained), sum(unsubscribed)
    FROM taken GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (project_id, kind, stream, grain, bucket, key, shard) DO UPDATE SET
      queued = r.queued + EXCLUDED.queued, sent = r.sent + EXCLUDED.sent, delivered = r.delivered + EXCLUDED.delivered,
      opened = r.opened + EXCLUDED.opened, clicked = r.clicked + EXCLUDED.clicked, bounced = r.bounced + EXCLUDED.bounced,
      hard_bounced = r.hard_bounced + EXCLUDED.hard_bounced, soft_bounced = r.soft_bounced + EXCLUDED.soft_bounced,
      complained = r.complained + EXCLUDED.complained, unsubscribed = r.unsubscribed + EXCLUDED.unsubscribed
    RETURNING 1
  )
  SELECT count(*) INTO folded FROM taken
  ; WITH taken AS (
    DELETE FROM analytics_counters
    WHERE shard <> 0 AND bucket < closed_before AND bucket + make_interval(mins => grain) <= closed_before
    RETURNING *
  ), added AS (
    INSERT INTO analytics_counters AS r (project_id, kind, stream, grain, bucket, key, shard, n)
    SELECT project_id, kind, stream, grain, bucket, key, 0, sum(n) FROM taken GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (project_id, kind, stream, grain, bucket, key, shard) DO UPDATE SET n = r.n + EXCLUDED.n
    RETURNING 1
  )
  SELECT count(*) INTO counted FROM taken
  ; RETURN folded + counted
; END $$;

-- ----------------------------------------------------------------------------------------- backfill

-- Existing data, in batches of 20,000 rows by primary key, through the same functions the triggers use.
-- Failures and executions recorded before this migration enter the feed at the best time their rows keep.
DO $$
DECLARE
  last_id uuid := '00000000-0000-0000-0000-000000000000'
  ; next_id uuid
; BEGIN
  LOOP
    SELECT b.id INTO next_id FROM (SELECT id FROM emails WHERE id > last_id ORDER BY id LIMIT 20000) b ORDER BY b.id DESC LIMIT 1
    ; EXIT WHEN next_id IS NULL
    ; PERFORM ms_apply_email_deltas(ARRAY(SELECT ms_email_fact_deltas(ARRAY(
        SELECT ROW(e.project_id, e.campaign_id, e.workflow_id, e.to_email, e.created_at, e.sent_at, e.delivered_at, e.opened_at,
                   e.clicked_at, e.bounced_at, e.complained_at)::ms_email_fact
        FROM emails e WHERE e.id > last_id AND e.id <= next_id), 1)))
    ; INSERT INTO activity_log (project_id, type, occurred_at, contact_id, campaign_id, workflow_id, subject, data)
      SELECT e.project_id, 'email.' || lower(e.status), COALESCE(e.sent_at, e.next_attempt_at, e.created_at), e.contact_id, e.campaign_id,
             e.workflow_id, left(e.subject, 998), jsonb_build_object('emailId', e.id, 'to', e.to_email, 'error', e.error)
      FROM emails e WHERE e.id > last_id AND e.id <= next_id AND e.status IN ('FAILED', 'SUPPRESSED')
    ; last_id := next_id
  ; END LOOP
  ; last_id := '00000000-0000-0000-0000-000000000000'
  ; LOOP
    SELECT b.id INTO next_id FROM (SELECT id FROM events WHERE id > last_id ORDER BY id LIMIT 20000) b ORDER BY b.id DESC LIMIT 1
    ; EXIT WHEN next_id IS NULL
    ; PERFORM ms_apply_event_facts(ARRAY(
        SELECT ROW(e.project_id, e.contact_id, e.name, e.created_at, e.data->>'link', e.data->>'emailId', e.data->>'bounceType',
                   e.data->>'campaignId', e.data->>'workflowId')::ms_event_fact
        FROM events e WHERE e.id > last_id AND e.id <= next_id), 1)
    ; last_id := next_id
  ; END LOOP
  ; last_id := '00000000-0000-0000-0000-000000000000'
  ; LOOP
    SELECT b.id INTO next_id FROM (SELECT id FROM contacts WHERE id > last_id ORDER BY id LIMIT 20000) b ORDER BY b.id DESC LIMIT 1
    ; EXIT WHEN next_id IS NULL
    ; PERFORM ms_apply_counter_deltas(ARRAY(
        SELECT ROW(c.project_id, 'type', 'ALL', 'contact.created', c.created_at, 1)::ms_counter_delta
        FROM contacts c WHERE c.id > last_id AND c.id <= next_id))
    ; last_id := next_id
  ; END LOOP
  ; INSERT INTO activity_log (project_id, type, occurred_at, contact_id, workflow_id, data)
    SELECT x.project_id, 'workflow.started', x.started_at, x.contact_id, x.workflow_id, jsonb_build_object('executionId', x.id)
    FROM workflow_executions x
    UNION ALL
    SELECT x.project_id, ms_execution_outcome(x.status), COALESCE(x.finished_at, x.updated_at), x.contact_id, x.workflow_id,
           jsonb_strip_nulls(jsonb_build_object('executionId', x.id, 'status', x.status, 'error', x.error, 'exitReason', x.exit_reason))
    FROM workflow_executions x WHERE ms_execution_outcome(x.status) IS NOT NULL
  ; INSERT INTO activity_log (project_id, type, occurred_at, campaign_id, subject, data)
    SELECT c.project_id, s.type, s.at, c.id, left(c.subject, 998), '{}'::jsonb
    FROM campaigns c
    CROSS JOIN LATERAL (VALUES ('campaign.sending', c.sending_started_at), ('campaign.sent', c.sent_at), ('campaign.cancelled', c.cancelled_at)) s(type, at)
    WHERE s.at IS NOT NULL
; END $$;
