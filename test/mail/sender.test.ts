import { ConfigProvider, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "vitest"
import { AppConfig } from "../../src/config.ts"
import { MailQueue } from "../../src/mail/MailQueue.ts"
import { makeRenderer } from "../../src/mail/render.ts"
import { PgLive } from "../../src/store/db.ts"
import { Outbox } from "../../src/stream/Outbox.ts"
import { Nats } from "../../src/stream/Nats.ts"
import { Projects } from "../../src/store/Projects.ts"
import { createMailStack, emailStatus, type MailContext, verifyDomain, withMailStack } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { request } from "../support/stack.ts"

let context: MailContext
withMailStack((ready) => (context = ready))

const secret = (method: string, path: string, body?: unknown, key = context.project.secretKey) =>
  request(context.api.url, method, path, { key, body })

const mailsTo = (address: string) => context.smtp.messages.filter((mail) => mail.envelopeTo.includes(address))

/**
 * Queues mail the way campaigns and workflow steps do (through the MailQueue), in this
 * process, against the stack's database: the worker sends it like any other.
 */
const enqueueMarketing = (contacts: ReadonlyArray<{ id: string; email: string }>, options: { claimed?: boolean } = {}) => {
  const renderer = makeRenderer()
  const program = Effect.gen(function*() {
    const mail = yield* MailQueue
    const sql = yield* SqlClient.SqlClient
    const projectMail = yield* mail.forProject(context.project.id, { trackingEnabled: false })
    const queued = yield* Effect.forEach(contacts, (contact) =>
      projectMail.render(
        {
          subject: renderer.compile("Our news", "text"),
          body: renderer.compile("<p>News for {{ email }}</p>", "html"),
          from: "news@acme.test",
          fromName: null,
          replyTo: null,
          headers: {},
          attachments: [],
          type: "MARKETING",
          templateId: null
        },
        { contactId: contact.id, email: contact.email, name: null, data: {} }
      ))
    yield* sql.withTransaction(Effect.gen(function*() {
      yield* mail.queue(context.project.id, queued)
      // As a claim leaves them whose answer was lost (its connection dropped as it committed): SENDING,
      // held by no round.
      if (options.claimed) {
        yield* sql`UPDATE emails SET status = 'SENDING', attempts = 1 WHERE id IN ${sql.in(queued.map((email) => email.id))}`
      }
    }))
    return queued.map((email) => email.id)
  })
  const layer = MailQueue.layer.pipe(
    Layer.provide(Projects.layer),
    Layer.provideMerge(Outbox.layer),
    Layer.provideMerge(Nats.layer),
    Layer.provideMerge(PgLive),
    Layer.provideMerge(AppConfig.layer),
    Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: context.stack.env })))
  )
  return Effect.runPromise(Effect.scoped(program.pipe(Effect.provide(layer))))
}

