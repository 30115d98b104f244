/**
 * One fault underneath the service, under load: a private Postgres and a private nats-server (free
 * loopback ports, temporary directories), an api and a worker process (`node src/main.ts api|worker`),
 * the in-process SMTP sink and test DNS. While keyed /v1/track clients run (test/support/trackLoad.ts)
 * and a campaign is being sent, the fault begins, lasts FAULT_MS and ends; nothing of ours is restarted.
 * Then: every answer was 2xx or one a client retries (503 with Retry-After), the api's /readyz said
 * not-ready while its dependency was away and ready after, every accepted event is stored exactly once in
 * each contact's order, and every recipient of the campaign got exactly one mail.
 */
import { writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { expect } from "vitest"
import { startDnsServer, type TestDnsServer } from "../support/dns.ts"
import { freePort, verifyDomain } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { startNatsServer, type NatsServer } from "../support/natsServer.ts"
import { startPostgresServer, type PostgresServer } from "../support/postgresServer.ts"
import { startSmtpSink, type SmtpSink } from "../support/smtp.ts"
import { createStack, request, type Service, type Stack, type TestProject } from "../support/stack.ts"
import { expectRetryableAnswers, expectStoredExactlyOnce, sleep, startTrackLoad, summarize, type TrackLoad } from "../support/trackLoad.ts"

const CONTACTS = 10
const DOMAIN = "faults.test"
const RECIPIENTS = 60
/** The campaign goes out at this rate, so it is still sending when the fault begins and ends. */
const SEND_RATE = 15
const LOAD_BEFORE_MS = 1_000
export const FAULT_MS = 4_000
const LOAD_AFTER_MS = 1_000
/**
 * How long after the fault every accepted event must be stored. Over the consumers' ack_wait (60 s): a
 * message delivered to the worker while it was cut off, or taken by a batch that could not commit, is
 * only delivered again once ack_wait is over (see the report of issue 39).
 */
const STORED_WITHIN_MS = 90_000
/** A campaign that finishes later than this after the fault leaves its logs behind (it still passes). */
const SLOW_CAMPAIGN_MS = 10_000

export interface FaultEnvironment {
  readonly postgres: PostgresServer
  readonly nats: NatsServer
  readonly stack: Stack
  readonly api: Service
  readonly worker: Service
  readonly project: TestProject
  readonly smtp: SmtpSink
}

export interface Fault {
  /** The dependency the api's /readyz must call down while the fault lasts (none: the api's are fine). */
  readonly down?: "postgres" | "nats"
  readonly begin: (env: FaultEnvironment) => Promise<void>
  readonly end: (env: FaultEnvironment) => Promise<void>
}

export interface FaultOptions {
  readonly maxConnections?: number
  /** The worker's NATS_URL (default: the server's own), e.g. through a proxy the test controls. */
  readonly workerNatsUrl?: (nats: NatsServer) => Promise<string>
}

const secret = (env: { api: Service; project: TestProject }, method: string, path: string, body?: unknown) =>
  request(env.api.url, method, path, { key: env.project.secretKey, body })

/** A campaign to RECIPIENTS subscribed contacts, created but not sent. */
const prepareCampaign = async (env: { api: Service; project: TestProject }) => {
  for (let from = 0; from < RECIPIENTS; from += 20) {
    await Promise.all(Array.from({ length: Math.min(20, RECIPIENTS - from) }, async (_, i) => {
      const created = await secret(env, "POST", "/contacts", {
        email: `r${from + i}@example.org`,
        subscribed: true,
        data: { tag: "fault" }
      })
      expect(created.status, created.text).toBeLessThan(300)
    }))
  }
  const created = await secret(env, "POST", "/campaigns", {
    name: "During a fault",
    subject: "Hi",
    body: "<p>{{ email }}</p>",
    from: "news@acme.test",
    audienceType: "FILTERED",
    audienceCondition: { logic: "AND", groups: [{ filters: [{ field: "data.tag", operator: "equals", value: "fault" }] }] }
  })
  expect(created.status, created.text).toBe(201)
  return created.json.data.id as string
}

export const runFault = async (fault: Fault, options: FaultOptions = {}) => {
  const started = Date.now()
  const mark = (what: string) => console.info(`${what} at ${Date.now() - started} ms`)
  const cleanups: Array<() => Promise<unknown>> = []
  try {
    const postgres = await startPostgresServer(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections })
    cleanups.push(() => postgres.remove())
    const nats = await startNatsServer()
    cleanups.push(() => nats.remove())
    const dns: TestDnsServer = await startDnsServer()
    cleanups.push(() => dns.close())
    const smtp = await startSmtpSink()
    cleanups.push(() => smtp.close())
    const port = await freePort()
    const stack = await createStack({
      NATS_URL: nats.url,
      SMTP_URL: smtp.url,
      DNS_SERVERS: dns.address,
      SEND_RATE_PER_SECOND: String(SEND_RATE),
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      // The rate limiter on (it counts in Postgres) but never reached; short leases so a retry whose first
      // attempt could not record its outcome takes the key over within seconds.
      RATE_LIMIT_PER_MINUTE: "1000000",
      IDEMPOTENCY_LEASE_SECONDS: "2"
    }, { adminUrl: postgres.adminUrl })
    cleanups.unshift(() => stack.stop())
    mark("stack")
    const workerNatsUrl = options.workerNatsUrl ? await options.workerNatsUrl(nats) : nats.url
    const [api, worker] = await Promise.all([stack.start("api"), stack.start("worker", { METRICS_PORT: "0", NATS_URL: workerNatsUrl })])
    mark("processes")
    const project = await stack.createProject()
    await verifyDomain({ api, dns }, project.secretKey, "acme.test")
    const env: FaultEnvironment = { postgres, nats, stack, api, worker, project, smtp }
    mark("domain")
    const campaign = await prepareCampaign(env)
    const setUpAt = Date.now()

    const load = startTrackLoad(api, project, { contacts: CONTACTS, domain: DOMAIN })

    /** What a failure (or a slow recovery) needs to be understood: the processes' logs and the campaign's mail rows. */
    const writeDiagnostics = async (what: string) => {
      const file = `${tmpdir()}/mailstream-fault-${what}-${Date.now()}.log`
      const rows = await stack.query(
        "SELECT to_email, status, attempts, sent_at, created_at, next_attempt_at, error FROM emails WHERE to_email IN (SELECT to_email FROM emails GROUP BY to_email HAVING count(*) > 1) OR attempts > 1 ORDER BY to_email"
      ).catch((queryError) => [String(queryError)])
      const stored = new Set(
        (await stack.query<{ id: string }>("SELECT id FROM events WHERE project_id = $1 AND name = 'step'", [project.id]).catch(() => []))
          .map((row) => row.id)
      )
      const missing = [...load.accepted].flatMap(([contact, ids]) =>
        ids.flatMap((id, index) => (stored.has(id) ? [] : [`c${contact} #${index + 1} ${id}`]))
      )
      const deadLetters = await stack.query("SELECT source, subject, error FROM dead_letters").catch((queryError) => [String(queryError)])
      const arrivals = smtp.messages.map((mail) =>
        `${new Date(mail.receivedAt).toISOString()} ${mail.envelopeTo.join(",")} ${mail.parsed.messageId}`
      )
      writeFileSync(
        file,
        [
          `rows ${JSON.stringify(rows, null, 1)}`,
          `missing ${missing.join("\n")}`,
          `dead letters ${JSON.stringify(deadLetters)}`,
          "arrivals",
          ...arrivals,
          "api",
          ...api.logs,
          "worker",
          ...worker.logs
        ].join("\n")
      )
      return file
    }
    let ended = false
    try {
      await sleep(LOAD_BEFORE_MS)
      const sending = await secret(env, "POST", `/campaigns/${campaign}/send`, {})
      expect(sending.status, sending.text).toBeLessThan(300)
      // In flight: some recipients have their mail, most do not yet.
      await eventually(async () => expect(smtp.messages.length).toBeGreaterThanOrEqual(3), 60_000)
      const downAt = Date.now()
      await fault.begin(env)
      await sleep(FAULT_MS)
      await fault.end(env)
      ended = true
      const upAt = Date.now()
      // Recovered by itself: new events are accepted at once again.
      await load.recovered(30_000)
      const recoveredAt = Date.now()
      await sleep(LOAD_AFTER_MS)
      await load.stop()

      const summary = summarize(load, { mailsByRecovery: smtp.messages.length, recoveredAfterMs: recoveredAt - upAt })
      expectRetryableAnswers(load, summary)
      if (fault.down) {
        expect(
          load.ready.some((probe) => probe.at > downAt && probe.at < upAt && probe.status === 503 && probe.body[fault.down!] === false),
          summary
        ).toBe(true)
      }
      expect(load.ready.at(-1), summary).toMatchObject({ status: 200, body: { postgres: true, nats: true } })
      const total = await expectStoredExactlyOnce(stack, project, load, DOMAIN, STORED_WITHIN_MS)
      const storedAt = Date.now()

      // The campaign finishes, and each recipient got exactly one mail.
      const done = await eventually(async () => {
        const body = (await secret(env, "GET", `/campaigns/${campaign}`)).json
        expect(body.status).toBe("SENT")
        return body
        // Once in seven quiet runs it was still SENDING here: a row whose re-queue failed while Postgres was
        // away stayed SENDING with no one to re-queue it while the worker kept its leases (Sender.ts now retries
        // the re-queue, and its sweep re-queues rows no round holds).
      }, 40_000)
      const perRecipient = new Map<string, number>()
      for (const mail of smtp.messages) for (const to of mail.envelopeTo) perRecipient.set(to, (perRecipient.get(to) ?? 0) + 1)
      const doubled = [...perRecipient].filter(([, count]) => count > 1)
      expect(doubled, summary).toEqual([])
      expect(perRecipient.size, summary).toBe(RECIPIENTS)
      expect(done).toMatchObject({ totalRecipients: RECIPIENTS, sentCount: RECIPIENTS })
      const timings = {
        setUpMs: setUpAt - started,
        recoveredAfterMs: recoveredAt - upAt,
        storedAfterMs: storedAt - upAt,
        campaignDoneAfterMs: Date.now() - upAt,
        accepted: total,
        // How often the sender had to put back mail a lost claim or an unrecorded re-queue left SENDING.
        orphansRequeued: worker.logs.filter((line) => line.includes("by a lost claim goes back")).length,
        requeueRetries: worker.logs.filter((line) => line.includes("re-queueing an email failed")).length
      }
      console.info(`${summary} ${JSON.stringify(timings)}`)
      if (timings.campaignDoneAfterMs > SLOW_CAMPAIGN_MS) console.warn(`slow campaign: logs in ${await writeDiagnostics("slow")}`)
      return { env, load, timings }
    } catch (error) {
      console.warn(`fault test failed: logs in ${await writeDiagnostics("failed")}`)
      throw error
    } finally {
      if (!ended) await fault.end(env).catch(() => undefined)
      await load.stop()
    }
  } finally {
    for (const cleanup of cleanups) await cleanup().catch((error) => console.warn("cleanup failed", error))
  }
}

export type { TrackLoad }
