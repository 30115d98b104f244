/**
 * The parts of #15 that meet the stream engine, on a real sending stack (api + worker + SMTP sink):
 * automatic protection (the worker disables a project over the bounce threshold, every api process
 * refuses its key at once, an owner re-enables it), the reset watermark and the billing grant the
 * engine calls, and campaigns and workflows held at (and resumed from) their monthly caps.
 */
import { Effect } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import { Billing, holdReason } from "../../src/store/Billing.ts"
import { resetWatermarks } from "../../src/store/ProjectData.ts"
import { type MailContext, withMailStack } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { withSql } from "../support/pg.ts"
import { createStack, request } from "../support/stack.ts"
import { buildWorkflow, executionsOf } from "../workflows/support.ts"
import { SqlClient } from "effect/sql"
import { Browser, joinProject } from "./support.ts"

let context: MailContext
withMailStack((ready) => (context = ready), { PROTECTION_CHECK_SECONDS: "1", HELD_MAIL_CHECK_SECONDS: "1" })

const secret = (method: string, path: string, body?: unknown, key = context.project.secretKey) =>
  request(context.api.url, method, path, { key, body })

let owner: Browser | undefined
/** The project's OWNER (the first user adopts the CLI-made project) and a second project of theirs. */
const ownerOf = async () => {
  if (owner) return owner
  owner = new Browser(context.api.url)
  expect((await owner.post("/auth/signup", { email: "owner@example.com", password: "owner password" })).status).toBe(201)
  return owner
}

/** Sets the project's monthly caps as its OWNER does; the ones not named are unlimited. */
const setLimits = async (limits: { readonly campaigns?: number; readonly workflows?: number } = {}) =>
  (await ownerOf()).call("PUT", `/users/@me/projects/${context.project.id}/billing-limits`, {
    transactional: null,
    campaigns: null,
    workflows: null,
    inbound: null,
    ...limits
  })

/** A draft campaign to every contact of the project, from the verified domain. */
const newCampaign = async (name: string) =>
  (await secret("POST", "/campaigns", { name, subject: "s", body: "<p>b</p>", from: "news@acme.test", audienceType: "ALL" })).json.data

/** `count` sent emails of the project, `bounced` of them bounced, as the sender and notifications leave them. */
const sentEmails = (projectId: string, count: number, bounced: number) =>
  context.stack.query(
    `INSERT INTO emails (id, project_id, partition, to_email, from_email, subject, html, type, priority, message_id, status, sent_at, bounced_at)
     SELECT gen_random_uuid(), $1, 0, 'r' || i || '@example.org', 'news@acme.test', 's', 'h', 'MARKETING', 1,
            '<' || gen_random_uuid() || '@acme.test>', CASE WHEN i <= $3 THEN 'BOUNCED' ELSE 'SENT' END, now(),
            CASE WHEN i <= $3 THEN now() END
     FROM generate_series(1, $2) AS i`,
    [projectId, count, bounced]
  )