describe("the sender", () => {
  it("skips marketing mail to unsubscribed contacts (recorded SUPPRESSED) and adds one-click headers to the rest", async () => {
    const subscribed = (await secret("POST", "/contacts", { email: "fan@example.org", subscribed: true })).json
    const unsubscribed = (await secret("POST", "/contacts", { email: "gone@example.org", subscribed: false })).json
    const [skipped, sent] = await enqueueMarketing([unsubscribed, subscribed])
    // The rows are woken by the sweep (no stream message was published for them): within a second or two.
    expect((await emailStatus(context, skipped!, "SUPPRESSED")).error).toMatch(/unsubscribed/)
    await emailStatus(context, sent!, "SENT")
    expect(mailsTo("gone@example.org")).toHaveLength(0)
    const [mail] = mailsTo("fan@example.org")
    expect(mail!.parsed.headerLines.find((line) => line.key === "list-unsubscribe-post")?.line).toContain("List-Unsubscribe=One-Click")
  })

  it("re-queues and sends, once, mail left SENDING by a claim no round holds", async () => {
    const contact = (await secret("POST", "/contacts", { email: "orphan@example.org", subscribed: true })).json
    const [orphan] = await enqueueMarketing([contact], { claimed: true })
    // Left alone, nothing would send it while the worker keeps the partition: the sweep (every 5 s at
    // most) re-queues it once it has seen it unheld for 3 s: 3 to 10 s.
    await eventually(async () => {
      const email = await secret("GET", `/emails/${orphan}`)
      expect(email.json?.status).toBe("SENT")
    }, 30_000)
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(mailsTo("orphan@example.org")).toHaveLength(1)
  })

  it("retries transient SMTP failures with backoff and marks permanent ones FAILED", async () => {
    context.smtp.failures.set("flaky@example.org", { code: 451, times: 1 })
    context.smtp.failures.set("rejected@example.org", { code: 550, times: 99 })
    const res = await secret("POST", "/v1/send", {
      to: ["flaky@example.org", "rejected@example.org"],
      from: "hello@acme.test",
      subject: "Retry",
      body: "<p>x</p>"
    })
    const [flaky, rejected] = res.json.data.emails.map((e: { email: string }) => e.email)
    const failed = await emailStatus(context, rejected, "FAILED")
    expect(failed.error).toMatch(/550/)
    expect(failed.attempts).toBe(1)
    const retried = await eventually(() => emailStatus(context, flaky, "SENT"), 15_000)
    expect(retried.attempts).toBe(2)
    expect(mailsTo("flaky@example.org")).toHaveLength(1)
  }, 20_000)

  it("holds a project to its send rate, transactional mail first", async () => {
    await context.stack.cli("project", "settings", "--id", context.project.id, "--send-rate", "20")
    // The worker reads the rate again within 5 s.
    await new Promise((resolve) => setTimeout(resolve, 5_500))
    const marketing = []
    for (let i = 0; i < 30; i++) marketing.push((await secret("POST", "/contacts", { email: `later${i}@example.org` })).json)
    await enqueueMarketing(marketing)
    const recipients = Array.from({ length: 60 }, (_, i) => `rate${i}@example.org`)
    const res = await secret("POST", "/v1/send", { to: recipients, from: "hello@acme.test", subject: "Rate", body: "<p>r</p>" })
    expect(res.status).toBe(200)
    const arrivals = await eventually(async () => {
      const found = context.smtp.messages.filter((mail) => mail.envelopeTo[0]?.startsWith("rate"))
      expect(found).toHaveLength(60)
      return found.map((mail) => mail.receivedAt).sort((a, b) => a - b)
    }, 20_000)
    // After the first tenth of a second's burst, the rate is the configured one.
    const steady = arrivals.slice(2)
    const rate = (steady.length - 1) / ((steady.at(-1)! - steady[0]!) / 1000)
    expect(rate).toBeGreaterThan(20 * 0.85)
    expect(rate).toBeLessThan(20 * 1.15)
    // Transactional mail jumps the queue: marketing queued before it starts going out while the /v1/send
    // request is still being written, but once transactional mail is pending none goes out until it
    // is all sent, but for the one round (at most 2 tokens at 20/s) already claimed.
    const marketingArrivals = await eventually(async () => {
      const found = context.smtp.messages.filter((mail) => mail.envelopeTo[0]?.startsWith("later"))
      expect(found).toHaveLength(30)
      return found.map((mail) => mail.receivedAt)
    }, 10_000)
    const overlapping = marketingArrivals.filter((at) => at > arrivals[0]! && at < arrivals.at(-1)!)
    expect(overlapping.length).toBeLessThanOrEqual(2)
    expect(marketingArrivals.filter((at) => at > arrivals.at(-1)!).length).toBeGreaterThan(0)
    await context.stack.cli("project", "settings", "--id", context.project.id, "--send-rate", "0")
  }, 30_000)
})

describe("a worker killed mid-send", () => {
  it("loses nothing, and resends at most the messages that were in flight", async () => {
    const mail = await createMailStack({ SEND_RATE_PER_SECOND: "40" })
    const { stack, dns, smtp } = mail
    try {
      const api = await stack.start("api")
      let worker = await stack.start("worker", { METRICS_PORT: "0" })
      const project = await stack.createProject()
      await verifyDomain({ api, dns }, project.secretKey, "acme.test")
      const ids: Array<string> = []
      for (let batch = 0; batch < 2; batch++) {
        const to = Array.from({ length: 100 }, (_, i) => `crash${batch * 100 + i}@example.org`)
        const res = await request(api.url, "POST", "/v1/send", {
          key: project.secretKey,
          body: { to, from: "hello@acme.test", subject: "Crash", body: "<p>c</p>" }
        })
        expect(res.status).toBe(200)
        ids.push(...res.json.data.emails.map((e: { email: string }) => e.email))
      }
      // At 40/s, 200 mails take 5 s: kill the worker in the middle.
      await eventually(async () => expect(smtp.messages.length).toBeGreaterThan(40), 10_000)
      await worker.stop("SIGKILL")
      const atKill = smtp.messages.length
      expect(atKill).toBeLessThan(200)
      worker = await stack.start("worker", { METRICS_PORT: "0" })
      await eventually(async () => {
        const rows = await stack.query<{ status: string; n: number }>(
          "SELECT status, count(*)::int AS n FROM emails GROUP BY status"
        )
        expect(rows).toEqual([{ status: "SENT", n: 200 }])
      }, 30_000)
      const delivered = smtp.messages.map((mail) => mail.parsed.messageId)
      const distinct = new Set(delivered)
      expect(distinct.size).toBe(200)
      // Only mail in flight at the kill may arrive twice: the project's two rounds in flight, each at
      // most a tenth of a second's worth at 40/s.
      expect(delivered.length - distinct.size).toBeLessThanOrEqual(8)
      await worker.stop()
      await api.stop()
    } finally {
      await mail.stop()
    }
  }, 60_000)
})
