/**
 * `npm run bench -- compare <rev> <benchmark> [arguments]`: the benchmark run alternately on an earlier
 * commit (a `git worktree` of <rev> in bench/.compare/, made once) and on this checkout, BENCH_ROUNDS
 * times each (default 2), in one invocation, so both see the same machine in the same half hour. Writes
 * bench/results/compare-<time>.json with every run's result and prints the figures that tell them apart.
 */
import { execFileSync, spawnSync } from "node:child_process"
import { existsSync, readdirSync, readFileSync, statSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { ROOT, setting } from "./harness/settings.ts"

/** The figures printed per run, by benchmark: paths into its result. */
const FIGURES: Record<string, ReadonlyArray<string>> = {
  track: [
    "baseline.requestsPerSecond",
    "m1.requestsPerSecond",
    "m1.cpuMicrosPerRequest.server",
    "m1.apiOverFloor",
    "m1.perCoreRatio",
    "m2.ratio",
    "m2.appliedEventsPerSecond",
    "m2.latencyP99Ms",
    "m2.lagGrowing",
    "scale.oneWorker.appliedEventsPerSecond",
    "scale.oneWorker.cpuMicrosPerEvent",
    "scale.oneWorker.laneBatches",
    "scale.twoWorkers.appliedEventsPerSecond",
    "scale.twoWorkers.cpuMicrosPerEvent",
    "scale.twoWorkers.laneBatches",
    "batch.ratio",
    "batch.latencyP99Ms",
    "batch.non2xx"
  ],
  segments: ["m5", "m5Light", "quickM2"],
  send: [
    "service.emailsPerSecond",
    "baseline.emailsPerSecond",
    "ratio",
    "service.cpuMicrosPerEmail.api",
    "service.cpuMicrosPerEmail.worker",
    "service.cpuMicrosPerEmail.postgres",
    "service.cpuMicrosPerEmail.nats",
    "throttle.errorPercent"
  ],
  destinations: [
    "latency.destination.p50Ms",
    "latency.destination.p90Ms",
    "latency.destination.p99Ms",
    "latency.destination.stages.recordedP99Ms",
    "latency.destination.stages.recordedToSettledP99Ms",
    "latency.baselineWorkflowWebhook.p50Ms",
    "latency.baselineWorkflowWebhook.p99Ms",
    "latency.beside.destination.p50Ms",
    "latency.beside.destination.p99Ms",
    "latency.beside.destination.stages.recordedP99Ms",
    "latency.beside.workflowWebhook.p99Ms",
    "throughput.deliveriesPerSecond"
  ],
  campaigns: ["service.mailsPerSecond", "baseline.emailsPerSecond", "ratio", "service.resolutionSeconds", "service.workerRssMiB"],
  idle: ["service.cpuPercentOfCore", "service.rssMiB", "service.rssMiBMax", "service.pssMiB", "service.processes"]
}

const pick = (value: unknown, path: string): unknown =>
  path.split(".").reduce<unknown>(
    (at, key) => (at !== null && typeof at === "object" ? (at as Record<string, unknown>)[key] : undefined),
    value
  )

/** The newest result file of a benchmark in a checkout's bench/results. */
const newestResult = (root: string, benchmark: string) => {
  const dir = join(root, "bench/results")
  const files = existsSync(dir) ? readdirSync(dir).filter((file) => file.startsWith(`${benchmark}-`) && file.endsWith(".json")) : []
  const newest = files.map((file) => join(dir, file)).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]
  return newest === undefined ? undefined : JSON.parse(readFileSync(newest, "utf8")) as Record<string, unknown>
}

/** A worktree of `rev` beside this checkout, with this checkout's node_modules (and the dashboard's). */
export const worktreeOf = (rev: string) => {
  const sha = execFileSync("git", ["rev-parse", "--short", rev], { cwd: ROOT, encoding: "utf8" }).trim()
  const dir = join(ROOT, "bench/.compare", sha)
  if (!existsSync(dir)) {
    execFileSync("git", ["worktree", "add", "--detach", dir, sha], { cwd: ROOT, stdio: "inherit" })
    symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"))
    if (existsSync(join(ROOT, "web/node_modules")) && !existsSync(join(dir, "web/node_modules"))) {
      symlinkSync(join(ROOT, "web/node_modules"), join(dir, "web/node_modules"))
    }
  }
  return { sha, dir }
}

export const run = async (args: ReadonlyArray<string>) => {
  const [rev, benchmark, ...rest] = args
  if (!rev || !benchmark || benchmark === "compare") throw new Error("usage: npm run bench -- compare <rev> <benchmark> [arguments]")
  const rounds = setting("BENCH_ROUNDS", 2)
  const before = worktreeOf(rev)
  const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim()
  const runs: Array<{ round: number; code: string; commit: string; result: Record<string, unknown> | undefined }> = []
  for (let round = 1; round <= rounds; round++) {
    for (const [code, root, commit] of [["before", before.dir, before.sha], ["after", ROOT, head]] as const) {
      const started = Date.now()
      const child = spawnSync(process.execPath, ["bench/run.ts", benchmark, ...rest], {
        cwd: root,
        stdio: ["ignore", "ignore", "inherit"],
        env: process.env
      })
      const result = child.status === 0 ? newestResult(root, benchmark) : undefined
      runs.push({ round, code, commit, result })
      const figures = Object.fromEntries(
        (FIGURES[benchmark] ?? []).map((path) => [path, pick(result, path)]).filter(([, value]) => value !== undefined)
      )
      console.error(
        `[compare] round ${round} ${code} (${commit}, ${Math.round((Date.now() - started) / 1000)} s): ${JSON.stringify(figures)}`
      )
    }
  }
  return {
    description: `${benchmark} ${rest.join(" ")} on ${before.sha} (before) and ${head} (after), alternated ${rounds} times`,
    runs: runs.map(({ round, code, commit, result }) => ({
      round,
      code,
      commit,
      figures: Object.fromEntries((FIGURES[benchmark] ?? []).map((path) => [path, pick(result, path)])),
      result
    }))
  }
}