describe("automatic protection", () => {
  it("disables a project over MAX_BOUNCE_RATE: its key answers 403 PROJECT_DISABLED; an OWNER re-enables it", async () => {
    const browser = await ownerOf()
    const admin = new Browser(context.api.url)
    await admin.post("/auth/signup", { email: "admin@example.com", password: "admin password" })
    await joinProject(browser, context.project.id, admin, "admin@example.com", "ADMIN")
    // 99 sends are too few to judge, whatever bounced.
    await sentEmails(context.project.id, 99, 20)
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    expect((await secret("GET", "/contacts")).status).toBe(200)

    await sentEmails(context.project.id, 1, 0)
    const refused = await eventually(async () => {
      const reply = await secret("GET", "/contacts")
      expect(reply.status).toBe(403)
      return reply
    })
    expect(refused.json.error.code).toBe("PROJECT_DISABLED")
    const security = await browser.get(`/users/@me/projects/${context.project.id}/security`)
    expect(security.json).toMatchObject({ disabled: true, sends: 100, bounces: 20, bounceRate: 20 })
    expect(security.json.disabledReason).toMatch(/Bounce rate 20\.00% .* exceeds 5%/)
    expect(security.json.suspensions).toEqual([expect.objectContaining({ bounceRate: 20, sends: 100, liftedAt: null })])
    expect((await browser.get("/users/@me/projects")).json[0]).toMatchObject({ disabled: true })

    const byAdmin = await admin.call("PATCH", `/users/@me/projects/${context.project.id}`, { disabled: false })
    expect(byAdmin.status).toBe(403)
    const enabled = await browser.call("PATCH", `/users/@me/projects/${context.project.id}`, { disabled: false })
    expect(enabled.status).toBe(200)
    expect(enabled.json).toMatchObject({ disabled: false, disabledReason: null })
    expect((await secret("GET", "/contacts")).status).toBe(200)
    // The old bounces no longer count: the checks that follow leave it enabled.
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    expect((await secret("GET", "/contacts")).status).toBe(200)
    const after = await browser.get(`/projects/${context.project.id}/security`)
    expect(after.json).toMatchObject({ disabled: false, sends: 0 })
    expect(after.json.suspensions[0].liftedAt).not.toBeNull()
  })

  // The sender's claim skips priority-1 (campaign and workflow) mail of a disabled project (HELD_MARKETING_SQL).
  it("holds a disabled project's queued marketing mail, and sends it once the project is re-enabled", async () => {
    const browser = await ownerOf()
    await secret("POST", "/contacts", { email: "held@example.org" })
    const campaign = (await secret("POST", "/campaigns", {
      name: "Held",
      subject: "Held",
      body: "<p>held</p>",
      from: "news@acme.test",
      audienceType: "ALL"
    })).json.data
    // Scheduled while the project is enabled; disabled before it is due, as automatic protection would.
    const due = new Date(Date.now() + 3_000)
    expect((await secret("POST", `/campaigns/${campaign.id}/send`, { scheduledFor: due.toISOString() })).status).toBe(200)
    await context.stack.query("UPDATE projects SET disabled = true, disabled_reason = 'test', disabled_at = now() WHERE id = $1", [
      context.project.id
    ])
    const heldMail = () => context.smtp.messages.filter((mail) => mail.envelopeTo.includes("held@example.org"))
    // Queued by the fan-out, but held by the sender: PENDING, nothing delivered, nothing dropped.
    await eventually(async () => {
      const rows = await context.stack.query<{ status: string }>("SELECT status FROM emails WHERE campaign_id = $1", [campaign.id])
      expect(rows.map((row) => row.status)).toEqual(["PENDING"])
    }, 15_000)
    await new Promise((resolve) => setTimeout(resolve, 3_000))
    expect(heldMail()).toHaveLength(0)
    expect((await context.stack.query<{ status: string }>("SELECT status FROM emails WHERE campaign_id = $1", [campaign.id]))[0]!.status)
      .toBe("PENDING")
    expect((await browser.call("PATCH", `/users/@me/projects/${context.project.id}`, { disabled: false })).status).toBe(200)
    await eventually(async () => expect(heldMail()).toHaveLength(1), 20_000)
  })
})

