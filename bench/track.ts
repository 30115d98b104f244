/**
 * `npm run bench -- track [parts]`: /v1/track, each part against the bare INSERT server's req/s
 * measured in the same run. Parts (comma-separated; default all, in this order):
 *   m1     the `api` role alone at full speed, then at 70 % of that rate (latency)
 *   m6     100,000 events published to stream IN while no worker runs, then one worker drains them
 *   m2     `all` (npm start's process layout) with 50 segments at the baseline's rate for 15 s, lag sampled
 *   scale  an `api` and 1, then 2, `worker` processes on one project at the baseline's rate: events/s
 *          and CPU µs per event of the api, each worker, Postgres and NATS (from /proc)
 *   batch  POST /v1/track/batch, 100 events per request, the `api` alone (BENCH_BATCH_ROLE=all: on `all`,
 *          its worker applying what is accepted)
 */
import { jetstream } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { uuidv7 } from "../src/domain/ids.ts"
import { streamNames } from "../src/stream/subjects.ts"
import { freePort } from "../test/support/mail.ts"
import type { Service } from "../test/support/stack.ts"
import { type BenchEnvironment, withEnvironment } from "./harness/environment.ts"
import { load, type LoadOptions, type LoadResult } from "./harness/load.ts"
import { cpuWindow, postgresOf, processAlone, type ProcessGroup, processesNamed, processTree, rssBytes, treeOf } from "./harness/proc.ts"
import { DURATION, NATS_URL, setting, sleep, waitFor } from "./harness/settings.ts"
import { ratio, round } from "./harness/stats.ts"
import { resetStatements, topStatements } from "./harness/statements.ts"
import {
  createFiftySegments,
  drained,
  segmentedBody,
  segmentsBackfilled,
  storedEvents,
  sustain,
  type Sustained,
  touchEveryContact,
  trackBody
} from "./workload.ts"

const PARTS = ["m1", "m6", "m2", "scale", "batch", "memory"] as const
/** Run when no part is named: every part but `memory` (minutes of its own). */
const DEFAULT_PARTS = PARTS.filter((part) => part !== "memory")
type Part = (typeof PARTS)[number]

const partsOf = (args: ReadonlyArray<string>): ReadonlySet<Part> => {
  const asked = args.flatMap((arg) => arg.split(",")).filter((part) => part !== "")
  const unknown = asked.filter((part) => !PARTS.includes(part as Part))
  if (unknown.length > 0) throw new Error(`unknown part(s) ${unknown.join(", ")}; parts: ${PARTS.join(", ")}`)
  return new Set(asked.length > 0 ? (asked as Array<Part>) : DEFAULT_PARTS)
}

/** Postgres (our database's processes) and nats-server (the whole server: it may serve others too). */
const infrastructure = (env: BenchEnvironment): Array<ProcessGroup> => [
  postgresOf("postgres", env.query),
  processesNamed("nats", "nats-server")
]

/** Every worker holds partitions (logged as it takes them); false after 20 s. */
const holdingPartitions = (workers: ReadonlyArray<Service>) =>
  waitFor(() => workers.every((worker) => worker.logs.some((line) => line.includes("partition acquired"))), 20_000, 250)

/** Lets one worker apply what is left in the stream, then stops it. */
const drainWithWorker = async (env: BenchEnvironment, worker?: Service) => {
  const draining = worker ?? await env.start("worker")
  await holdingPartitions([draining])
  await drained(env)
  await draining.stop()
}

/**
 * One load measurement with the CPU every party spent per request (from /proc): the load generator
 * (this process), the server, Postgres and NATS. `serverSide` sums all but the load generator: what a
 * request costs the machine that serves it, the figure that predicts a bigger machine when these two
 * cores (shared with the load generator) bound the req/s.
 */
const loadWithCpu = async (label: string, url: string, options: LoadOptions, server: ProcessGroup, env: BenchEnvironment) => {
  const window = await cpuWindow([processAlone("loadGenerator", process.pid), server, ...infrastructure(env)])
  const result = await load(label, url, options)
  const cpu = await window.end(result.requests)
  const micros = (name: string) => cpu.groups[name]?.microsPerEvent ?? NaN
  const microsPerRequest = {
    loadGenerator: micros("loadGenerator"),
    server: micros(server.name),
    postgres: micros("postgres"),
    nats: micros("nats"),
    serverSide: micros(server.name) + micros("postgres") + micros("nats")
  }
  return { ...result, cpuMicrosPerRequest: microsPerRequest }
}

