/**
 * `npm run bench -- segments`: M5 — a tracked event → `segment.<slug>.entry` on stream OUT, with 50
 * segments per project, under background /v1/track load at 70 % of M2 (BENCH_M5_RATE, or 70 % of a
 * quick M2 measured first) and below capacity (BENCH_M5_LIGHT_RATE); then one contact's incremental
 * evaluation vs a full recompute of one segment over 100,000 contacts.
 */
import { connect } from "@nats-io/transport-node"
import { freePort } from "../test/support/mail.ts"
import { type BenchEnvironment, withEnvironment } from "./harness/environment.ts"
import { load } from "./harness/load.ts"
import { pacedLoad } from "./harness/pacedLoad.ts"
import { NATS_URL, setting, sleep } from "./harness/settings.ts"
import { percentile, round } from "./harness/stats.ts"
import { resetStatements, topStatements } from "./harness/statements.ts"
import { laneKeyOf } from "../src/stream/lanes.ts"
import { CONTACTS, createFiftySegments, quickM2, segmentedBody, segmentsBackfilled, touchEveryContact } from "./workload.ts"

/**
 * How the background load is paced: `even` (default) sends it evenly through every second
 * (harness/pacedLoad.ts); `bursts` is autocannon's `overallRate`, which sends each second's requests as
 * fast as they are answered at the start of the second (how M5 was measured until 2026-11-29).
 */
const PACING = process.env.BENCH_M5_PACING === "bursts" ? "bursts" : "even"

/** The services' lanes per project (LANES_PER_PROJECT, default 16): which lane a slow probe was in. */
const LANES = Number(process.env.LANES_PER_PROJECT ?? 16)