describe("project reset and the stream", () => {
  it("records the IN stream's sequence as the watermark the actors skip below", async () => {
    const browser = await ownerOf()
    await request(context.api.url, "POST", "/v1/track", { key: context.project.publicKey, body: { email: "w@example.org", event: "seen" } })
    expect((await browser.post(`/users/@me/projects/${context.project.id}/reset`)).status).toBe(200)
    const watermarks = await withSql(
      context.stack.databaseUrl,
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* sql.withTransaction(resetWatermarks(sql, [context.project.id, "00000000-0000-7000-8000-000000000000"]))
      })
    )
    expect(watermarks.size).toBe(1)
    expect(watermarks.get(context.project.id)).toBeGreaterThan(0)
  })

  // The lane batch reads the project's reset watermark (share-locked) with its offset and treats messages
  // at or below it as applied.
  it("skips the stream messages queued before a reset: nothing of the old data reappears", async () => {
    // Its own stack, the worker started only after the reset, so the old messages are surely still queued.
    const stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
    try {
      const api = await stack.start("api")
      const project = await stack.createProject("Reset while queued")
      const browser = new Browser(api.url)
      expect((await browser.post("/auth/signup", { email: "resetter@example.com", password: "resetter password" })).status).toBe(201)
      const track = (email: string, event: string) =>
        request(api.url, "POST", "/v1/track", { key: project.publicKey, body: { email, event } })
      await Promise.all(Array.from({ length: 50 }, (_, i) => track(`before${i}@example.org`, "before")))
      expect((await browser.post(`/users/@me/projects/${project.id}/reset`)).status).toBe(200)
      await Promise.all(Array.from({ length: 5 }, (_, i) => track(`after${i}@example.org`, "after")))
      await stack.start("worker")
      // The events tracked after the reset are applied: the worker has gone past everything before them.
      await eventually(async () => {
        const rows = await stack.query("SELECT 1 FROM events WHERE project_id = $1 AND name = 'after'", [project.id])
        expect(rows.length).toBe(5)
      }, 30_000)
      const count = async (text: string) => (await stack.query(text, [project.id])).length
      expect({
        events: await count("SELECT 1 FROM events WHERE project_id = $1 AND name = 'before'"),
        aggregates: await count("SELECT 1 FROM event_aggregates WHERE project_id = $1 AND name = 'before'"),
        contacts: await count("SELECT 1 FROM contacts WHERE project_id = $1 AND email LIKE 'before%'")
      }).toEqual({ events: 0, aggregates: 0, contacts: 0 })
    } finally {
      await stack.stop()
    }
  })
})