/**
 * M1: the api alone, at full speed and at 70 % of it; the baseline measured between the warm-ups and M1.
 * Both full-speed runs also report CPU µs per request: `perCoreRatio` is the baseline's server-side
 * µs per request over the api's (server, Postgres, NATS), the ratio a machine with cores to spare
 * beside the load generator would measure.
 */
const m1Part = async (env: BenchEnvironment, baselineServer: { readonly url: string; readonly pid: number }) => {
  const auth = { authorization: `Bearer ${env.project.publicKey}` }
  const api = await env.start("api")
  const trackUrl = `${api.url}/v1/track`
  await load("warmup", baselineServer.url, { body: trackBody, duration: 3 })
  await load("warmup", trackUrl, { body: trackBody, headers: auth, duration: 5 })
  const baseline = await loadWithCpu("baseline", baselineServer.url, { body: trackBody }, processTree("baseline", baselineServer.pid), env)
  // The floor: a bare node:http JSON server (no database, no stream), the api's own CPU held against it.
  const floorServer = await env.helper(["bench/baselines/jsonServer.ts"], /port=(\d+)/)
  const floorUrl = `http://127.0.0.1:${floorServer.match[1]}`
  await load("warmup", floorUrl, { body: trackBody, duration: 3 })
  const floor = await loadWithCpu("floor", floorUrl, { body: trackBody }, processTree("floor", floorServer.child.pid!), env)
  const m1 = await loadWithCpu("track", trackUrl, { body: trackBody, headers: auth }, processTree("api", api.process.pid!), env)
  const at70 = await load("track@70%", trackUrl, { body: trackBody, headers: auth, rate: Math.round(m1.requestsPerSecond * 0.7) })
  await api.stop()
  const perCoreRatio = ratio(baseline.cpuMicrosPerRequest.serverSide, m1.cpuMicrosPerRequest.serverSide)
  return {
    baseline,
    floor,
    m1: {
      ...m1,
      ratio: ratio(m1.requestsPerSecond, baseline.requestsPerSecond),
      perCoreRatio,
      // The api process's CPU per request over the bare JSON server's (target: at most 2).
      apiOverFloor: ratio(m1.cpuMicrosPerRequest.server, floor.cpuMicrosPerRequest.server)
    },
    m1At70PercentLoad: at70
  }
}

/**
 * M6: a backlog published straight to stream IN (envelopes of 100 events on the project's ingest
 * subject, as the api publishes them) while no worker runs; then one worker starts and we time until
 * BENCH_BACKLOG events are stored: the split into lanes included.
 */
const m6Part = async (env: BenchEnvironment) => {
  const backlog = setting("BENCH_BACKLOG", 100_000)
  const contactId = (await env.query<{ id: string }>(
    "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES ($1, $2, 'drain@bench.test', true, '{}', now(), now()) RETURNING id",
    [uuidv7(), env.project.id]
  ))[0]!.id
  const nc = await connect({ servers: NATS_URL })
  const js = jetstream(nc)
  const subject = streamNames(env.natsPrefix).ingestSubject(env.project.id, setting("PARTITIONS", 32))
  const perEnvelope = 100
  const at = new Date().toISOString()
  for (let sent = 0; sent < backlog;) {
    const publishes = []
    for (let i = 0; i < 50 && sent < backlog; i++, sent += perEnvelope) {
      const events = Array.from({ length: perEnvelope }, (_, k) => ({
        eventId: uuidv7(),
        contactId,
        email: "drain@bench.test",
        name: "drained",
        subscribed: null,
        set: {},
        remove: [],
        data: { k: sent + k },
        at
      }))
      publishes.push(js.publish(subject, JSON.stringify({ kind: "track", projectId: env.project.id, events }), { msgID: uuidv7() }))
    }
    await Promise.all(publishes)
  }
  await nc.close()
  const before = await storedEvents(env)
  const drainStart = performance.now()
  const worker = await env.start("worker")
  while ((await storedEvents(env)) - before < backlog) await sleep(100)
  const drainSeconds = (performance.now() - drainStart) / 1000
  return { worker, m6: { events: backlog, seconds: round(drainSeconds, 1), eventsPerSecond: Math.round(backlog / drainSeconds) } }
}

