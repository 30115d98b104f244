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
import { createStack, type Service, type Stack } from "../support/stack.ts"
import { expectRetryableAnswers, expectStoredExactlyOnce, sleep, startTrackLoad, summarize } from "../support/trackLoad.ts"

const CONTACTS = 12
const DOMAIN = "outage.test"
/** Load before the outage, the outage itself, and load after the recovery. */
const LOAD_BEFORE_MS = 1_500
const OUTAGE_MS = 3_000
const LOAD_AFTER_MS = 1_500

interface Outage {
  /** Resolves when the dependency should go: by default after LOAD_BEFORE_MS of load. */
  readonly when?: (all: Service) => Promise<void>
  readonly stop: () => Promise<void>
  readonly start: () => Promise<void>
}

const runOutage = async (stack: Stack, outage: Outage, down: string) => {
  const api = await stack.start("all")
  const project = await stack.createProject()
  const load = startTrackLoad(api, project, { contacts: CONTACTS, domain: DOMAIN })

  await (outage.when ? outage.when(api) : sleep(LOAD_BEFORE_MS))
  const downAt = Date.now()
  await outage.stop()
  await sleep(OUTAGE_MS)
  await outage.start()
  const upAt = Date.now()
  // Recovered by itself: a new event is accepted at once again.
  await load.recovered()
  const recoveredAt = Date.now()
  await sleep(LOAD_AFTER_MS)
  await load.stop()

  const summary = summarize(load, { down, recoveredAfterMs: recoveredAt - upAt })
  expectRetryableAnswers(load, summary)
  // The outage was felt (a keyed request needs Postgres and NATS both), and said by /readyz: a request in
  // flight during it, sent before the dependency came back and answered after it went (a publish waits up
  // to its timeout for NATS, so one sent just before the kill may be answered after the restart).
  const during = load.answers.filter((answer) => answer.at > downAt && answer.sentAt < upAt)
  expect(during.some((answer) => answer.route === "track with key" && answer.status === 503), summary).toBe(true)
  expect(load.ready.some((probe) => probe.at > downAt && probe.status === 503 && probe.body[down] === false), summary).toBe(true)
  expect(load.ready.at(-1)).toMatchObject({ status: 200, body: { postgres: true, nats: true } })

  const total = await expectStoredExactlyOnce(stack, project, load, DOMAIN)
  console.info(`${summary}: all ${total} stored ${Date.now() - upAt} ms after the restart`)
  return { total }
}

// The rate limiter on (it counts in Postgres) but never reached; short leases so a retry whose first
// attempt could not record its outcome takes the key over within seconds.
const ENV = { RATE_LIMIT_PER_MINUTE: "1000000", IDEMPOTENCY_LEASE_SECONDS: "2" }

describe("a dependency lost under /v1/track load", () => {
  it.skipIf(!POSTGRES_SERVER_AVAILABLE)(
    "Postgres crashed and restarted: 503 with Retry-After meanwhile, nothing lost or doubled, recovers by itself",
    async () => {
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
    },
    90_000
  )

  it.skipIf(!NATS_SERVER)(
    "nats-server killed and restarted: 503 with Retry-After meanwhile, nothing lost or doubled, recovers by itself",
    async () => {
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
    },
    90_000
  )
})
