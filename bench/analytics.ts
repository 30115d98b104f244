/**
 * `npm run bench -- analytics`: analytics answered from rollups (issue #17). One project holds
 * BENCH_ANALYTICS_EMAILS emails (default 1,000,000) and BENCH_ANALYTICS_EVENTS events (5,000,000) spread
 * over 400 days, generated set-wise in SQL (the triggers keep the rollups as they are written), then every
 * analytics endpoint is timed over HTTP (p50/p99 of BENCH_ANALYTICS_RUNS sequential requests, default 50)
 * for a 30-day and a 365-day range in Europe/Berlin (local days: the hourly rows are read). Baseline, in the
 * same run and database: the same answer computed by GROUP BY over the raw tables (BENCH_ANALYTICS_BASELINE_RUNS
 * runs each, default 3). Targets: every endpoint p99 ≤ 50 ms and ≥ 50× faster than the raw aggregation.
 */
import { withEnvironment } from "./harness/environment.ts"
import { setting } from "./harness/settings.ts"
import { percentile, ratio, round } from "./harness/stats.ts"

const TARGETS = { p99Ms: 50, speedup: 50 }
const TZ = "Europe/Berlin"
const DAYS = 400
const SECONDS = DAYS * 86_400
const CONTACTS = 200_000

const METRIC_ROWS = ["sent", "delivered", "opened", "clicked", "bounced", "complained"]
  .map((m) => `SELECT '${m}' AS metric, ${m}_at AS at FROM emails WHERE project_id = $1 AND ${m}_at >= $4 AND ${m}_at < $3`)
  .concat(
    `SELECT 'unsubscribed', created_at FROM events WHERE project_id = $1 AND name = 'contact.unsubscribed' AND created_at >= $4 AND created_at < $3`
  )
  .join(" UNION ALL ")
const CUSTOM =
  `name NOT LIKE 'email.%' AND name NOT IN ('contact.subscribed', 'contact.unsubscribed') AND name !~ '^segment\\.[^.]+\\.(entry|exit)$'`

/**
 * The raw aggregations: $1 project, $2 from, $3 to, $4 the previous period's from, $5 the zone.
 * Each computes what its endpoint answers, from emails, events and contacts.
 */
