/**
 * A dependency lost under /v1/track load: Postgres crashed (`pg_ctl -m immediate stop`), or nats-server
 * SIGKILLed, and restarted a few seconds later, each a private server of this test. Clients send each
 * contact's events one after the other with an Idempotency-Key and retry what the api says to retry
 * (503 and 429 after Retry-After, 409 in progress). While the dependency is down every route answers 503
 * SERVICE_UNAVAILABLE with Retry-After, never 500; /readyz says which dependency is down; the service
 * recovers by itself; every event accepted is stored exactly once, in each contact's order.
 */
import { spawn } from "node:child_process"
import { rm } from "node:fs/promises"
import { describe, expect, it } from "vitest"
import { eventually, freePort, NATS_SERVER } from "../support/nats.ts"
import { POSTGRES_SERVER_AVAILABLE, startPostgresServer } from "../support/postgresServer.ts"
import { createStack, readResponse, type Service, type Stack, type TestProject } from "../support/stack.ts"

const CONTACTS = 12
/** Load before the outage, the outage itself, and load after the recovery. */
const LOAD_BEFORE_MS = 1_500
const OUTAGE_MS = 3_000
const LOAD_AFTER_MS = 1_500

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Answer {
  readonly route: string
  /** When the request was sent. */
  readonly sentAt: number
  /** When it was answered. */
  readonly at: number
  readonly status: number
  readonly code: string | undefined
  readonly retryAfter: string | null
}

interface Outage {
  /** Resolves when the dependency should go: by default after LOAD_BEFORE_MS of load. */
  readonly when?: (all: Service) => Promise<void>
  readonly stop: () => Promise<void>
  readonly start: () => Promise<void>
}

const call = async (url: string, init: RequestInit, route: string, answers: Array<Answer>) => {
  const sentAt = Date.now()
  const { status, json, headers } = await readResponse(await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) }))
  answers.push({ route, sentAt, at: Date.now(), status, code: json?.error?.code, retryAfter: headers.get("retry-after") })
  return { status, json, retryAfter: headers.get("retry-after") }
}

/** Sends one event until the api accepted it (its event id) or refused it for good (undefined). */
const sendUntilAccepted = async (api: Service, project: TestProject, contact: number, seq: number, answers: Array<Answer>) => {
  const body = JSON.stringify({ email: `c${contact}@outage.test`, event: "step", data: { seq } })
  const headers = { authorization: `Bearer ${project.publicKey}`, "content-type": "application/json", "idempotency-key": `c${contact}-${seq}` }
  for (;;) {
    let answer
    try {
      answer = await call(`${api.url}/v1/track`, { method: "POST", headers, body }, "track with key", answers)
    } catch {
      // No answer at all (the connection went away): the key makes the retry safe.
      await sleep(200)
      continue
    }
    if (answer.status === 200) return answer.json.data.event as string
    const details = answer.json?.error?.details
    if (answer.status === 409 && details?.inProgress === false) return details.originalResponse.data.event as string
    const retry = answer.status === 503 || answer.status === 429 || (answer.status === 409 && details?.inProgress === true)
    if (!retry) return undefined
    await sleep(Math.min(1_000, Number(answer.retryAfter ?? 1) * 1_000))
  }
}

/** Requests without a key (the /v1/track fast path) and a dashboard read, and /readyz, every 100 ms. */
const probe = async (api: Service, project: TestProject, running: () => boolean, answers: Array<Answer>, ready: Array<{ at: number; status: number; body: any }>) => {
  for (let i = 0; running(); i++) {
    await Promise.all([
      call(`${api.url}/v1/track`, {
        method: "POST",
        headers: { authorization: `Bearer ${project.publicKey}`, "content-type": "application/json" },
        body: JSON.stringify({ email: `probe${i % 3}@outage.test`, event: "probe" })
      }, "track without key", answers).catch(() => undefined),
      call(`${api.url}/contacts?limit=1`, { headers: { authorization: `Bearer ${project.secretKey}` } }, "GET /contacts", answers).catch(() => undefined),
      fetch(`${api.url}/readyz`, { signal: AbortSignal.timeout(5_000) })
        .then(async (response) => ready.push({ at: Date.now(), status: response.status, body: await response.json() }))
        .catch(() => undefined)
    ])
    await sleep(100)
  }
}

