/**
 * Analytics and activity endpoints against the raw tables: random histories of mail, events and
 * contacts (fast-check) are written straight to Postgres (the triggers keep the rollups), then every
 * endpoint is compared with a direct SQL aggregation over emails / events / contacts, in UTC, in a zone
 * with DST (America/New_York, across its spring change) and in a half-hour zone (Asia/Kolkata).
 */
import fc from "fast-check"
import { randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import pg from "pg"
import { describe, expect, it } from "vitest"
import { request, type StackContext, withStack } from "../support/stack.ts"

let context: StackContext
withStack("api", (ready) => {
  context = ready
})

const T0 = Date.UTC(2024, 2, 5)
const WINDOW = 10 * 24 * 3_600_000
const iso = (time: number) => new Date(time).toISOString()
const q = <T = Record<string, any>>(text: string, params: Array<unknown> = []) => context.stack.query<T>(text, params)
/** The first row of a query that always answers one. */
const one = async (text: string, params: Array<unknown> = []) => (await q(text, params))[0]!
const get = async (path: string, key = context.project.secretKey) => {
  const response = await request(context.api.url, "GET", path, { key })
  if (response.status !== 200) throw new Error(`${path}: ${response.status} ${response.text}`)
  return response.json
}

// ------------------------------------------------------------------------------------------ histories

const DOMAINS = ["gmail.com", "Yahoo.com", "corp.example"]
const LINKS = ["https://a.example/x", "https://b.example/y?z=1"]
const NAMES = ["purchase", "signup", "view"]

const offset = fc.integer({ min: 0, max: WINDOW })
const step = fc.option(fc.integer({ min: 0, max: 36 * 3_600_000 }), { nil: undefined })
const emailArb = fc.record({
  contact: fc.integer({ min: 0, max: 5 }),
  campaign: fc.option(fc.integer({ min: 0, max: 1 }), { nil: undefined }),
  workflow: fc.boolean(),
  domain: fc.constantFrom(...DOMAINS),
  created: offset,
  steps: fc.tuple(step, step, step, step, step, step),
  viaUpdates: fc.boolean()
})
const eventArb = fc.oneof(
  fc.record({ kind: fc.constant("custom" as const), name: fc.constantFrom(...NAMES), contact: fc.integer({ min: 0, max: 5 }), at: offset }),
  fc.record({ kind: fc.constant("click" as const), link: fc.constantFrom(...LINKS), email: fc.nat(), at: offset }),
  fc.record({
    kind: fc.constant("bounce" as const),
    type: fc.constantFrom("Permanent", "Transient", "Undetermined"),
    email: fc.nat(),
    at: offset
  }),
  fc.record({ kind: fc.constant("unsubscribe" as const), contact: fc.integer({ min: 0, max: 5 }), at: offset }),
  fc.record({ kind: fc.constant("segment" as const), contact: fc.integer({ min: 0, max: 5 }), at: offset })
)
const historyOf = (least: { emails: number; events: number }) =>
  fc.record({
    contacts: fc.array(offset, { minLength: 6, maxLength: 6 }),
    emails: fc.array(emailArb, { minLength: least.emails, maxLength: 25 }),
    events: fc.array(eventArb, { minLength: least.events, maxLength: 40 }),
    deleteViews: fc.boolean()
  })
const historyArb = historyOf({ emails: 0, events: 0 })
/** One history busy enough to show every kind of item. */
const busyHistory = (seed: number) => fc.sample(historyOf({ emails: 8, events: 25 }), { numRuns: 1, seed })[0]!
type History = typeof historyArb extends fc.Arbitrary<infer T> ? T : never

/** Empties the project and writes the history the way the service would (triggers do the counting). */
const writeHistory = async (projectId: string, history: History) => {
  for (
    const table of [
      "events",
      "emails",
      "campaigns",
      "workflows",
      "contacts",
      "activity_log",
      "analytics_email_rollups",
      "analytics_counters"
    ]
  ) {
    await q(`DELETE FROM ${table} WHERE project_id = $1`, [projectId])
  }
  const contacts = history.contacts.map((created, index) => ({
    id: randomUUID(),
    email: `c${index}@${DOMAINS[index % 3]!.toLowerCase()}`,
    created: T0 + created
  }))
  await q(
    `INSERT INTO contacts (id, project_id, email, subscribed, created_at, updated_at)
           SELECT x.id, $1, x.email, true, x.created, x.created FROM jsonb_to_recordset($2::jsonb) x(id uuid, email text, created timestamptz)`,
    [projectId, JSON.stringify(contacts.map((c) => ({ ...c, created: iso(c.created) })))]
  )
  const campaigns = [randomUUID(), randomUUID()]
  for (const [index, id] of campaigns.entries()) {
    await q(
      `INSERT INTO campaigns (id, project_id, partition, name, subject, body, from_email, audience_type, status, created_at, updated_at)
             VALUES ($1, $2, 0, $3, 's', 'b', 'f@x.example', 'ALL', 'DRAFT', now(), now())`,
      [id, projectId, `Campaign ${index}`]
    )
    await q(`UPDATE campaigns SET status = 'SENDING' WHERE id = $1`, [id])
  }
  const workflowId = randomUUID()
  await q(`INSERT INTO workflows (id, project_id, name, created_at, updated_at) VALUES ($1, $2, 'Flow', now(), now())`, [
    workflowId,
    projectId
  ])
  const emails = history.emails.map((email, index) => {
    const id = randomUUID()
    let at = T0 + email.created
    const stamps = email.steps.map((gap) => (gap === undefined ? null : (at += gap)))
    // Each stage needs the one before (a mail is opened only once sent, …); bounce and complaint may follow any.
    for (let i = 1; i < 4; i++) if (stamps[i - 1] === null) stamps[i] = null
    return {
      id,
      contact: contacts[email.contact]!.id,
      to: `c${email.contact}.${index}@${email.domain}`,
      campaign: email.campaign === undefined ? null : campaigns[email.campaign]!,
      workflow: email.campaign === undefined && email.workflow ? workflowId : null,
      created: iso(T0 + email.created),
      stamps: stamps.map((stamp) => (stamp === null ? null : iso(stamp))),
      viaUpdates: email.viaUpdates
    }
  })
  const columns = ["sent_at", "delivered_at", "opened_at", "clicked_at", "bounced_at", "complained_at"]
  for (const email of emails) {
    const values = email.viaUpdates ? [null, null, null, null, null, null] : email.stamps
    await q(
      `INSERT INTO emails (id, project_id, partition, contact_id, to_email, from_email, subject, html, type, priority, message_id,
                                 campaign_id, workflow_id, created_at, ${columns.join(", ")})
             VALUES ($1::uuid, $2, 0, $3, $4, 'f@x.example', 'Hello', '<p>', 'MARKETING', 1, $1::text, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [email.id, projectId, email.contact, email.to, email.campaign, email.workflow, email.created, ...values]
    )
    if (email.viaUpdates) {
      // As the sender and engagement do: one column per statement, plus status-only updates that count nothing.
      await q(`UPDATE emails SET status = 'SENDING' WHERE id = $1`, [email.id])
      for (const [index, column] of columns.entries()) {
        if (email.stamps[index])
          await q(`UPDATE emails SET ${column} = COALESCE(${column}, $2) WHERE id = $1`, [email.id, email.stamps[index]])
      }
    }
  }
  if (emails.length > 0) await q(`UPDATE emails SET status = 'FAILED', error = 'x' WHERE id = $1`, [emails[0]!.id])
  const events = history.events.flatMap((event) => {
    const base = { id: randomUUID(), at: iso(T0 + event.at) }
    switch (event.kind) {
      case "custom":
        return [{ ...base, contact: contacts[event.contact]!.id, name: event.name, data: { n: 1 } }]
      case "segment":
        return [{ ...base, contact: contacts[event.contact]!.id, name: "segment.pro-users.entry", data: {} }]
      case "unsubscribe":
        return [{ ...base, contact: contacts[event.contact]!.id, name: "contact.unsubscribed", data: {} }]
      case "click":
      case "bounce": {
        const email = emails[event.email % Math.max(1, emails.length)]
        if (!email) return []
        const data = {
          emailId: email.id,
          subject: "Hello",
          ...(email.campaign ? { campaignId: email.campaign } : {}),
          ...(email.workflow ? { workflowId: email.workflow } : {})
        }
        return event.kind === "click"
          ? [{ ...base, contact: email.contact, name: "email.click", data: { ...data, link: event.link, isFirstClick: false } }]
          : [{ ...base, contact: email.contact, name: "email.bounce", data: { ...data, bounceType: event.type } }]
      }
    }
  })
  const insertEvents = () =>
    q(
      `INSERT INTO events (id, project_id, contact_id, name, data, created_at)
       SELECT x.id, $1, x.contact, x.name, x.data, x.at FROM jsonb_to_recordset($2::jsonb) x(id uuid, contact uuid, name text, data jsonb, at timestamptz)
       ON CONFLICT (id) DO NOTHING`,
      [projectId, JSON.stringify(events)]
    )
  await insertEvents()
  // Redelivery: the same events again store nothing and count nothing.
  await insertEvents()
  if (history.deleteViews) await q(`DELETE FROM events WHERE project_id = $1 AND name = 'view'`, [projectId])
  return { campaigns, workflowId, contacts }
}

// ----------------------------------------------------------------------------------- raw aggregations

const STREAM_SQL = `CASE WHEN campaign_id IS NOT NULL THEN 'CAMPAIGN' WHEN workflow_id IS NOT NULL THEN 'WORKFLOW' ELSE 'TRANSACTIONAL' END`
const METRICS = ["sent", "delivered", "opened", "clicked", "bounced", "complained"] as const

/** Mail metrics over [from, to) straight from emails and events, optionally grouped. */
const rawMail = async (projectId: string, stream: string, from: number, to: number, groupBy?: "campaign_id" | "domain") => {
  const group = groupBy === "domain" ? "lower(substring(to_email from '@([^@]*)$'))" : groupBy ?? "''"
  const rows = await q(
    `
    SELECT ${group}::text AS key, count(*) FILTER (WHERE created_at >= $3 AND created_at < $4)::int AS queued,
           ${METRICS.map((m) => `count(*) FILTER (WHERE ${m === "sent" ? "sent" : m}_at >= $3 AND ${m}_at < $4)::int AS ${m}`).join(", ")}
    FROM emails WHERE project_id = $1 AND ($2 = 'ALL' OR ${STREAM_SQL} = $2) GROUP BY 1`,
    [projectId, stream, iso(from), iso(to)]
  )
  const unsubscribes = await q(
    `
    SELECT ${
      groupBy === "domain" ? "lower(substring(last.to_email from '@([^@]*)$'))" : groupBy === "campaign_id" ? "last.campaign_id" : "''"
    }::text AS key,
           count(*)::int AS n
    FROM events ev LEFT JOIN LATERAL (
      SELECT true AS found, campaign_id, workflow_id, to_email, ${STREAM_SQL} AS stream FROM emails e
      WHERE e.contact_id = ev.contact_id AND e.project_id = ev.project_id AND e.sent_at <= ev.created_at
      ORDER BY e.sent_at DESC, e.id DESC LIMIT 1) last ON true
    WHERE ev.project_id = $1 AND ev.name = 'contact.unsubscribed' AND ev.created_at >= $3 AND ev.created_at < $4
      AND ($2 = 'ALL' OR last.stream = $2) GROUP BY 1`,
    [projectId, stream, iso(from), iso(to)]
  )
  const bounces = await q(
    `
    SELECT ${
      groupBy === "domain" ? "lower(substring(e.to_email from '@([^@]*)$'))" : groupBy === "campaign_id" ? "e.campaign_id" : "''"
    }::text AS key,
           count(*) FILTER (WHERE ev.data->>'bounceType' = 'Permanent')::int AS hard, count(*) FILTER (WHERE ev.data->>'bounceType' <> 'Permanent')::int AS soft
    FROM events ev JOIN emails e ON e.id = (ev.data->>'emailId')::uuid
    WHERE ev.project_id = $1 AND ev.name = 'email.bounce' AND ev.created_at >= $3 AND ev.created_at < $4
      AND ($2 = 'ALL' OR ${
      STREAM_SQL.replaceAll("campaign_id", "e.campaign_id").replaceAll("workflow_id", "e.workflow_id")
    } = $2) GROUP BY 1`,
    [projectId, stream, iso(from), iso(to)]
  )
  const result = new Map<string | null, Record<string, number>>()
  const entry = (key: string | null) => {
    if (!result.has(key))
      result.set(key, {
        queued: 0,
        sent: 0,
        delivered: 0,
        opened: 0,
        clicked: 0,
        bounced: 0,
        complained: 0,
        unsubscribed: 0,
        hard: 0,
        soft: 0
      })
    return result.get(key)!
  }
  for (const row of rows) Object.assign(entry(row.key), Object.fromEntries(["queued", ...METRICS].map((m) => [m, row[m]])))
  for (const row of unsubscribes) entry(row.key).unsubscribed = row.n
  for (const row of bounces) Object.assign(entry(row.key), { hard: row.hard, soft: row.soft })
  return result
}

const zeros = { queued: 0, sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0, complained: 0, unsubscribed: 0, hard: 0, soft: 0 }
const pick = (values: Record<string, number>) => ({
  sent: values.sent,
  delivered: values.delivered,
  opened: values.opened,
  clicked: values.clicked,
  bounced: values.bounced,
  complained: values.complained,
  unsubscribed: values.unsubscribed
})

const ACTIVITY_OF: Record<string, string> = {
  "email.sent": "email.sent",
  "email.delivery": "email.delivered",
  "email.open": "email.opened",
  "email.click": "email.clicked",
  "email.bounce": "email.bounced",
  "email.complaint": "email.complained",
  "email.received": "email.received",
  "contact.subscribed": "contact.subscribed",
  "contact.unsubscribed": "contact.unsubscribed"
}
const activityOf = (name: string) =>
  ACTIVITY_OF[name] ??
    (/^segment\.[^.]+\.entry$/.test(name) ? "segment.entry" : /^segment\.[^.]+\.exit$/.test(name) ? "segment.exit" : "event")

/** Feed items per type in a range, from events, contacts and activity_log. */
const rawActivity = async (projectId: string, from: number, to: number, exclusiveFrom = false) => {
  const op = exclusiveFrom ? ">" : ">="
  const rows = await q(
    `
    SELECT name, count(*)::int AS n FROM (
      SELECT name FROM events WHERE project_id = $1 AND created_at ${op} $2 AND created_at < $3
      UNION ALL SELECT '@contact.created' FROM contacts WHERE project_id = $1 AND created_at ${op} $2 AND created_at < $3
      UNION ALL SELECT '@' || type FROM activity_log WHERE project_id = $1 AND occurred_at ${op} $2 AND occurred_at < $3) x GROUP BY name`,
    [projectId, iso(from), iso(to)]
  )
  const counts = new Map<string, number>()
  for (const row of rows) {
    const type = row.name.startsWith("@") ? row.name.slice(1) : activityOf(row.name)
    counts.set(type, (counts.get(type) ?? 0) + row.n)
  }
  return counts
}

// ---------------------------------------------------------------------------------------------- tests

const checkEverything = async (projectId: string, campaigns: ReadonlyArray<string>) => {
  const base = `from=${iso(T0 - 86_400_000)}&to=${iso(T0 + WINDOW + 86_400_000)}`
  for (
    const [tz, stream, range] of [
      ["UTC", "ALL", base],
      ["America/New_York", "CAMPAIGN", base],
      ["Asia/Kolkata", "ALL", `from=${iso(T0 + 3 * 86_400_000 + 600_000)}&to=${iso(T0 + 4 * 86_400_000)}`],
      ["Asia/Kolkata", "TRANSACTIONAL", base]
    ] as const
  ) {
    const series = await get(`/analytics/timeseries?${range}&tz=${tz}&stream=${stream}`)
    for (const [buckets, end] of [[series.buckets, series.to], [series.previous.buckets, series.previous.to]]) {
      for (const [index, bucket] of buckets.entries()) {
        const bucketEnd = Date.parse(buckets[index + 1]?.start ?? end)
        const raw = (await rawMail(projectId, stream, Date.parse(bucket.start), bucketEnd)).get("") ?? zeros
        expect({ at: bucket.start, ...pick(bucket) }).toEqual({ at: bucket.start, ...pick(raw) })
      }
    }
    const from = Date.parse(series.from)
    const to = Date.parse(series.to)
    const overview = await get(`/analytics/overview?${range}&tz=${tz}&stream=${stream}`)
    expect(pick(overview.current)).toEqual(pick((await rawMail(projectId, stream, from, to)).get("") ?? zeros))
    const { n: newContacts } = await one(
      `SELECT count(*)::int AS n FROM contacts WHERE project_id = $1 AND created_at >= $2 AND created_at < $3`,
      [projectId, iso(from), iso(to)]
    )
    expect(overview.current.newContacts).toBe(newContacts)

    const deliverability = await get(`/analytics/deliverability?${range}&tz=${tz}&stream=${stream}&limit=100`)
    // Per-key figures count whole UTC hours (Kolkata's range widened by half an hour at each end) and say so.
    expect(Date.parse(deliverability.from) % 3_600_000).toBe(0)
    const perDomain = await rawMail(projectId, stream, Date.parse(deliverability.from), Date.parse(deliverability.to), "domain")
    for (const domain of deliverability.domains) {
      const raw = perDomain.get(domain.domain)!
      expect(domain).toMatchObject({
        sent: raw.sent,
        delivered: raw.delivered,
        bounced: raw.bounced,
        complaints: raw.complained,
        hardBounces: raw.hard,
        softBounces: raw.soft
      })
    }
    expect(deliverability.domains.map((d: any) => d.domain).sort()).toEqual(
      [...perDomain].filter(([k, v]) => k !== null && Object.values(v).some((n) => n !== 0)).map(([k]) => k).sort()
    )

    const links = await get(`/analytics/links?${range}&tz=${tz}&stream=${stream}`)
    const rawLinks = await q(
      `SELECT data->>'link' AS url, count(*)::int AS clicks FROM events
      WHERE project_id = $1 AND name = 'email.click' AND created_at >= $2 AND created_at < $3
        AND ($4 = 'ALL' OR CASE WHEN data ? 'campaignId' THEN 'CAMPAIGN' WHEN data ? 'workflowId' THEN 'WORKFLOW' ELSE 'TRANSACTIONAL' END = $4)
      GROUP BY 1 ORDER BY 2 DESC, 1`,
      [projectId, links.from, links.to, stream]
    )
    expect(links.links).toEqual(rawLinks)

    const heatmap = await get(`/analytics/heatmap?${range}&tz=${tz}&stream=${stream}`)
    const rawHeat = await q(
      `SELECT weekday, hour, sum(opens)::int AS opens, sum(clicks)::int AS clicks FROM (
        SELECT extract(isodow FROM opened_at AT TIME ZONE $5)::int AS weekday, extract(hour FROM opened_at AT TIME ZONE $5)::int AS hour, 1 AS opens, 0 AS clicks
        FROM emails WHERE project_id = $1 AND opened_at >= $2 AND opened_at < $3 AND ($4 = 'ALL' OR ${STREAM_SQL} = $4)
        UNION ALL
        SELECT extract(isodow FROM clicked_at AT TIME ZONE $5)::int, extract(hour FROM clicked_at AT TIME ZONE $5)::int, 0, 1
        FROM emails WHERE project_id = $1 AND clicked_at >= $2 AND clicked_at < $3 AND ($4 = 'ALL' OR ${STREAM_SQL} = $4)) x GROUP BY 1, 2`,
      [projectId, iso(from), iso(to), stream, tz]
    )
    expect(
      heatmap.cells.filter((cell: any) => cell.opens + cell.clicks > 0).sort((a: any, b: any) => a.weekday - b.weekday || a.hour - b.hour)
    )
      .toEqual(rawHeat.sort((a: any, b: any) => a.weekday - b.weekday || a.hour - b.hour))

    const audience = await get(`/analytics/audience?${range}&tz=${tz}`)
    for (const [index, bucket] of audience.buckets.entries()) {
      const end = audience.buckets[index + 1]?.start ?? audience.to
      const raw = await one(
        `SELECT count(*) FILTER (WHERE created_at < $3)::int AS total, count(*) FILTER (WHERE created_at >= $2 AND created_at < $3)::int AS new
        FROM contacts WHERE project_id = $1`,
        [projectId, bucket.start, end]
      )
      const unsub = await one(
        `SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND name = 'contact.unsubscribed' AND created_at >= $2 AND created_at < $3`,
        [projectId, bucket.start, end]
      )
      expect(bucket).toMatchObject({ total: raw.total, new: raw.new, unsubscribed: unsub.n })
    }
  }

  const range = `from=${iso(T0)}&to=${iso(T0 + WINDOW)}&tz=Europe/Berlin`
  const stats = await get(`/analytics/campaign-stats?${range}`)
  const perCampaign = await rawMail(projectId, "ALL", Date.parse(stats.from), Date.parse(stats.to), "campaign_id")
  for (const campaign of stats.campaigns) {
    const raw = perCampaign.get(campaign.id)!
    expect(campaign).toMatchObject({ recipients: raw.queued, ...pick(raw) })
  }
  expect(stats.campaigns.map((c: any) => c.id).sort()).toEqual(
    campaigns.filter((id) => Object.values(perCampaign.get(id) ?? zeros).some((n) => n !== 0)).sort()
  )
  const top = await get(`/analytics/top-campaigns?${range}&sort=sent&limit=1`)
  expect(top.campaigns.length).toBe(Math.min(1, stats.campaigns.length))
  if (top.campaigns[0]) expect(top.campaigns[0].sent).toBe(Math.max(...stats.campaigns.map((c: any) => c.sent)))

  const events = await get(`/analytics/top-events?${range}`)
  const rawEvents = async (from: string, to: string) =>
    new Map(
      (await q(
        `SELECT name, count(*)::int AS n FROM events WHERE project_id = $1 AND name = ANY($4) AND created_at >= $2 AND created_at < $3 GROUP BY 1`,
        [projectId, from, to, NAMES]
      )).map((row) => [row.name, row.n])
    )
  const current = await rawEvents(events.from, events.to)
  const previousFrom = iso(2 * Date.parse(events.from) - Date.parse(events.to))
  const previous = await rawEvents(previousFrom, events.from)
  expect(events.events.map((e: any) => [e.name, e.count, e.previousCount]).sort()).toEqual(
    [...current].map(([name, n]) => [name, n, previous.get(name) ?? 0]).sort()
  )

  // Activity counts: rollups for whole quarter hours, raw for the odd minutes at the ends.
  const from = T0 + 123_456
  const to = T0 + WINDOW - 654_321
  const activityStats = await get(`/activity/stats?from=${iso(from)}&to=${iso(to)}`)
  const rawCounts = await rawActivity(projectId, from, to)
  expect(Object.fromEntries(activityStats.byType.filter((e: any) => e.count > 0).map((e: any) => [e.type, e.count])))
    .toEqual(Object.fromEntries([...rawCounts].filter(([, n]) => n > 0)))
  const since = T0 + WINDOW / 3 + 77_777
  const recent = await get(`/activity/recent-count?since=${iso(since)}`)
  const rawRecent = await rawActivity(projectId, since, Date.now() + 86_400_000, true)
  expect(recent.count).toBe([...rawRecent.values()].reduce((a, b) => a + b, 0))
  const types = await get(`/activity/types`)
  const allTime = await rawActivity(projectId, 0, Date.now() + 86_400_000)
  expect(types.types.find((t: any) => t.type === "email.clicked").count).toBe(allTime.get("email.clicked") ?? 0)
  expect(types.types.reduce((sum: number, t: any) => sum + t.count, 0)).toBe([...allTime.values()].reduce((a, b) => a + b, 0))
}

describe("analytics answer what the raw tables say", () => {
  it("for random histories, in UTC, a DST zone and a half-hour zone, per stream, after redelivery and deletes", async () => {
    await fc.assert(
      fc.asyncProperty(historyArb, async (history) => {
        const { campaigns } = await writeHistory(context.project.id, history)
        await checkEverything(context.project.id, campaigns)
        // Folding the shards changes no answer.
        await q(`SELECT ms_compact_rollups(now() + interval '10 years')`)
        const { n } = await one(`SELECT count(*)::int AS n FROM analytics_counters WHERE project_id = $1 AND shard <> 0`, [
          context.project.id
        ])
        expect(n).toBe(0)
        await checkEverything(context.project.id, campaigns)
      }),
      { numRuns: 6 }
    )
  }, 600_000)

  it("the migration's backfill rebuilds the same rollups from the raw tables", async () => {
    const history = busyHistory(17)
    const { campaigns } = await writeHistory(context.project.id, { ...history, emails: history.emails.concat(history.emails) })
    await checkEverything(context.project.id, campaigns)
    const migration = readFileSync(new URL("../../migrations/0013_analytics.sql", import.meta.url), "utf8")
    const backfill = migration.slice(migration.indexOf("DO $$"))
    await q(`DELETE FROM analytics_email_rollups`)
    await q(`DELETE FROM analytics_counters`)
    await q(`DELETE FROM activity_log`)
    await q(backfill.replace(/;\s*$/, ""))
    await checkEverything(context.project.id, campaigns)
  }, 120_000)
})

describe("the activity feed", () => {
  it("pages through every item newest first, and filters by type, contact, campaign and search", async () => {
    const history = busyHistory(3)
    const { campaigns, contacts } = await writeHistory(context.project.id, history)
    const all: Array<any> = []
    let cursor: string | null = null
    do {
      const page: any = await get(`/activity?limit=7${cursor ? `&cursor=${cursor}` : ""}`)
      all.push(...page.data)
      cursor = page.cursor
      expect(page.hasMore).toBe(cursor !== null)
    } while (cursor)
    const { n } = await one(
      `SELECT ((SELECT count(*) FROM events WHERE project_id = $1) + (SELECT count(*) FROM contacts WHERE project_id = $1)
      + (SELECT count(*) FROM activity_log WHERE project_id = $1))::int AS n`,
      [context.project.id]
    )
    expect(all.length).toBe(n)
    expect(new Set(all.map((item) => `${item.type}:${item.id}`)).size).toBe(n)
    for (let i = 1; i < all.length; i++) expect(all[i - 1].occurredAt >= all[i].occurredAt).toBe(true)
    const created = all.find((item) => item.type === "contact.created")
    expect(created.contact.email).toMatch(/^c\d@/)
    const failed = all.find((item) => item.type === "email.failed")
    expect(failed).toMatchObject({ subject: "Hello", data: { error: "x" } })
    expect(all.filter((item) => item.type === "campaign.sending").length).toBe(2)

    const clicks = await get(`/activity?types=email.clicked,email.bounced&limit=100`)
    expect(clicks.data.length).toBe(all.filter((item) => item.type === "email.clicked" || item.type === "email.bounced").length)
    const click = clicks.data.find((item: any) => item.type === "email.clicked")
    if (click) expect(click.data.link).toMatch(/^https:/)
    const custom = await get(`/activity?types=event&limit=100`)
    expect(custom.data.every((item: any) => NAMES.includes(item.event))).toBe(true)

    const contact = contacts[0]!
    const mine = await get(`/activity?contactId=${contact.id}&limit=100`)
    expect(mine.data.length).toBe(all.filter((item) => item.contact?.id === contact.id).length)
    const searched = await get(`/activity?search=C0@&limit=100`)
    expect(searched.data.map((item: any) => item.id)).toEqual(mine.data.map((item: any) => item.id))
    const campaign = await get(`/activity?campaignId=${campaigns[0]}&limit=100`)
    expect(campaign.data.length).toBeGreaterThan(0)
    expect(campaign.data.every((item: any) => item.campaign?.id === campaigns[0])).toBe(true)
    expect(campaign.data.find((item: any) => item.type === "campaign.sending").campaign.name).toBe("Campaign 0")
    const windowed = await get(`/activity?from=${iso(T0 + WINDOW / 2)}&to=${iso(T0 + WINDOW)}&limit=100`)
    expect(windowed.data.every((item: any) => item.occurredAt >= iso(T0 + WINDOW / 2) && item.occurredAt < iso(T0 + WINDOW))).toBe(true)
  }, 120_000)

  it("lists scheduled campaigns and workflow delays and timeouts due soon", async () => {
    const projectId = context.project.id
    const { workflowId, contacts } = await writeHistory(projectId, {
      contacts: [0, 0, 0, 0, 0, 0],
      emails: [],
      events: [],
      deleteViews: false
    })
    const campaignId = randomUUID()
    await q(
      `INSERT INTO campaigns (id, project_id, partition, name, subject, body, from_email, audience_type, status, scheduled_for, created_at, updated_at)
             VALUES ($1, $2, 0, 'Soon', 's', 'b', 'f@x.example', 'ALL', 'SCHEDULED', now() + interval '30 minutes', now(), now())`,
      [campaignId, projectId]
    )
    const stepId = randomUUID()
    const executionId = randomUUID()
    await q(
      `INSERT INTO workflow_steps (id, workflow_id, type, name, config, created_at) VALUES ($1, $2, 'DELAY', 'Wait a bit', '{}', now())`,
      [stepId, workflowId]
    )
    await q(
      `INSERT INTO workflow_executions (id, workflow_id, project_id, partition, contact_id, status, current_step_id, started_at, updated_at)
             VALUES ($1, $2, $3, 0, $4, 'WAITING', $5, now(), now())`,
      [executionId, workflowId, projectId, contacts[0]!.id, stepId]
    )
    await q(
      `INSERT INTO workflow_timers (execution_id, id, project_id, partition, step_id, due_at) VALUES ($1, $2, $3, 0, $4, now() + interval '2 hours')`,
      [executionId, randomUUID(), projectId, stepId]
    )
    const soon = await get(`/activity/upcoming?hours=1`)
    expect(soon.items).toEqual([expect.objectContaining({ type: "campaign.scheduled", campaign: { id: campaignId, name: "Soon" } })])
    const day = await get(`/activity/upcoming`)
    expect(day.items[1]).toMatchObject({
      type: "workflow.delay",
      workflow: { id: workflowId, name: "Flow" },
      contact: { id: contacts[0]!.id, email: contacts[0]!.email },
      step: { id: stepId, name: "Wait a bit", type: "DELAY" },
      executionId
    })
    await q(`UPDATE workflow_executions SET status = 'COMPLETED', finished_at = now() WHERE id = $1`, [executionId])
    const feed = await get(`/activity?workflowId=${workflowId}`)
    expect(feed.data.map((item: any) => item.type)).toEqual(["workflow.finished", "workflow.started"])
  }, 60_000)
})

describe("isolation and input", () => {
  it("answers another project's data to no one, and another project's campaign with 404", async () => {
    const history = busyHistory(5)
    const { campaigns } = await writeHistory(context.project.id, history)
    const other = await context.stack.createProject("Other")
    const range = `from=${iso(T0)}&to=${iso(T0 + WINDOW)}`
    const overview = await get(`/analytics/overview?${range}`, other.secretKey)
    expect(Object.values(overview.current).every((n) => n === 0)).toBe(true)
    expect((await get(`/analytics/campaign-stats?${range}`, other.secretKey)).campaigns).toEqual([])
    expect((await get(`/activity`, other.secretKey)).data).toEqual([])
    expect((await get(`/activity/recent-count?since=${iso(0)}`, other.secretKey)).count).toBe(0)
    const response = await request(context.api.url, "GET", `/analytics/campaign-stats?${range}&campaignId=${campaigns[0]}`, {
      key: other.secretKey
    })
    expect(response.status).toBe(404)
    expect((await get(`/analytics/campaign-stats?${range}&campaignId=${campaigns[0]}`)).campaigns.length).toBe(1)
  }, 60_000)

  it("answers bad ranges, zones, streams, types and cursors with the error envelope naming the field", async () => {
    const cases: Array<[string, number, string]> = [
      ["/analytics/timeseries?tz=Mars/Base", 422, "tz"],
      ["/analytics/overview?stream=SMS", 422, "stream"],
      ["/analytics/top-events?from=2024-02-01T00:00:00Z&to=2024-01-01T00:00:00Z", 422, "from"],
      ["/analytics/links?from=2022-01-01T00:00:00Z&to=2024-01-01T00:00:00Z", 422, "to"],
      ["/analytics/heatmap?from=last%20week", 422, "from"],
      ["/activity?types=email.opened,bogus", 422, "types"],
      ["/activity?contactId=nope", 422, "contactId"],
      ["/activity/recent-count", 422, "since"],
      ["/activity/upcoming?hours=0", 422, "hours"],
      ["/activity/stats?to=2024-13-01", 422, "to"]
    ]
    for (const [path, status, field] of cases) {
      const response = await request(context.api.url, "GET", path, { key: context.project.secretKey })
      expect({ path, status: response.status }).toEqual({ path, status })
      expect(response.json.success).toBe(false)
      expect(response.json.error.errors.map((e: any) => e.field)).toContain(field)
    }
    const cursor = await request(context.api.url, "GET", "/activity?cursor=abc", { key: context.project.secretKey })
    expect(cursor.status).toBe(400)
    expect(cursor.json.error.code).toBe("INVALID_CURSOR")
    expect((await request(context.api.url, "GET", "/analytics/overview")).status).toBe(401)
  })

  it("documents every endpoint in /openapi.json", async () => {
    const doc = (await request(context.api.url, "GET", "/openapi.json")).json
    for (
      const path of [
        "/activity",
        "/activity/stats",
        "/activity/recent-count",
        "/activity/types",
        "/activity/upcoming",
        "/analytics/timeseries",
        "/analytics/top-campaigns",
        "/analytics/campaign-stats",
        "/analytics/top-events",
        "/analytics/overview",
        "/analytics/deliverability",
        "/analytics/links",
        "/analytics/heatmap",
        "/analytics/audience"
      ]
    ) {
      expect(doc.paths[path]?.get?.responses?.["422"], path).toBeDefined()
    }
    expect(doc.paths["/analytics/timeseries"].get.parameters.map((p: any) => p.name).sort()).toEqual(["from", "stream", "to", "tz"])
  })
})

describe("concurrent writers", () => {
  it("do not wait for each other's rollup rows, and their counts add up exactly", async () => {
    const projectId = context.project.id
    await writeHistory(projectId, { contacts: [0, 0, 0, 0, 0, 0], emails: [], events: [], deleteViews: false })
    const { id: contactId } = await one(`SELECT id FROM contacts WHERE project_id = $1 LIMIT 1`, [projectId])
    const clients: Array<pg.Client> = []
    try {
      for (let i = 0; i < 6; i++) {
        const client = new pg.Client({ connectionString: context.stack.databaseUrl })
        await client.connect()
        clients.push(client)
      }
      const shardOf = async (client: pg.Client) => (await client.query(`SELECT ms_rollup_shard() AS shard`)).rows[0].shard as number
      const shards = await Promise.all(clients.map(shardOf))
      const a = clients[0]!
      const b = clients[shards.findIndex((shard) => shard !== shards[0])]!
      const insert = (client: pg.Client, name: string) =>
        client.query(
          `INSERT INTO events (id, project_id, contact_id, name, data, created_at) VALUES (gen_random_uuid(), $1, $2, $3, '{}', $4)`,
          [projectId, contactId, name, iso(T0 + 3_600_000)]
        )
      // A batch holds its rows until it commits; another worker's batch in the same bucket goes on meanwhile.
      await a.query("BEGIN")
      await insert(a, "race")
      await b.query("BEGIN")
      const started = Date.now()
      await b.query("SET LOCAL lock_timeout = '3s'")
      await insert(b, "race")
      expect(Date.now() - started).toBeLessThan(3000)
      await b.query("COMMIT")
      await a.query("COMMIT")
      // Six writers, 20 transactions each, same buckets: exact totals.
      await Promise.all(clients.map(async (client) => {
        for (let i = 0; i < 20; i++) {
          await client.query("BEGIN")
          await insert(client, "burst")
          await insert(client, "burst")
          await client.query("COMMIT")
        }
      }))
    } finally {
      await Promise.all(clients.map((client) => client.end()))
    }
    const events = await get(`/analytics/top-events?from=${iso(T0)}&to=${iso(T0 + WINDOW)}`)
    expect(events.events.map((e: any) => [e.name, e.count])).toEqual([["burst", 240], ["race", 2]])
    const { rows } = await one(
      `SELECT count(DISTINCT shard)::int AS rows FROM analytics_counters WHERE project_id = $1 AND key = 'burst' AND grain = 60`,
      [projectId]
    )
    expect(rows).toBeGreaterThan(1)
  }, 60_000)
})
