/**
 * Graceful shutdown of a worker: SIGTERM in the middle of a load of /v1/track/batch (through an api
 * process, two workers sharing the partitions). The stopped worker exits 0 promptly, hands its leases
 * over at once (the other worker leases every partition within 2 s of the exit, not after the lease
 * expiry), and every accepted event is applied exactly once, with no lag left on any partition.
 */
import { jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/nats.ts"
import { createStack, request, type Service, type Stack, type TestProject } from "../support/stack.ts"

const PARTITIONS = 32
const CONTACTS = 40
const EVENTS_PER_BATCH = 25
const LOADERS = 3

let stack: Stack
let api: Service
let project: TestProject

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
  api = await stack.start("api")
  project = await stack.createProject("shutdown")
})
afterAll(async () => {
  await stack?.stop()
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Live leases per worker id. */
const owners = async () =>
  stack.query<{ owner: string; n: number }>(
    `SELECT l.owner, count(*)::int AS n FROM partition_leases l JOIN partition_state s ON s.partition = l.partition
     WHERE s.expires_at > now() AND l.owner IS NOT NULL GROUP BY l.owner ORDER BY l.owner`
  )

const exitOf = (service: Service) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) => {
    if (service.process.exitCode !== null || service.process.signalCode !== null) {
      resolve({ code: service.process.exitCode, signal: service.process.signalCode, at: Date.now() })
    } else service.process.once("exit", (code, signal) => resolve({ code, signal, at: Date.now() }))
  })

/** Sends batches of events with a running number until stopped; answers how many events were accepted. */
const load = (isRunning: () => boolean, loader: number, accepted: { count: number }) =>
  (async () => {
    for (let batch = 0; isRunning(); batch++) {
      const key = randomUUID()
      const events = Array.from({ length: EVENTS_PER_BATCH }, (_, i) => ({
        email: `c${(batch * EVENTS_PER_BATCH + i + loader) % CONTACTS}@shutdown.test`,
        event: "load",
        data: { n: `${loader}-${batch}-${i}` }
      }))
      // Retried with the same Idempotency-Key until accepted, so each event is recorded once.
      for (let attempt = 0;; attempt++) {
        const answer = await request(api.url, "POST", "/v1/track/batch", {
          key: project.publicKey,
          body: { events },
          headers: { "idempotency-key": key }
        }).catch((error) => ({ status: 0, json: undefined, text: String(error) }))
        if (answer.status === 200) {
          expect(answer.json.data).toEqual({ accepted: EVENTS_PER_BATCH, rejected: [] })
          accepted.count += EVENTS_PER_BATCH
          break
        }
        if (attempt > 20) throw new Error(`track/batch keeps failing: ${answer.status} ${answer.text}`)
        await sleep(100)
      }
    }
  })()

const storedEvents = async () =>
  (await stack.query<{ n: number; distinct: number }>(
    "SELECT count(*)::int AS n, count(DISTINCT data->>'n')::int AS distinct FROM events WHERE project_id = $1",
    [project.id]
  ))[0]!

/** Messages of each partition's lane consumer not yet applied (delivered or not). */
const lag = async () => {
  const nc = await connect({ servers: stack.env.NATS_URL })
  try {
    const jsm = await jetstreamManager(nc)
    let pending = 0
    for (let partition = 0; partition < PARTITIONS; partition++) {
      const info = await jsm.consumers.info(`${stack.natsPrefix}_IN`, `${stack.natsPrefix}_part_${partition}`)
      pending += info.num_pending + info.num_ack_pending
    }
    return pending
  } finally {
    await nc.close()
  }
}

describe("worker graceful shutdown", () => {
  it("SIGTERM mid-load: exits 0, the other worker leases every partition within 2 s, each event applied once", async () => {
    const stopping = await stack.start("worker")
    const staying = await stack.start("worker")
    await eventually(async () => expect((await owners()).map((row) => row.n)).toEqual([16, 16]), 20_000)

    const accepted = { count: 0 }
    let running = true
    const loaders = Array.from({ length: LOADERS }, (_, loader) => load(() => running, loader, accepted))
    // Mid-load: both workers are applying events.
    await eventually(async () => expect((await storedEvents()).n).toBeGreaterThan(300), 30_000)

    const exited = exitOf(stopping)
    const signalledAt = Date.now()
    stopping.process.kill("SIGTERM")
    const exit = await exited
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null })
    expect(exit.at - signalledAt).toBeLessThan(10_000)
    expect(stopping.logs.some((line) => line.includes("worker handed its partitions over"))).toBe(true)

    // The remaining worker leases all partitions within 2 s of the exit (lease expiry would take 6 s).
    await eventually(async () => expect(await owners()).toEqual([{ owner: expect.any(String), n: PARTITIONS }]), 5_000)
    expect(Date.now() - exit.at).toBeLessThan(2_000)

    // Load goes on for a while on the one worker, then stops.
    await sleep(1_500)
    running = false
    await Promise.all(loaders)
    expect(accepted.count).toBeGreaterThan(300)

    await eventually(async () => expect(await storedEvents()).toEqual({ n: accepted.count, distinct: accepted.count }), 30_000)
    // Applied once each: the per-contact aggregates count every event exactly once.
    const [aggregate] = await stack.query<{ total: number }>(
      "SELECT sum(count)::int AS total FROM event_aggregates WHERE project_id = $1",
      [project.id]
    )
    expect(aggregate!.total).toBe(accepted.count)
    await eventually(async () => expect(await lag()).toBe(0), 10_000)
    await staying.stop()
  }, 120_000)
})