describe("billing caps in the engine", () => {
  // The reset above left the month's mail counted (billing_carryover): these tests count from an empty month.
  beforeAll(() => context.stack.query("DELETE FROM billing_carryover WHERE project_id = $1", [context.project.id]))

  it("grants what fits under a cap and records why a campaign is held", async () => {
    await setLimits({ campaigns: 3 })
    const campaign = await newCampaign("Capped")
    await context.stack.query(
      `INSERT INTO emails (id, project_id, partition, to_email, from_email, subject, html, type, priority, message_id, campaign_id)
       SELECT gen_random_uuid(), $1, 0, 'c' || i || '@example.org', 'news@acme.test', 's', 'h', 'MARKETING', 1,
              '<' || gen_random_uuid() || '@acme.test>', $2 FROM generate_series(1, 2) AS i`,
      [context.project.id, campaign.id]
    )
    const granted = await withSql(
      context.stack.databaseUrl,
      Effect.gen(function*() {
        const billing = yield* Billing
        const sql = yield* SqlClient.SqlClient
        return yield* sql.withTransaction(Effect.gen(function*() {
          const first = yield* billing.grant(context.project.id, "campaigns", 5)
          const unlimited = yield* billing.grant(context.project.id, "transactional", 5)
          const remaining = yield* billing.remaining(context.project.id, "campaigns")
          yield* billing.recordHold("campaign", campaign.id, holdReason("campaigns", 3))
          return { first, unlimited, remaining }
        }))
      }).pipe(Effect.provide(Billing.layer))
    )
    expect(granted).toEqual({ first: 1, unlimited: 5, remaining: 1 })
    const [row] = await context.stack.query<{ billing_hold: string }>("SELECT billing_hold FROM campaigns WHERE id = $1", [campaign.id])
    expect(row!.billing_hold).toMatch(/Monthly campaigns email limit \(3\) reached/)
    await context.stack.query("DELETE FROM emails WHERE campaign_id = $1", [campaign.id])
  })

  // The fan-out's queue step takes what the cap allows (src/campaigns/fanout.ts); a raised cap resumes it (src/billing/heldMail.ts).
  it("stops a campaign at the campaigns cap, records why, and resumes when the cap is raised", async () => {
    for (let i = 0; i < 5; i++) await secret("POST", "/contacts", { email: `cap${i}@example.org` })
    await setLimits({ campaigns: 2 })
    const campaign = await newCampaign("Over cap")
    expect((await secret("POST", `/campaigns/${campaign.id}/send`, {})).status).toBe(200)
    const queuedCount = async () =>
      (await context.stack.query<{ n: number }>("SELECT count(*)::int AS n FROM emails WHERE campaign_id = $1", [campaign.id]))[0]!.n
    await eventually(async () => {
      const [row] = await context.stack.query<{ billing_hold: string | null; n: number }>(
        "SELECT billing_hold, (SELECT count(*)::int FROM emails WHERE campaign_id = c.id) AS n FROM campaigns c WHERE id = $1",
        [campaign.id]
      )
      expect(row!.n).toBe(2)
      expect(row!.billing_hold).toMatch(/limit/)
    })
    const held = (await secret("GET", `/campaigns/${campaign.id}`)).json
    expect(held).toMatchObject({ status: "SENDING", billingHold: holdReason("campaigns", 2) })
    // Held, not spinning: no step runs (each one writes the campaign) and nothing more is queued while the cap stands.
    const stepStamp = async () =>
      (await context.stack.query<{ at: string }>("SELECT updated_at::text AS at FROM campaigns WHERE id = $1", [campaign.id]))[0]!.at
    const heldSince = await stepStamp()
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect(await queuedCount()).toBe(2)
    expect(await stepStamp()).toBe(heldSince)

    // Raised to 4: two more, and held again.
    await setLimits({ campaigns: 4 })
    await eventually(async () => {
      expect(await queuedCount()).toBe(4)
      expect((await secret("GET", `/campaigns/${campaign.id}`)).json.billingHold).toBe(holdReason("campaigns", 4))
    }, 20_000)

    await setLimits()
    await eventually(async () => {
      expect(await queuedCount()).toBe(5)
      expect((await secret("GET", `/campaigns/${campaign.id}`)).json).toMatchObject({ status: "SENT", billingHold: null })
    }, 20_000)
    const recipients = await context.stack.query<{ to_email: string }>("SELECT to_email FROM emails WHERE campaign_id = $1", [campaign.id])
    expect(new Set(recipients.map((row) => row.to_email)).size).toBe(5)
  })

  // SEND_EMAIL takes one of the workflows cap (src/workflows/engine.ts); held executions wait on the step.
  it("holds workflow sends at the workflows cap (the executions wait on the step) and sends them when the cap is raised", async () => {
    await setLimits({ workflows: 2 })
    const template = (await secret("POST", "/templates", {
      name: "Capped welcome",
      subject: "Welcome",
      body: "<p>hi</p>",
      from: "hello@acme.test",
      type: "MARKETING"
    })).json
    const { workflowId, ids } = await buildWorkflow({ url: context.api.url, key: context.project.secretKey }, {
      name: "Capped",
      eventName: "capped_signup",
      first: "send",
      steps: { send: { type: "SEND_EMAIL", config: { templateId: template.id } } }
    })
    const people = Array.from({ length: 4 }, (_, i) => `wcap${i}@example.org`)
    for (const email of people) {
      const tracked = await request(context.api.url, "POST", "/v1/track", {
        key: context.project.publicKey,
        body: { email, event: "capped_signup", subscribed: true }
      })
      expect(tracked.status).toBe(200)
    }
    const client = { url: context.api.url, key: context.project.secretKey }
    const statuses = async () => (await executionsOf(client, workflowId)).map((execution) => execution.status).sort()
    const workflowMail = async () =>
      (await context.stack.query<{ n: number }>("SELECT count(*)::int AS n FROM emails WHERE workflow_id = $1", [workflowId]))[0]!.n
    await eventually(async () => {
      expect(await statuses()).toEqual(["COMPLETED", "COMPLETED", "WAITING", "WAITING"])
      expect((await secret("GET", `/workflows/${workflowId}`)).json.billingHold).toBe(holdReason("workflows", 2))
    }, 20_000)
    expect(await workflowMail()).toBe(2)
    const [waiting] = await executionsOf(client, workflowId, "WAITING")
    expect(waiting!.currentStepId).toBe(ids.send)
    const detail = (await secret("GET", `/workflows/${workflowId}/executions/${waiting!.id}`)).json
    const monthTurn = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1))
    expect(detail.steps.find((step: { stepId: string }) => step.stepId === ids.send))
      .toMatchObject({ status: "WAITING", output: { billingHold: holdReason("workflows", 2), retryAt: monthTurn.toISOString() } })
    // It retries the send at the month's turn on its own.
    const [timer] = await context.stack.query<{ due_at: Date }>("SELECT due_at FROM workflow_timers WHERE execution_id = $1", [waiting!.id])
    expect(timer!.due_at.toISOString()).toBe(monthTurn.toISOString())

    // Room for one more: one sends, the other stays held (the hold recorded again).
    await setLimits({ workflows: 3 })
    // The two held executions retry on their own timers: the one left over records the hold again once
    // its retry has run, which may be a moment after the other one completed.
    await eventually(async () => {
      expect(await statuses()).toEqual(["COMPLETED", "COMPLETED", "COMPLETED", "WAITING"])
      expect(await workflowMail()).toBe(3)
      expect((await secret("GET", `/workflows/${workflowId}`)).json.billingHold).toBe(holdReason("workflows", 3))
    }, 20_000)

    await setLimits()
    await eventually(async () => {
      expect(await statuses()).toEqual(["COMPLETED", "COMPLETED", "COMPLETED", "COMPLETED"])
      expect((await secret("GET", `/workflows/${workflowId}`)).json.billingHold).toBeNull()
    }, 20_000)
    // Each contact mailed once: the held step was retried, not skipped nor sent twice.
    const sent = await context.stack.query<{ to_email: string }>("SELECT to_email FROM emails WHERE workflow_id = $1", [workflowId])
    expect(sent.map((row) => row.to_email).sort()).toEqual(people)
    await eventually(async () => {
      for (const email of people) expect(context.smtp.messages.filter((mail) => mail.envelopeTo.includes(email))).toHaveLength(1)
    }, 20_000)
  })

  // The worker's periodic check (src/billing/heldMail.ts, HELD_MAIL_CHECK_SECONDS) resumes what the cap allows again.
  it("resumes a held campaign when the month turns (its mail no longer counts), without the cap being touched", async () => {
    // Everything mailed so far belongs to an earlier month: the cap starts from zero.
    const turnTheMonth = () =>
      context.stack.query("UPDATE emails SET created_at = created_at - interval '40 days' WHERE project_id = $1", [context.project.id])
    await turnTheMonth()
    await setLimits({ campaigns: 1 })
    const campaign = await newCampaign("Month turn")
    expect((await secret("POST", `/campaigns/${campaign.id}/send`, {})).status).toBe(200)
    const state = async () => {
      const [row] = await context.stack.query<{ billing_hold: string | null; n: number }>(
        "SELECT billing_hold, (SELECT count(*)::int FROM emails WHERE campaign_id = c.id) AS n FROM campaigns c WHERE id = $1",
        [campaign.id]
      )
      return row!
    }
    await eventually(async () => expect(await state()).toEqual({ billing_hold: holdReason("campaigns", 1), n: 1 }))
    // Still a month later for the worker's next looks: nothing more while the cap is reached.
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    expect((await state()).n).toBe(1)
    await turnTheMonth()
    await eventually(async () => expect(await state()).toEqual({ billing_hold: holdReason("campaigns", 1), n: 2 }), 15_000)
    await setLimits()
    await eventually(async () => expect((await secret("GET", `/campaigns/${campaign.id}`)).json.status).toBe("SENT"), 20_000)
  })
})