const BASELINES: Record<string, string> = {
  timeseries: `SELECT date_trunc('day', at AT TIME ZONE $5) AS day, metric, count(*) FROM (${METRIC_ROWS}) m GROUP BY 1, 2`,
  overview: `SELECT at >= $2 AS current, metric, count(*) FROM (${METRIC_ROWS}
               UNION ALL SELECT 'newContacts', created_at FROM contacts WHERE project_id = $1 AND created_at >= $4 AND created_at < $3) m GROUP BY 1, 2`,
  // Unsubscribes attributed once (each to the last mail its contact was sent before it), then joined.
  "top-campaigns": `
    WITH unsubscribes AS (
      SELECT last.campaign_id, count(*) AS n FROM events ev
      JOIN LATERAL (SELECT x.campaign_id FROM emails x WHERE x.contact_id = ev.contact_id AND x.project_id = $1 AND x.sent_at <= ev.created_at
                    ORDER BY x.sent_at DESC, x.id DESC LIMIT 1) last ON true
      WHERE ev.project_id = $1 AND ev.name = 'contact.unsubscribed' AND ev.created_at >= $2 AND ev.created_at < $3 GROUP BY 1)
    SELECT e.campaign_id, count(*) FILTER (WHERE e.created_at >= $2 AND e.created_at < $3) AS recipients,
           ${
    ["sent", "delivered", "opened", "clicked", "bounced", "complained"].map((m) =>
      `count(*) FILTER (WHERE e.${m}_at >= $2 AND e.${m}_at < $3) AS ${m}`
    ).join(", ")
  },
           COALESCE(max(u.n), 0) AS unsubscribed
    FROM emails e LEFT JOIN unsubscribes u USING (campaign_id)
    WHERE e.project_id = $1 AND e.campaign_id IS NOT NULL GROUP BY e.campaign_id ORDER BY opened DESC LIMIT 5`,
  "top-events": `SELECT name, count(*) FILTER (WHERE created_at >= $2) AS count, count(*) FILTER (WHERE created_at < $2) AS previous
                 FROM events WHERE project_id = $1 AND created_at >= $4 AND created_at < $3 AND ${CUSTOM} AND $5::text IS NOT NULL
                 GROUP BY name ORDER BY 2 DESC LIMIT 10`,
  deliverability: `
    SELECT d.domain, d.sent, d.delivered, d.bounced, d.complained, b.hard, b.soft FROM (
      SELECT lower(substring(e.to_email from '@([^@]*)$')) AS domain,
             ${
    ["sent", "delivered", "bounced", "complained"].map((m) => `count(*) FILTER (WHERE e.${m}_at >= $2 AND e.${m}_at < $3) AS ${m}`).join(
      ", "
    )
  }
      FROM emails e WHERE e.project_id = $1 GROUP BY 1) d
    LEFT JOIN (
      SELECT lower(substring(e.to_email from '@([^@]*)$')) AS domain, count(*) FILTER (WHERE ev.data->>'bounceType' = 'Permanent') AS hard,
             count(*) FILTER (WHERE ev.data->>'bounceType' <> 'Permanent') AS soft
      FROM events ev JOIN emails e ON e.id = (ev.data->>'emailId')::uuid
      WHERE ev.project_id = $1 AND ev.name = 'email.bounce' AND ev.created_at >= $2 AND ev.created_at < $3 GROUP BY 1) b USING (domain)
    WHERE $4::timestamptz IS NOT NULL AND $5::text IS NOT NULL ORDER BY d.sent DESC LIMIT 20`,
  links:
    `SELECT data->>'link' AS url, count(*) FROM events WHERE project_id = $1 AND name = 'email.click' AND created_at >= $2 AND created_at < $3
          AND $4::timestamptz IS NOT NULL AND $5::text IS NOT NULL GROUP BY 1 ORDER BY 2 DESC LIMIT 20`,
  heatmap:
    `SELECT extract(isodow FROM at AT TIME ZONE $5) AS weekday, extract(hour FROM at AT TIME ZONE $5) AS hour, metric, count(*) FROM (
              SELECT 'opens' AS metric, opened_at AS at FROM emails WHERE project_id = $1 AND opened_at >= $2 AND opened_at < $3
              UNION ALL SELECT 'clicks', clicked_at FROM emails WHERE project_id = $1 AND clicked_at >= $2 AND clicked_at < $3) m
            WHERE $4::timestamptz IS NOT NULL GROUP BY 1, 2, 3`,
  audience:
    `SELECT day, sum(new) OVER (ORDER BY day) + (SELECT count(*) FROM contacts WHERE project_id = $1 AND created_at < $2) AS total, new, unsubscribed FROM (
               SELECT date_trunc('day', at AT TIME ZONE $5) AS day, count(*) FILTER (WHERE kind = 'new') AS new, count(*) FILTER (WHERE kind = 'unsub') AS unsubscribed FROM (
                 SELECT 'new' AS kind, created_at AS at FROM contacts WHERE project_id = $1 AND created_at >= $2 AND created_at < $3
                 UNION ALL SELECT 'unsub', created_at FROM events WHERE project_id = $1 AND name = 'contact.unsubscribed' AND created_at >= $2 AND created_at < $3) x
               WHERE $4::timestamptz IS NOT NULL GROUP BY 1) d`,
  "activity/stats": `SELECT type, count(*) FROM (
      SELECT ms_activity_type(name) AS type FROM events WHERE project_id = $1 AND created_at >= $2 AND created_at < $3
      UNION ALL SELECT 'contact.created' FROM contacts WHERE project_id = $1 AND created_at >= $2 AND created_at < $3
      UNION ALL SELECT type FROM activity_log WHERE project_id = $1 AND occurred_at >= $2 AND occurred_at < $3) x
    WHERE $4::timestamptz IS NOT NULL AND $5::text IS NOT NULL GROUP BY 1`
}
BASELINES["campaign-stats"] = BASELINES["top-campaigns"]!.replace("ORDER BY opened DESC LIMIT 5", "ORDER BY sent DESC LIMIT 100")

const PATHS: Record<string, string> = {
  timeseries: "/analytics/timeseries",
  overview: "/analytics/overview",
  "top-campaigns": "/analytics/top-campaigns",
  "campaign-stats": "/analytics/campaign-stats",
  "top-events": "/analytics/top-events",
  deliverability: "/analytics/deliverability",
  links: "/analytics/links",
  heatmap: "/analytics/heatmap",
  audience: "/analytics/audience",
  "activity/stats": "/activity/stats"
}