/**
 * Memory: BENCH_MEMORY_CONTACTS (default 1,000,000) distinct contacts, one event each, published to
 * stream IN before a worker starts, with the 50 segments; the worker's RSS sampled every 2 s while it
 * applies them. Its kept facts are bounded by FACTS_CACHE_CONTACTS (laneFacts.ts), so RSS should level
 * off once that many contacts were seen, whatever the number of contacts.
 */
const memoryPart = async (env: BenchEnvironment) => {
  const contacts = setting("BENCH_MEMORY_CONTACTS", 1_000_000)
  // The segments created and backfilled (over no contacts yet) before the contacts come: only the events
  // are measured, not a backfill of a million contacts in every lane.
  const api = await env.start("api")
  const backfiller = await env.start("worker")
  await createFiftySegments(api.url, env.project.secretKey)
  await segmentsBackfilled(env)
  await Promise.all([api.stop(), backfiller.stop()])
  await env.query(
    `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
     SELECT gen_random_uuid(), $1, 'm' || n || '@bench.test', true, jsonb_build_object('n', n % 60000), now(), now()
     FROM generate_series(1, $2::int) n`,
    [env.project.id, contacts]
  )
  await analyzed(env)
  const ids = await env.query<{ id: string; email: string }>(
    "SELECT id, email FROM contacts WHERE project_id = $1 AND email LIKE 'm%@bench.test'",
    [env.project.id]
  )
  const nc = await connect({ servers: NATS_URL })
  const js = jetstream(nc)
  const subject = streamNames(env.natsPrefix).ingestSubject(env.project.id, setting("PARTITIONS", 32))
  const at = new Date().toISOString()
  for (let sent = 0; sent < ids.length;) {
    const publishes = []
    for (let i = 0; i < 50 && sent < ids.length; i++, sent += 100) {
      const events = ids.slice(sent, sent + 100).map((contact, k) => ({
        eventId: uuidv7(),
        contactId: contact.id,
        email: contact.email,
        name: k % 3 ? "page_view" : "click",
        subscribed: null,
        set: {},
        remove: [],
        data: {},
        at
      }))
      publishes.push(js.publish(subject, JSON.stringify({ kind: "track", projectId: env.project.id, events }), { msgID: uuidv7() }))
    }
    await Promise.all(publishes)
  }
  await nc.close()
  const before = await storedEvents(env)
  const started = performance.now()
  const worker = await env.start("worker")
  const samples: Array<{ second: number; applied: number; rssMiB: number }> = []
  for (;;) {
    const applied = (await storedEvents(env)) - before
    const rss = (await Promise.all(treeOf(worker.process.pid!).map((pid) => rssBytes(pid)))).reduce((sum, bytes) => sum + (bytes ?? 0), 0)
    samples.push({ second: Math.round((performance.now() - started) / 1000), applied, rssMiB: Math.round(rss / 2 ** 20) })
    if (applied >= ids.length) break
    await sleep(2000)
  }
  await worker.stop()
  const at25 = samples.find((sample) => sample.applied >= ids.length / 4)!
  const last = samples.at(-1)!
  return {
    contacts: ids.length,
    factsCacheContacts: Number(process.env.FACTS_CACHE_CONTACTS ?? 50_000),
    seconds: last.second,
    eventsPerSecond: Math.round(ids.length / Math.max(1, last.second)),
    rssMiBAtQuarter: at25.rssMiB,
    rssMiBAtEnd: last.rssMiB,
    rssMiBPeak: Math.max(...samples.map((sample) => sample.rssMiB)),
    samples
  }
}

/**
 * The set-up above fills the tables in seconds, before autovacuum's first analyze (it looks once a
 * minute): without statistics the planner takes the 10,000 contacts for a handful and reads the batch's
 * contacts and aggregates through the wrong indexes. A database that has run for a minute has them.
 */