export const run = () =>
  withEnvironment(async (env) => {
    const auth = { authorization: `Bearer ${env.project.publicKey}` }
    const metricsPort = await freePort()
    const api = await env.start("api")
    const worker = await env.start("worker", { METRICS_PORT: String(metricsPort) })
    await createFiftySegments(api.url, env.project.secretKey)
    // The steady state, as `track`'s M2 measures it: every contact already in its segments, and the
    // segments' backfill over the 16 lanes finished (while it runs, a lane's chunks delay its batches).
    await touchEveryContact(env, api.url)
    const backfillStarted = performance.now()
    const backfilled = await segmentsBackfilled(env, 180_000)
    const backfillSeconds = round((performance.now() - backfillStarted) / 1000, 1)
    // Say why in the run's output: the worker's warnings and partition changes (a lease renewed too late).
    if (!backfilled)
      console.error(
        `the backfill did not finish:\n${worker.logs.filter((line) => /WARN|ERROR|partition/.test(line)).slice(-12).join("\n")}`
      )
    const m2 = process.env.BENCH_M5_RATE ? undefined : await quickM2(env, api.url)
    // The quick M2 filled the tables seconds ago, before autovacuum's first analyze; a database that has
    // run for a minute has statistics, without which the batch statements take the wrong indexes.
    await env.query("ANALYZE")
    // Latency probe: entry events are read off OUT with a plain subscription as they are published.
    const nc = await connect({ servers: NATS_URL })
    const arrivals = new Map<string, number>()
    const arrivalsWall = new Map<string, number>()
    const subscription = nc.subscribe(`${env.natsPrefix}.out.${env.project.id}.segment.probe.entry`, {
      callback: (_error, message) => {
        const payload = message.json<{ email: string }>()
        arrivals.set(payload.email, performance.now())
        arrivalsWall.set(payload.email, Date.now())
      }
    })
    let probeRound = 0
    const metrics = () => fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text()).catch(() => "")
    /** Background load at `rate`, 200 probes during it; latency = entry on OUT minus the probe's response. */
    const probeAt = async (rate: number) => {
      probeRound++
      const logsBefore = worker.logs.length
      const statementsUnavailable = await resetStatements()
      const before = await metrics()
      const backgroundOptions = { body: segmentedBody, headers: auth, rate, duration: 20 }
      const background = PACING === "even"
        ? pacedLoad("background", `${api.url}/v1/track`, backgroundOptions)
        : load("background", `${api.url}/v1/track`, backgroundOptions)
      await sleep(5_000)
      const answered = new Map<string, number>()
      const answeredWall = new Map<string, number>()
      const roundStarted = performance.now()
      for (let i = 0; i < 200; i++) {
        const email = `probe${probeRound}-${i}@bench.test`
        const res = await fetch(`${api.url}/v1/track`, {
          method: "POST",
          headers: { ...auth, "content-type": "application/json" },
          body: JSON.stringify({ email, event: "probe" })
        })
        if (res.status === 200) {
          answered.set(email, performance.now())
          answeredWall.set(email, Date.now())
        }
        await res.arrayBuffer()
        await sleep(40)
      }
      const backgroundResult = await background
      const deadline = performance.now() + 30_000
      while ([...answered.keys()].some((email) => !arrivals.has(email)) && performance.now() < deadline) await sleep(100)
      const after = await metrics()
      const statements = statementsUnavailable ?? await topStatements(new URL(env.databaseUrl).pathname.slice(1))
      const metric = (text: string, name: string) => Number(text.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1] ?? 0)
      const delta = (name: string) => metric(after, name) - metric(before, name)
      const labelled = (text: string, name: string, labels: string) =>
        Number(text.match(new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, "m"))?.[1] ?? 0)
      const readAhead = (outcome: string) =>
        labelled(after, "mailstream_actor_read_ahead_total", `outcome="${outcome}"`) -
        labelled(before, "mailstream_actor_read_ahead_total", `outcome="${outcome}"`)
      const latencies = [...answered].flatMap(([email, at]) => {
        const arrived = arrivals.get(email)
        return arrived === undefined ? [] : [Math.max(0, arrived - at)]
      }).sort((a, b) => a - b)
      const { summary: legs, laneOf } = await probeLegs(env, probeRound, answeredWall, arrivalsWall)
      const slowest = [...answered].flatMap(([email, at]) => {
        const arrived = arrivals.get(email)
        return arrived === undefined
          ? []
          : [{
            sentAtSecond: round((at - roundStarted) / 1000, 2),
            // The wall clock of the api's answer, to line a slow probe up with other processes' logs (Postgres').
            answeredAt: new Date(answeredWall.get(email) ?? 0).toISOString(),
            ms: round(arrived - at, 1),
            lane: laneOf.get(email)
          }]
      }).sort((a, b) => b.ms - a.ms).slice(0, 5)
      // Let the worker catch up before the next round.
      await sleep(10_000)
      return {
        backgroundRate: rate,
        pacing: PACING,
        background: backgroundResult,
        probes: answered.size,
        entriesSeen: latencies.length,
        latencyP50Ms: round(percentile(latencies, 50), 1),
        latencyP99Ms: round(percentile(latencies, 99), 1),
        latencyMaxMs: round(percentile(latencies, 100), 1),
        legs,
        slowest,
        // What the worker warned about during the round (a lease renewed too late, a consumer restarted).
        workerWarnings: worker.logs.slice(logsBefore).filter((line) => /WARN|ERROR|partition/.test(line)).slice(-10),
        worker: {
          batches: delta("mailstream_actor_batch_size_count"),
          meanMessagesPerBatch: Math.round(delta("mailstream_actor_batch_size_sum") / delta("mailstream_actor_batch_size_count")),
          meanBatchMs: Math.round(1000 * delta("mailstream_actor_batch_seconds_sum") / delta("mailstream_actor_batch_size_count")),
          eventsApplied: delta("mailstream_events_applied_total"),
          // Batches started while the one before them committed (BATCH_READ_AHEAD), and those rolled back.
          readAhead: { committed: readAhead("committed"), abandoned: readAhead("abandoned") },
          // The worker's event-loop delay over the round (prom-client resets it at every scrape, and the
          // round began with one): how long a ready callback, a finished round trip's included, waited.
          eventLoopDelayMs: {
            mean: round(1000 * metric(after, "nodejs_eventloop_lag_mean_seconds"), 1),
            p50: round(1000 * metric(after, "nodejs_eventloop_lag_p50_seconds"), 1),
            p99: round(1000 * metric(after, "nodejs_eventloop_lag_p99_seconds"), 1),
            max: round(1000 * metric(after, "nodejs_eventloop_lag_max_seconds"), 1)
          }
        },
        ...(statements ? { postgresStatements: statements } : {})
      }
    }
    const m5 = await probeAt(m2 ? Math.round(m2.rate * 0.7) : setting("BENCH_M5_RATE", 0))
    const m5Light = await probeAt(setting("BENCH_M5_LIGHT_RATE", 1500))
    // BENCH_M5_REPEAT=n: n − 1 more pairs of rounds on the same processes, for rare stalls (summaries only).
    const moreRounds = []
    for (let i = 1; i < setting("BENCH_M5_REPEAT", 1); i++) {
      for (const rate of [m5.backgroundRate, m5Light.backgroundRate]) {
        const round = await probeAt(rate)
        moreRounds.push({
          backgroundRate: rate,
          latencyP50Ms: round.latencyP50Ms,
          latencyP99Ms: round.latencyP99Ms,
          legs: round.legs,
          slowest: round.slowest,
          workerWarnings: round.workerWarnings
        })
      }
    }
    subscription.unsubscribe()
    await nc.close()
    await worker.stop()

    // Incremental evaluation vs full recompute of one segment over 100k contacts.
    await env.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT gen_random_uuid(), $1, 'bulk' || i || '@bench.test', true, jsonb_build_object('n', i % 60000), now(), now()
      FROM generate_series(1, 100000) i`,
      [env.project.id]
    )
    const cost = await measureEvaluationCost(env.databaseUrl, env.project.id, env.natsPrefix)
    return {
      description:
        "M5: /v1/track response → segment.<slug>.entry on OUT, at a background load, 50 segments per project; incremental evaluation vs full recompute",
      backgroundContacts: CONTACTS,
      // The 50 segments over 16 lanes, after every contact's first event: how long until all were backfilled.
      backfill: { done: backfilled, secondsAfterFirstEvents: backfillSeconds },
      m5RateFrom: m2 ? { quickM2: m2 } : "BENCH_M5_RATE",
      m5,
      m5BelowCapacity: m5Light,
      ...(moreRounds.length > 0 ? { moreRounds } : {}),
      evaluationCost: cost
    }
  })

/**
 * Where a probe's time went, from wall clocks read by different processes on this one machine (so
 * one clock): the benchmark's (the api's answer, the arrival on OUT) and the lane batch's (`entered_at`):
 * `toApplied` = the membership's `entered_at` (the lane batch's clock) − the api's answer (the stream
 * IN, the splitter, the lane's queue and its batch up to evaluation), `toOut` = arrival on OUT −
 * `entered_at` (the rest of the batch, its commit, the outbox relay and NATS).
 */
const probeLegs = async (
  env: BenchEnvironment,
  probeRound: number,
  answeredWall: ReadonlyMap<string, number>,
  arrivalsWall: ReadonlyMap<string, number>
) => {
  const rows = await env.query<{ email: string; contact_id: string; entered: number }>(
    `SELECT c.email, c.id AS contact_id, (extract(epoch FROM m.entered_at) * 1000)::float8 AS entered
     FROM segment_memberships m
     JOIN segments s ON s.id = m.segment_id AND s.name = 'probe'
     JOIN contacts c ON c.id = m.contact_id
     WHERE m.project_id = $1 AND c.email LIKE $2`,
    [env.project.id, `probe${probeRound}-%`]
  )
  const toApplied: Array<number> = []
  const toOut: Array<number> = []
  for (const row of rows) {
    const answered = answeredWall.get(row.email)
    const arrived = arrivalsWall.get(row.email)
    if (answered === undefined || arrived === undefined) continue
    toApplied.push(Number(row.entered) - answered)
    toOut.push(arrived - Number(row.entered))
  }
  const summary = (values: Array<number>) => {
    const sorted = values.sort((a, b) => a - b)
    return { p50: round(percentile(sorted, 50), 1), p90: round(percentile(sorted, 90), 1), p99: round(percentile(sorted, 99), 1) }
  }
  const laneOf = new Map(rows.map((row) => [row.email, laneKeyOf(row.contact_id) % LANES]))
  return { summary: { probes: toApplied.length, toAppliedMs: summary(toApplied), toOutMs: summary(toOut) }, laneOf }
}

/** One contact's incremental evaluation (load facts, evaluate the project's 50 segments, write) vs a full recompute. */
const measureEvaluationCost = async (databaseUrl: string, projectId: string, prefix: string) => {
  const { Effect, Redacted, ManagedRuntime } = await import("effect")
  const { PgClient } = await import("@effect/sql-pg")
  const { SqlClient } = await import("effect/sql")
  const { loadSegments } = await import("../src/actors/segmentDefs.ts")
  const { evaluateChanges, emptyChange } = await import("../src/actors/segmentEvaluation.ts")
  const { loadFacts } = await import("../src/actors/segmentFacts.ts")
  const { windowedSince } = await import("../src/domain/conditions/evaluate.ts")
  const { compileConditionSql } = await import("../src/store/conditionSql.ts")
  const { Layer } = await import("effect")
  const { Outbox } = await import("../src/stream/Outbox.ts")
  const { Nats } = await import("../src/stream/Nats.ts")
  const { AppConfig } = await import("../src/config.ts")
  process.env.NATS_PREFIX = prefix
  process.env.DATABASE_URL = databaseUrl
  const database = PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 2 })
  const runtime = ManagedRuntime.make(
    Outbox.layer.pipe(Layer.provideMerge(Nats.layer), Layer.provideMerge(database), Layer.provideMerge(AppConfig.layer))
  )
  try {
    return await runtime.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const segments = yield* loadSegments(projectId)
      const ids = (yield* sql<{ id: string }>`SELECT id FROM contacts WHERE project_id = ${projectId} ORDER BY random() LIMIT 200`).map((
        r
      ) => r.id)
      // Measured as one lane's actor would run it, with the whole project in its lane.
      const context = { projectId, lane: undefined, outbox: yield* Outbox }
      const started = performance.now()
      for (const id of ids) {
        yield* sql.withTransaction(
          evaluateChanges(context, segments, new Map([[id, { ...emptyChange(), fields: "all" as const }]]), Date.now())
        )
      }
      const incrementalMs = (performance.now() - started) / ids.length

      // A contact with a long history in a segment that counts occurrences in a window (`triggeredAtLeast
      // … within 1 day`): its facts read the occurrences the window can count, against all of them (the
      // read before 2026-11-26's bound), in the same run.
      const longHistoryReads = (contactId: string) =>
        Effect.gen(function*() {
          const HISTORY = 20_000
          const DAY = 86_400_000
          yield* sql`
            INSERT INTO events (id, project_id, contact_id, name, created_at)
            SELECT gen_random_uuid(), ${projectId}, ${contactId}, 'visit', now() - interval '2 days' - n * interval '1 minute'
            FROM generate_series(1, ${HISTORY}) n`
          yield* sql`
            INSERT INTO events (id, project_id, contact_id, name, created_at)
            SELECT gen_random_uuid(), ${projectId}, ${contactId}, 'visit', now() - n * interval '1 hour' FROM generate_series(1, 5) n`
          yield* sql`ANALYZE events`
          const visits = new Set(["visit"])
          const timed = (since: number | undefined) =>
            Effect.gen(function*() {
              const reads = 20
              const started = performance.now()
              let times = 0
              for (let i = 0; i < reads; i++) {
                const facts = yield* loadFacts(projectId, [contactId], visits, visits, since)
                times = facts.get(contactId)?.eventTimes.get("visit")?.length ?? 0
              }
              return { msPerRead: Math.round(((performance.now() - started) / reads) * 100) / 100, occurrencesRead: times }
            })
          return {
            occurrences: HISTORY + 5,
            window: "1 day",
            bounded: yield* timed(windowedSince(Date.now(), DAY)),
            unbounded: yield* timed(undefined)
          }
        })
      const target = segments.ordered[segments.ordered.length - 2]!
      const fullStarted = performance.now()
      const runs = 5
      for (let i = 0; i < runs; i++) {
        yield* sql`SELECT count(*) FROM contacts c WHERE c.project_id = ${projectId} AND ${
          compileConditionSql(sql, target.condition, Date.now())
        }`
      }
      const fullMs = (performance.now() - fullStarted) / runs
      return {
        contacts: 100_000,
        segmentsEvaluatedIncrementally: segments.ordered.length,
        incrementalMsPerChange: Math.round(incrementalMs * 100) / 100,
        fullRecomputeMsOneSegment: Math.round(fullMs * 10) / 10,
        ratio: Math.round(fullMs / incrementalMs),
        longHistory: yield* longHistoryReads(ids[0]!)
      }
    }))
  } finally {
    await runtime.dispose()
  }
}
