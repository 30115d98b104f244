/**
 * `npm run bench -- roundtrips`: Postgres round trips per actor batch under the segments workload (one
 * project, 50 segments, /v1/track at BENCH_ROUNDTRIP_RATE for BENCH_DURATION s). The worker runs with a
 * preload that counts the statements it sends (bench/harness/countPgWrites.ts); round trips per batch =
 * statements / actor batches (its /metrics) over the window, which also counts the worker's lease
 * renewals and pollers (a few per second: noise at this load).
 * "Before" is this same file run on the release before lanes (see BENCHMARKS.md).
 */
import { readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { withEnvironment } from "./harness/environment.ts"
import { load } from "./harness/load.ts"
import { DURATION, ROOT, setting, sleep } from "./harness/settings.ts"
import { round } from "./harness/stats.ts"
import { createFiftySegments, drained, segmentedBody, storedEvents } from "./workload.ts"

const readCounts = (file: string) => JSON.parse(readFileSync(file, "utf8")) as { writes: number; commits: number }

export const run = (_args: ReadonlyArray<string>) =>
  withEnvironment(async (env) => {
    const rate = setting("BENCH_ROUNDTRIP_RATE", 1000)
    const file = join(tmpdir(), `pg-writes-${process.pid}.json`)
    const api = await env.start("api")
    const metricsPort = 20_000 + Math.floor(Math.random() * 20_000)
    const worker = await env.start("worker", { PG_WRITES_FILE: file, METRICS_PORT: String(metricsPort) }, [
      "--import",
      join(ROOT, "bench/harness/countPgWrites.ts")
    ])
    const batches = async () => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
      return Number(text.match(/^mailstream_actor_batch_size_count(?:\{[^}]*\})? (\d+)/m)?.[1] ?? 0)
    }
    await createFiftySegments(api.url, env.project.secretKey)
    await drained(env)
    await sleep(1_000)
    const before = readCounts(file)
    const batchesBefore = await batches()
    const eventsBefore = await storedEvents(env)
    const result = await load("roundtrips", `${api.url}/v1/track`, {
      body: segmentedBody,
      headers: { authorization: `Bearer ${env.project.publicKey}` },
      rate,
      duration: DURATION
    })
    await drained(env)
    await sleep(500)
    const after = readCounts(file)
    const batchesAfter = await batches()
    const events = (await storedEvents(env)) - eventsBefore
    await Promise.all([api.stop(), worker.stop()])
    const statements = after.writes - before.writes
    const transactions = batchesAfter - batchesBefore
    return {
      what: "Postgres round trips per actor batch (statements / committed transactions of the worker), 50 segments",
      offeredRate: rate,
      achievedRequestsPerSecond: result.requestsPerSecond,
      non2xx: result.non2xx,
      eventsApplied: events,
      statements,
      batches: transactions,
      roundTripsPerBatch: round(statements / Math.max(1, transactions), 1),
      eventsPerBatch: round(events / Math.max(1, transactions), 1),
      target: { roundTripsPerBatch: 5 }
    }
  })