const analyzed = (env: BenchEnvironment) => env.query("ANALYZE")

const databaseOf = (env: BenchEnvironment) => new URL(env.databaseUrl).pathname.slice(1)

const sustainedSummary = (sustained: Sustained, baselineRps: number) => ({
  offeredRate: sustained.offeredRate,
  achievedRequestsPerSecond: sustained.load.requestsPerSecond,
  appliedEventsPerSecond: sustained.window.appliedPerSecond,
  ratio: ratio(Math.min(sustained.window.acceptedPerSecond, sustained.window.appliedPerSecond), baselineRps),
  latencyP99Ms: sustained.load.latencyP99Ms,
  non2xx: sustained.load.non2xx,
  lagSamples: sustained.lagSamples,
  lagGrowthPerSecond: sustained.window.lagGrowthPerSecond,
  lagGrowing: sustained.window.lagGrowing,
  secondsToCatchUpAfterLoad: sustained.secondsToCatchUpAfterLoad,
  segmentChangesPerEvent: sustained.segmentChangesPerEvent
})

/**
 * M2: `all` with 50 segments at the baseline's rate (BENCH_M2_RATE) for 15 s, twice on the same
 * processes. The first window (`cold`) carries the contacts' first events since the segments were
 * created: each makes its contact enter tens of segments (their event windows), a one-time burst. The
 * second (`m2` proper, steady state) finds every contact in its segments, as a running project does.
 */
const m2Part = async (env: BenchEnvironment, rate: number, baselineRps: number) => {
  // Analyzed before the backfill (its plans read the contacts) and after it (the memberships it wrote).
  await analyzed(env)
  const all = await env.start("all")
  await createFiftySegments(all.url, env.project.secretKey)
  const backfilled = await segmentsBackfilled(env)
  await drained(env)
  await analyzed(env)
  const window = async () => {
    const statementsUnavailable = await resetStatements()
    const sustained = await sustain(env, `${all.url}/v1/track`, {
      rate,
      seconds: 15,
      body: segmentedBody,
      groups: [processTree("all", all.process.pid!), ...infrastructure(env)]
    })
    const statements = statementsUnavailable ?? await topStatements(databaseOf(env))
    return {
      ...sustainedSummary(sustained, baselineRps),
      cpu: sustained.window.cpu,
      ...(statements ? { postgresStatements: statements } : {})
    }
  }
  const cold = await window()
  await drained(env)
  await analyzed(env)
  const steady = await window()
  await all.stop()
  return { segments: 50, segmentsBackfilledBeforeLoad: backfilled, ...steady, cold }
}

/** The contacts enter their segments before the scale runs, so both measure the steady state (as after M2). */
const everyContactTouched = async (env: BenchEnvironment) => {
  const api = await env.start("api")
  const worker = await env.start("worker")
  await segmentsBackfilled(env)
  await touchEveryContact(env, api.url)
  await Promise.all([api.stop(), worker.stop()])
}