const runOutage = async (stack: Stack, outage: Outage, down: string) => {
  const api = await stack.start("all")
  const project = await stack.createProject()
  const answers: Array<Answer> = []
  const ready: Array<{ at: number; status: number; body: any }> = []
  const accepted = new Map<number, Array<string>>()
  const lost: Array<string> = []
  let loading = true
  const load = async (contact: number) => {
    const ids: Array<string> = []
    accepted.set(contact, ids)
    for (let seq = 1; loading; seq++) {
      const id = await sendUntilAccepted(api, project, contact, seq, answers)
      if (id === undefined) lost.push(`c${contact}-${seq}`)
      else ids.push(id)
    }
  }
  const loads = Array.from({ length: CONTACTS }, (_, contact) => load(contact))
  const probing = probe(api, project, () => loading, answers, ready)

  await (outage.when ? outage.when(api) : sleep(LOAD_BEFORE_MS))
  const downAt = Date.now()
  await outage.stop()
  await sleep(OUTAGE_MS)
  await outage.start()
  const upAt = Date.now()
  // Recovered by itself: a new event is accepted at once again.
  await eventually(async () => {
    const recent = answers.filter((answer) => answer.route === "track with key" && answer.at > Date.now() - 300)
    expect(recent.length).toBeGreaterThan(0)
    expect(recent.every((answer) => answer.status === 200)).toBe(true)
  }, 20_000)
  const recoveredAt = Date.now()
  await sleep(LOAD_AFTER_MS)
  loading = false
  await Promise.all([...loads, probing])

  const summary = JSON.stringify({
    down,
    recoveredAfterMs: recoveredAt - upAt,
    byRoute: Object.entries(Object.groupBy(answers, (answer) => `${answer.route} ${answer.status} ${answer.code ?? ""}`))
      .map(([key, list]) => `${key}: ${list!.length}`)
  })

  // Never a 500: while the dependency is away, a quick 503 with Retry-After, on every route.
  expect(answers.filter((answer) => ![200, 409, 429, 503].includes(answer.status)), summary).toEqual([])
  for (const answer of answers.filter((answer) => answer.status === 503)) {
    expect(answer, summary).toMatchObject({ code: "SERVICE_UNAVAILABLE", retryAfter: expect.stringMatching(/^[1-9]\d*$/) })
  }
  // The outage was felt (a keyed request needs Postgres and NATS both), and said by /readyz: a request in
  // flight during it, sent before the dependency came back and answered after it went (a publish waits up
  // to its timeout for NATS, so one sent just before the kill may be answered after the restart).
  const during = answers.filter((answer) => answer.at > downAt && answer.sentAt < upAt)
  expect(during.some((answer) => answer.route === "track with key" && answer.status === 503), summary).toBe(true)
  expect(ready.some((probe) => probe.at > downAt && probe.status === 503 && probe.body[down] === false), summary).toBe(true)
  expect(ready.at(-1)).toMatchObject({ status: 200, body: { postgres: true, nats: true } })
  expect(lost, summary).toEqual([])

  // Everything accepted is stored once, each contact's events in the order they were sent.
  const total = [...accepted.values()].reduce((sum, ids) => sum + ids.length, 0)
  await eventually(async () => {
    const [row] = await stack.query<{ n: number }>("SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND name = 'step'", [project.id])
    expect(row!.n).toBe(total)
  }, 30_000)
  console.info(`${summary}: all ${total} stored ${Date.now() - upAt} ms after the restart`)
  for (const [contact, ids] of accepted) {
    const stored = await stack.query<{ id: string; seq: number }>(
      `SELECT e.id, (e.data->>'seq')::int AS seq FROM events e JOIN contacts c ON c.id = e.contact_id
       WHERE e.project_id = $1 AND c.email = $2 AND e.name = 'step' ORDER BY e.created_at, e.id`,
      [project.id, `c${contact}@outage.test`])
    expect(stored.map((row) => row.id)).toEqual(ids)
    expect(stored.map((row) => row.seq)).toEqual(ids.map((_, index) => index + 1))
    const [data] = await stack.query<{ seq: number }>(
      "SELECT (data->>'seq')::int AS seq FROM contacts WHERE project_id = $1 AND email = $2", [project.id, `c${contact}@outage.test`])
    expect(data!.seq).toBe(ids.length)
  }
  return { total, answers }
}

// The rate limiter on (it counts in Postgres) but never reached; short leases so a retry whose first
// attempt could not record its outcome takes the key over within seconds.
const ENV = { RATE_LIMIT_PER_MINUTE: "1000000", IDEMPOTENCY_LEASE_SECONDS: "2" }

describe("a dependency lost under /v1/track load", () => {
  it.skipIf(!POSTGRES_SERVER_AVAILABLE)("Postgres crashed and restarted: 503 with Retry-After meanwhile, nothing lost or doubled, recovers by itself", async () => {
    const postgres = await startPostgresServer()
    let stack: Stack | undefined
    let up = true
    try {
      stack = await createStack(ENV, { adminUrl: postgres.adminUrl })
      const { total } = await runOutage(stack, {
        // While the worker is still taking its partitions (it starts them one by one after `Listening`):
        // the ones it leased but could not start yet must not stay leased to it, unread.
        when: (all) => eventually(async () => expect(all.logs.some((line) => line.includes('"partition acquired"'))).toBe(true), 20_000),
        stop: async () => {
          up = false
          await postgres.stop("immediate")
        },
        start: async () => {
          await postgres.start()
          up = true
        }
      }, "postgres")
      expect(total).toBeGreaterThan(CONTACTS)
    } finally {
      if (!up) await postgres.start().catch(() => undefined)
      await stack?.stop().catch(() => undefined)
      await postgres.remove()
    }
  }, 90_000)

  it.skipIf(!NATS_SERVER)("nats-server killed and restarted: 503 with Retry-After meanwhile, nothing lost or doubled, recovers by itself", async () => {
    const port = await freePort()
    const dir = `/tmp/mailstream-nats-${port}`
    const startNats = () => spawn(NATS_SERVER!, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir], { stdio: "ignore" })
    let nats = startNats()
    let stack: Stack | undefined
    try {
      await sleep(500)
      stack = await createStack({ ...ENV, NATS_URL: `nats://127.0.0.1:${port}` })
      const { total } = await runOutage(stack, {
        stop: async () => {
          const exited = new Promise((resolve) => nats.once("exit", resolve))
          nats.kill("SIGKILL")
          await exited
        },
        start: async () => {
          nats = startNats()
        }
      }, "nats")
      expect(total).toBeGreaterThan(CONTACTS)
    } finally {
      await stack?.stop().catch(() => undefined)
      nats.kill("SIGKILL")
      await rm(dir, { recursive: true, force: true })
    }
  }, 90_000)
})