const timed = async (work: () => Promise<unknown>) => {
  const started = performance.now()
  await work()
  return performance.now() - started
}

const summary = (samples: Array<number>) => {
  const sorted = [...samples].sort((a, b) => a - b)
  return { p50Ms: round(percentile(sorted, 50), 2), p99Ms: round(percentile(sorted, 99), 2) }
}

export const run = () =>
  withEnvironment(async (env) => {
    const emails = setting("BENCH_ANALYTICS_EMAILS", 1_000_000)
    const events = setting("BENCH_ANALYTICS_EVENTS", 5_000_000)
    const runs = setting("BENCH_ANALYTICS_RUNS", 50)
    const baselineRuns = setting("BENCH_ANALYTICS_BASELINE_RUNS", 3)
    const api = await env.start("api")
    const projectId = env.project.id
    const key = env.project.secretKey

    // ---- data, set-wise: contacts, 50 campaigns, mail and events spread over 400 days before now
    const generation = performance.now()
    await env.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, created_at, updated_at)
      SELECT md5('c' || i)::uuid, $1, 'u' || i || '@d' || (i % 40) || '.example', true, now() - ((i::bigint * 7919) % ${SECONDS}) * interval '1 second', now()
      FROM generate_series(0, ${CONTACTS - 1}) i`,
      [projectId]
    )
    await env.query(
      `INSERT INTO campaigns (id, project_id, partition, name, subject, body, from_email, audience_type, status, created_at, updated_at)
      SELECT md5('k' || i)::uuid, $1, 0, 'Campaign ' || i, 's', 'b', 'f@x.example', 'ALL', 'SENT', now(), now() FROM generate_series(0, 49) i`,
      [projectId]
    )
    const chunk = 100_000
    for (let from = 0; from < emails; from += chunk) {
      // Every email sent; 90% delivered, 40% opened, 10% clicked, 2% bounced, 0.2% complained.
      await env.query(
        `INSERT INTO emails (id, project_id, partition, contact_id, to_email, from_email, subject, html, type, priority, message_id,
                         campaign_id, workflow_id, status, created_at, sent_at, delivered_at, opened_at, clicked_at, bounced_at, complained_at)
        SELECT md5('e' || i)::uuid, $1, 0, md5('c' || (i % ${CONTACTS}))::uuid, 'u' || (i % ${CONTACTS}) || '@d' || (i % 40) || '.example',
               'f@x.example', 'Subject', '', 'MARKETING', 1, 'm' || i,
               CASE WHEN i % 3 = 0 THEN md5('k' || ((i / 3) % 50))::uuid END, CASE WHEN i % 3 = 1 THEN md5('w')::uuid END, 'SENT',
               t, t + interval '1 minute', CASE WHEN i % 10 < 9 THEN t + interval '2 minutes' END, CASE WHEN i % 10 < 4 THEN t + interval '1 hour' END,
               CASE WHEN i % 10 = 0 THEN t + interval '2 hours' END, CASE WHEN i % 50 = 9 THEN t + interval '5 minutes' END,
               CASE WHEN i % 500 = 8 THEN t + interval '1 day' END
        FROM generate_series(${from}, ${Math.min(emails, from + chunk) - 1}) i
        CROSS JOIN LATERAL (SELECT now() - ((i::bigint * 104729) % ${SECONDS}) * interval '1 second' AS t) x`,
        [projectId]
      )
    }
    const eventChunk = 250_000
    for (let from = 0; from < events; from += eventChunk) {
      // 20% email.sent, 16% email.delivery, 10% email.open, 4% email.click (20 links), 1% unsubscribes,
      // 1% segment entries, 48% custom events of 30 names.
      await env.query(
        `INSERT INTO events (id, project_id, contact_id, name, data, created_at)
        SELECT md5('v' || i)::uuid, $1, md5('c' || (i % ${CONTACTS}))::uuid, n.name, n.data, now() - ((i::bigint * 15485863) % ${SECONDS}) * interval '1 second'
        FROM generate_series(${from}, ${Math.min(events, from + eventChunk) - 1}) i
        CROSS JOIN LATERAL (SELECT CASE
            WHEN i % 100 < 20 THEN 'email.sent' WHEN i % 100 < 36 THEN 'email.delivery' WHEN i % 100 < 46 THEN 'email.open'
            WHEN i % 100 < 50 THEN 'email.click' WHEN i % 100 = 50 THEN 'contact.unsubscribed' WHEN i % 100 = 51 THEN 'segment.vip.entry'
            ELSE 'event_' || (i % 30) END AS name,
          CASE WHEN i % 100 BETWEEN 46 AND 49 THEN jsonb_build_object('emailId', md5('e' || i)::uuid, 'link', 'https://l' || (i % 20) || '.example/p', 'campaignId', md5('k' || (i % 50))::uuid)
               WHEN i % 100 < 46 THEN jsonb_build_object('emailId', md5('e' || i)::uuid, 'subject', 'Subject')
               ELSE jsonb_build_object('n', i % 7) END AS data) n`,
        [projectId]
      )
    }
    const generatedSeconds = round((performance.now() - generation) / 1000, 1)
    const folded = await env.query<{ n: number }>(`SELECT ms_compact_rollups(now() - interval '2 minutes')::float8 AS n`)
    await env.query(`VACUUM ANALYZE`)
    const sizes = (await env.query<{ table: string; rows: number }>(`
      SELECT 'emails' AS table, count(*)::float8 AS rows FROM emails UNION ALL SELECT 'events', count(*)::float8 FROM events
      UNION ALL SELECT 'analytics_email_rollups', count(*)::float8 FROM analytics_email_rollups
      UNION ALL SELECT 'analytics_counters', count(*)::float8 FROM analytics_counters`)).map((row) => [row.table, Number(row.rows)])

    // ---- measurements
    const results: Record<string, unknown> = {}
    for (const days of [30, 365]) {
      const to = new Date()
      const query = `from=${new Date(to.getTime() - days * 86_400_000).toISOString()}&to=${to.toISOString()}&tz=${TZ}`
      for (const [name, path] of Object.entries(PATHS)) {
        const url = `${api.url}${path}?${query}`
        const fetchOnce = async () => {
          const response = await fetch(url, { headers: { authorization: `Bearer ${key}` } })
          const body: any = await response.json()
          if (response.status !== 200) throw new Error(`${path}: ${response.status} ${JSON.stringify(body)}`)
          return body
        }
        const answer = await fetchOnce()
        for (let i = 0; i < 5; i++) await fetchOnce()
        const ours: Array<number> = []
        for (let i = 0; i < runs; i++) ours.push(await timed(fetchOnce))
        // The same range the endpoint answered (widened to whole local days), and the previous period.
        const from = Date.parse(answer.from)
        const end = Date.parse(answer.to)
        const params = [projectId, new Date(from).toISOString(), new Date(end).toISOString(), new Date(2 * from - end).toISOString(), TZ]
        const raw: Array<number> = []
        // Typed once outside, so every query may use any of the parameters.
        const baseline = `SELECT * FROM (${BASELINES[name]!}) answer
          WHERE $1::uuid IS NOT NULL AND $2::timestamptz IS NOT NULL AND $3::timestamptz IS NOT NULL AND $4::timestamptz IS NOT NULL AND $5::text IS NOT NULL`
        for (let i = 0; i < baselineRuns; i++) raw.push(await timed(() => env.query(baseline, params)))
        const mine = summary(ours)
        const theirs = summary(raw)
        results[`${name} ${days}d`] = {
          ours: mine,
          rawGroupBy: theirs,
          speedupP50: ratio(theirs.p50Ms, mine.p50Ms),
          meetsTargets: mine.p99Ms <= TARGETS.p99Ms && theirs.p50Ms / mine.p50Ms >= TARGETS.speedup
        }
      }
    }
    return {
      description: `Analytics endpoints over HTTP (sequential requests, ${runs} per endpoint and range, after 5 warm-ups; tz ${TZ}) ` +
        `vs the same answer by GROUP BY over the raw tables (${baselineRuns} runs each), one project with ${emails} emails, ${events} events, ` +
        `${CONTACTS} contacts over ${DAYS} days`,
      targets: TARGETS,
      data: {
        emails,
        events,
        contacts: CONTACTS,
        generatedSeconds,
        foldedRows: Number(folded[0]?.n ?? 0),
        rows: Object.fromEntries(sizes)
      },
      results
    }
  })