/** One scale run: an api and `workers` workers; events/s and CPU µs per event per process group. */
const scaleRun = async (env: BenchEnvironment, workers: number, rate: number, baselineRps: number) => {
  const api = await env.start("api")
  const started: Array<Service> = []
  const metricsPorts: Array<number> = []
  for (let i = 0; i < workers; i++) {
    metricsPorts.push(await freePort())
    started.push(await env.start("worker", { METRICS_PORT: String(metricsPorts[i]) }))
  }
  /** The workers' lane batches and the events they applied so far (from their /metrics). */
  const batchCounts = async () => {
    const texts = await Promise.all(
      metricsPorts.map((port) => fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text()).catch(() => ""))
    )
    const sum = (name: string) =>
      texts.reduce((total, text) => total + Number(text.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1] ?? 0), 0)
    return {
      batches: sum("mailstream_actor_batch_size_count"),
      // Turns: a project's lane batches applied in one transaction (laneTurns.ts); absent before them.
      turns: sum("mailstream_actor_turn_lanes_count"),
      factsKept: sum(`mailstream_actor_facts_total\\{source="kept"\\}`),
      factsRead: sum(`mailstream_actor_facts_total\\{source="read"\\}`),
      events: sum("mailstream_events_applied_total"),
      readAhead: sum(`mailstream_actor_read_ahead_total\\{outcome="committed"\\}`)
    }
  }
  // Every worker holds partitions before the load starts (the second joins, the first hands some over).
  const balanced = await holdingPartitions(started)
  // Segments created just before (scale run alone) are backfilled before the window opens, as in M2.
  await segmentsBackfilled(env)
  await drained(env)
  await analyzed(env)
  const groups = [
    processTree("api", api.process.pid!),
    ...started.map((worker, i) => processTree(`worker${i + 1}`, worker.process.pid!)),
    ...infrastructure(env)
  ]
  const statementsUnavailable = await resetStatements()
  const batchesBefore = await batchCounts()
  const sustained = await sustain(env, `${api.url}/v1/track`, { rate, seconds: DURATION + 3, body: segmentedBody, groups })
  const batchesAfter = await batchCounts()
  const batches = batchesAfter.batches - batchesBefore.batches
  const statements = statementsUnavailable ?? await topStatements(databaseOf(env))
  await Promise.all([api, ...started].map((service) => service.stop()))
  const cpu = sustained.window.cpu
  const micros = (names: ReadonlyArray<string>) => names.reduce((sum, name) => sum + (cpu?.groups[name]?.cpuMicros ?? 0), 0)
  const perEvent = (names: ReadonlyArray<string>) => (cpu && cpu.events > 0 ? Math.round(micros(names) / cpu.events) : NaN)
  const workerNames = started.map((_, i) => `worker${i + 1}`)
  const all = ["api", ...workerNames, "postgres", "nats"]
  return {
    workers,
    everyWorkerHeldPartitions: balanced,
    ...sustainedSummary(sustained, baselineRps),
    // Much of a batch's cost is the batch's (its round trips and statements), whatever its size: the
    // events per batch say how far it is spread.
    laneBatches: {
      batches,
      eventsPerBatch: batches > 0 ? round((batchesAfter.events - batchesBefore.events) / batches, 1) : NaN,
      // Transactions that applied them: one per turn (with turns), else one per lane batch.
      transactions: batchesAfter.turns - batchesBefore.turns || batches,
      eventsPerTransaction: round((batchesAfter.events - batchesBefore.events) / (batchesAfter.turns - batchesBefore.turns || batches), 1),
      // Contacts whose segment facts a turn had kept from an earlier one, and those it read (FACTS_CACHE_CONTACTS).
      factsKept: batchesAfter.factsKept - batchesBefore.factsKept,
      factsRead: batchesAfter.factsRead - batchesBefore.factsRead,
      // Of them, started while the one before them committed (BATCH_READ_AHEAD).
      readAhead: batchesAfter.readAhead - batchesBefore.readAhead
    },
    cpuMicrosPerEvent: {
      api: perEvent(["api"]),
      workers: perEvent(workerNames),
      postgres: perEvent(["postgres"]),
      nats: perEvent(["nats"]),
      total: perEvent(all)
    },
    cpu,
    ...(statements ? { postgresStatements: statements } : {})
  }
}

/** Scale: 1 worker vs 2 on one project; the 16-core capacity predicted from the 2-worker run's CPU per event. */
const scalePart = async (env: BenchEnvironment, rate: number, baselineRps: number) => {
  const oneWorker = await scaleRun(env, 1, rate, baselineRps)
  const twoWorkers = await scaleRun(env, 2, rate, baselineRps)
  const total = twoWorkers.cpuMicrosPerEvent.total
  return {
    offeredRate: rate,
    oneWorker,
    twoWorkers,
    eventsPerSecondRatio2to1: ratio(twoWorkers.appliedEventsPerSecond, oneWorker.appliedEventsPerSecond),
    predicted: {
      basis: "2-worker run: api + workers + Postgres + NATS CPU µs per event; linear in cores, load generator elsewhere",
      eventsPerSecondPerCore: Math.round(1e6 / total),
      eventsPerSecondOn16Cores: Math.round(16e6 / total)
    }
  }
}

const BATCH_SIZE = 100

