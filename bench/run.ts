/**
 * Benchmarks: `npm run bench -- <name> [arguments]` (names below; see BENCHMARKS.md). Each measures our
 * service and a baseline in the same run, on a throw-away database and NATS prefix, and writes
 * bench/results/<name>-<time>.json. The numbers that matter are copied into BENCHMARKS.md together with
 * the machine they ran on. The harness is in bench/harness/, one file per benchmark beside this one.
 */
import { machine, settings, writeResult } from "./harness/results.ts"

// The stack (test/support/stack.ts) reads its admin URL when first imported, below.
if (process.env.BENCH_DATABASE_ADMIN_URL) process.env.TEST_DATABASE_ADMIN_URL = process.env.BENCH_DATABASE_ADMIN_URL

interface Benchmark {
  readonly run: (args: ReadonlyArray<string>) => Promise<Record<string, unknown>>
}

const BENCHMARKS: Record<string, () => Promise<Benchmark>> = {
  contacts: () => import("./contacts.ts"),
  track: () => import("./track.ts"),
  segments: () => import("./segments.ts"),
  verify: () => import("./verify.ts"),
  send: () => import("./send.ts"),
  campaigns: () => import("./campaigns.ts"),
  workflows: () => import("./workflows.ts"),
  idle: () => import("./idle.ts"),
  roundtrips: () => import("./roundtrips.ts"),
  import: () => import("./import.ts"),
  analytics: () => import("./analytics.ts"),
  rollups: () => import("./rollups.ts"),
  destinations: () => import("./destinations.ts"),
  compare: () => import("./compare.ts")
}

const [name, ...args] = process.argv.slice(2)
const loadBenchmark = name ? BENCHMARKS[name] : undefined
if (!loadBenchmark) {
  console.error(`usage: npm run bench -- <${Object.keys(BENCHMARKS).join("|")}> [arguments]`)
  process.exit(2)
}
try {
  const figures = await (await loadBenchmark()).run(args)
  const result = { benchmark: name, ...figures, settings: settings(), machine: machine(), at: new Date().toISOString() }
  writeResult(name!, result)
  console.log(JSON.stringify(result, null, 2))
  // Pools of the shared test helpers may keep the event loop alive; the run is over.
  process.exit(0)
} catch (error) {
  console.error(error)
  process.exit(1)
}
