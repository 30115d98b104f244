/**
 * `npm run bench -- idle`: what the service costs while nothing happens. `all` (what `npm start` runs:
 * the compiled service, dist/main.js) on a throw-away database and prefix, ready and then left alone for 5 s, is measured over
 * BENCH_IDLE_SECONDS (default 20) with no traffic: CPU (% of one core) and memory of its whole process
 * tree, and the CPU Postgres (our database's processes) and nats-server spent meanwhile. Baseline, in the
 * same window: a bare `node -e "setInterval(() => {}, 1000)"`, the floor of an idle Node process.
 * The service's figures are also given per process (`all` runs a supervisor, api processes and a worker).
 */
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { withEnvironment } from "./harness/environment.ts"
import { stopProcess } from "./harness/processes.ts"
import {
  cpuBetween,
  type GroupMemory,
  memoryOf,
  postgresOf,
  processesNamed,
  processTree,
  readStat,
  rssBytes,
  sampleCpu,
  treeOf
} from "./harness/proc.ts"
import { setting, sleep, waitFor } from "./harness/settings.ts"
import { round } from "./harness/stats.ts"
import { buildServer } from "../scripts/build.ts"

const SETTLE_SECONDS = 5
/** Issue #40: at most 1 % of a core and 200 MiB for the whole tree (it replaced #20's 150 MiB). */
const TARGETS = { cpuPercentOfCore: 1, rssMiB: 200 }

/** The role a process of the tree runs: the last word of its command line (`… src/main.ts worker`). */
const roleOf = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).at(-1) ?? String(pid)
  } catch {
    return String(pid)
  }
}

export const run = async () => {
  // What `npm start` runs: the compiled service (built first if its sources changed).
  await buildServer(false)
  return withEnvironment(async (env) => {
    const seconds = setting("BENCH_IDLE_SECONDS", 20)
    const service = await env.start("all")
    // `all` is ready when it listens; its worker may start a moment later.
    const workerStarted = await waitFor(() => service.logs.some((line) => line.includes("worker started")), 30_000, 100)
    const bare = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" })
    try {
      await sleep(SETTLE_SECONDS * 1000)
      const groups = [
        processTree("service", service.process.pid!),
        processTree("bareNode", bare.pid!),
        postgresOf("postgres", env.query),
        processesNamed("nats", "nats-server")
      ]
      const trees = groups.slice(0, 2)
      const servicePids = treeOf(service.process.pid!)
      const processCpuBefore = new Map(servicePids.map((pid) => [pid, readStat(pid)?.cpuMicros ?? 0]))
      const before = await sampleCpu(groups)
      // Memory sampled every second: the peak matters as much as the end.
      const memory: Array<Record<string, GroupMemory>> = []
      const started = performance.now()
      for (let second = 1; second <= seconds; second++) {
        await sleep(Math.max(0, started + second * 1000 - performance.now()))
        memory.push(await memoryOf(trees))
      }
      const after = await sampleCpu(groups)
      const perProcess = servicePids.map((pid) => ({
        role: roleOf(pid),
        cpuSeconds: round(((readStat(pid)?.cpuMicros ?? 0) - processCpuBefore.get(pid)!) / 1e6, 3),
        rssMiB: round(rssBytes(pid) / 2 ** 20, 1)
      }))
      const cpu = cpuBetween(before, after)
      const windowSeconds = round((after.at - before.at) / 1000, 2)
      const memoryOfGroup = (name: string) => {
        const samples = memory.map((sample) => sample[name]!)
        const last = samples.at(-1)!
        return { rssMiB: last.rssMiB, rssMiBMax: Math.max(...samples.map((s) => s.rssMiB)), pssMiB: last.pssMiB, processes: last.processes }
      }
      const usage = (name: string) => ({
        cpuPercentOfCore: cpu[name]!.percentOfCore,
        cpuSeconds: round(cpu[name]!.cpuMicros / 1e6, 3),
        processes: cpu[name]!.processes
      })
      const serviceFigures = { role: "all", workerStarted, ...usage("service"), ...memoryOfGroup("service"), perProcess }
      return {
        description: "`all` idle (no traffic) after start-up + 5 s, over the window: CPU % of one core and memory of its process " +
          "tree; Postgres (our database's backends, background processes, postmaster) and nats-server CPU; baseline: a bare idle node process",
        windowSeconds,
        service: serviceFigures,
        baselineBareNode: { ...usage("bareNode"), ...memoryOfGroup("bareNode") },
        postgres: usage("postgres"),
        nats: { ...usage("nats"), note: "the whole nats-server, which may serve others on this machine" },
        targets: TARGETS,
        met: {
          cpu: serviceFigures.cpuPercentOfCore <= TARGETS.cpuPercentOfCore,
          rss: serviceFigures.rssMiB <= TARGETS.rssMiB
        }
      }
    } finally {
      await stopProcess(bare)
    }
  }, { entry: "dist/main.js" })
}