/** Batch: POST /v1/track/batch with 100 events per request, the api alone. */
const batchPart = async (env: BenchEnvironment, baselineRps: number) => {
  // BENCH_BATCH_ROLE=all: on `all`, as `npm start` runs it, where the worker applies what the api accepts.
  const api = await env.start(process.env.BENCH_BATCH_ROLE === "all" ? "all" : "api")
  try {
    const url = `${api.url}/v1/track/batch`
    const headers = { authorization: `Bearer ${env.project.publicKey}` }
    const body = (n: number) => ({ events: Array.from({ length: BATCH_SIZE }, (_, i) => trackBody(n * BATCH_SIZE + i)) })
    const probe = await fetch(url, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify(body(0))
    })
    const probeText = await probe.text()
    if (probe.status === 404) return { status: "endpoint missing (404)" }
    if (probe.status !== 200) return { status: `probe answered ${probe.status}`, body: probeText.slice(0, 500) }
    await load("warmup", url, { body, headers, duration: 3 })
    let ok = 0
    let accepted = 0
    let rejected = 0
    const result: LoadResult = await load("batch", url, {
      body,
      headers,
      onResponse: (status, text) => {
        if (status !== 200) return
        ok++
        accepted += Number(text.match(/"accepted":(\d+)/)?.[1] ?? 0)
        rejected += text.match(/"index":/g)?.length ?? 0
      }
    })
    const eventsPerSecond = ok > 0 ? Math.round(result.requestsPerSecond * (accepted / ok)) : 0
    return {
      status: "measured",
      eventsPerRequest: BATCH_SIZE,
      ...result,
      eventsAccepted: accepted,
      eventsRejected: rejected,
      eventsPerSecond,
      ratio: ratio(eventsPerSecond, baselineRps)
    }
  } finally {
    await api.stop()
  }
}

export const run = (args: ReadonlyArray<string>) =>
  withEnvironment(async (env) => {
    const parts = partsOf(args)
    const baselineServer = await env.baseline()
    const baselineUrl = baselineServer.url
    const m1 = parts.has("m1") ? await m1Part(env, baselineServer) : undefined
    let baseline: LoadResult
    if (m1) baseline = m1.baseline
    else {
      await load("warmup", baselineUrl, { body: trackBody, duration: 3 })
      baseline = await load("baseline", baselineUrl, { body: trackBody })
    }
    const memory = parts.has("memory") ? await memoryPart(env) : undefined
    const m6 = parts.has("m6") ? await m6Part(env) : undefined
    // What M1 and M6 left in the stream is applied before the next part.
    if (m1 || m6) await drainWithWorker(env, m6?.worker)
    const rate = setting("BENCH_M2_RATE", baseline.requestsPerSecond)
    const m2 = parts.has("m2") ? await m2Part(env, rate, baseline.requestsPerSecond) : undefined
    if (parts.has("scale") && !m2) {
      await analyzed(env)
      const api = await env.start("api")
      await createFiftySegments(api.url, env.project.secretKey)
      await api.stop()
      await everyContactTouched(env)
    }
    const scale = parts.has("scale")
      ? await scalePart(env, setting("BENCH_SCALE_RATE", baseline.requestsPerSecond), baseline.requestsPerSecond)
      : undefined
    // Last: its backlog (events × 100) is left in the stream and dropped with the environment.
    const batch = parts.has("batch") ? await batchPart(env, baseline.requestsPerSecond) : undefined
    return {
      description: "/v1/track ingest (M1), backlog drain (M6), sustained end to end with 50 segments under `all` (M2), " +
        "1 vs 2 workers with CPU per event (scale), /v1/track/batch (batch); baseline = node:http + pg, one INSERT per request",
      parts: [...parts],
      baseline,
      ...(m1 ? { floor: m1.floor, m1: m1.m1, m1At70PercentLoad: m1.m1At70PercentLoad } : {}),
      ...(m6 ? { m6: m6.m6 } : {}),
      ...(m2 ? { m2 } : {}),
      ...(memory ? { memory } : {}),
      ...(scale ? { scale } : {}),
      ...(batch ? { batch } : {}),
      targets: { m1Ratio: 2.0, m2Ratio: 1.0, m6EventsPerSecond: 10_000, batchRatio: 10 }
    }
  })
