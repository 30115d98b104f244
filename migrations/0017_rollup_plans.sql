-- The analytics rollup functions of 0013 in PL/pgSQL (issue #17: their cost per tracked event).
--
-- 0013 wrote them in LANGUAGE sql. A SQL function that Postgres cannot inline (these insert, or are
-- called in a select list) is parsed and planned again on every call: each events insert paid for
-- planning five functions, about 3 ms of Postgres CPU per statement, which with lanes' small batches
-- multiplied the database's cost per tracked event by about five. PL/pgSQL keeps each statement's plan
-- for the life of the connection, so a trigger now costs its execution only. Bodies and signatures are
-- unchanged.

CREATE OR REPLACE FUNCTION ms_apply_email_deltas(deltas ms_email_delta[]) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
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
  ; END $$;

CREATE OR REPLACE FUNCTION ms_apply_counter_deltas(deltas ms_counter_delta[]) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
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
  ; END $$;

CREATE OR REPLACE FUNCTION ms_email_fact_deltas(facts ms_email_fact[], sign bigint) RETURNS SETOF ms_email_delta LANGUAGE plpgsql STABLE AS $$ BEGIN
  RETURN QUERY
  SELECT f.project_id, ms_email_stream(f.campaign_id IS NOT NULL, f.workflow_id IS NOT NULL), f.campaign_id, ms_email_domain(f.to_email),
         m.metric, m.at, sign
  FROM unnest(facts) f
  CROSS JOIN LATERAL (VALUES ('queued', f.created_at), ('sent', f.sent_at), ('delivered', f.delivered_at), ('opened', f.opened_at),
                             ('clicked', f.clicked_at), ('bounced', f.bounced_at), ('complained', f.complained_at)) m(metric, at)
  WHERE m.at IS NOT NULL
  ; END $$;

CREATE OR REPLACE FUNCTION ms_event_counter_deltas(facts ms_event_fact[], sign bigint) RETURNS SETOF ms_counter_delta LANGUAGE plpgsql STABLE AS $$ BEGIN
  RETURN QUERY
  SELECT f.project_id, 'type', 'ALL', ms_activity_type(f.name), f.created_at, sign FROM unnest(facts) f
  UNION ALL
  SELECT f.project_id, 'event', 'ALL', f.name, f.created_at, sign FROM unnest(facts) f WHERE ms_activity_type(f.name) = 'event'
  UNION ALL
  SELECT f.project_id, 'link', s.stream, f.link, f.created_at, sign
  FROM unnest(facts) f
  CROSS JOIN LATERAL (VALUES ('ALL'), (ms_email_stream(f.campaign_id IS NOT NULL, f.workflow_id IS NOT NULL))) s(stream)
  WHERE f.name = 'email.click' AND f.link IS NOT NULL
  ; END $$;

CREATE OR REPLACE FUNCTION ms_event_email_deltas(facts ms_event_fact[], sign bigint) RETURNS SETOF ms_email_delta LANGUAGE plpgsql STABLE AS $$ BEGIN
  RETURN QUERY
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
  ; END $$;

CREATE OR REPLACE FUNCTION ms_apply_event_facts(facts ms_event_fact[], sign bigint) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  PERFORM ms_apply_counter_deltas(ARRAY(SELECT ms_event_counter_deltas(facts, sign)))
  -- Most batches hold neither bounces nor unsubscribes: skip their lookups.
  ; IF EXISTS (SELECT 1 FROM unnest(facts) f WHERE f.name IN ('email.bounce', 'contact.unsubscribed')) THEN
      PERFORM ms_apply_email_deltas(ARRAY(SELECT ms_event_email_deltas(facts, sign)))
    ; END IF
  ; END $$;
