/**
 * `npm run bench -- startup [rev]`: how long an operator waits. On a throw-away database and NATS prefix
 * (Postgres and NATS running), each measured BENCH_ROUNDS times (default 3; the median is reported):
 *   start    `npm start` until `Listening on` (the services check and the build checks included, the
 *            builds themselves done once before: a start after no change), then SIGTERM to npm until
 *            every process it started has exited (`stopMs`);
 *   command  `npm run cli -- project create --name …` until it exits;
 *   help     `npm run cli -- --help` until it exits.
 * The command and help also as CPU time (user + system of every process they ran: what a loaded machine
 * stretches least). Baseline, in the same run: `npm run` of a script that does nothing (npm's own cost,
 * in every figure above; its CPU time too) and a bare `node -e ""`. With `rev` (a commit, e.g. `main`), the same is measured alternately on
 * a worktree of it (bench/.compare/, as `compare` makes), so before and after see the same machine.
 * Targets (#40): start ≤ 5 s, command ≤ 1.5 s, help ≤ 0.5 s, stop ≤ 1 s idle.
 */
import { spawn } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { worktreeOf } from "./compare.ts"
import { withEnvironment } from "./harness/environment.ts"
import { ROOT, setting, sleep } from "./harness/settings.ts"
import { round } from "./harness/stats.ts"
import { freePort } from "../test/support/mail.ts"

const TARGETS = { startMs: 5_000, commandMs: 1_500, helpMs: 500, stopMs: 1_000 }
const STOP_GRACE_MS = 15_000

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? Number.NaN : round(sorted[Math.floor((sorted.length - 1) / 2)]!)
}

/** The processes of a process group (every process `npm` started, with it). */
const groupMembers = (pgid: number) =>
  readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).filter((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ")
      return stat[0] !== "Z" && Number(stat[2]) === pgid
    } catch {
      return false
    }
  })

/** `times`' `0m1.250s` in ms. */
const minutesSeconds = (text: string) => {
  const match = text.match(/^(\d+)m([\d.]+)s$/)
  return match ? (Number(match[1]) * 60 + Number(match[2])) * 1000 : Number.NaN
}

/**
 * Runs `command` in `cwd` to its exit (fails on a non-zero exit): its wall time in ms, and the CPU time
 * (user + system, ms) of every process it ran, which a loaded machine stretches far less than the wall
 * time (bash runs it and then reports its children's times with `times`).
 */
const timedWithCpu = (cwd: string, command: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<{ ms: number; cpuMs: number }>((resolve, reject) => {
    const started = performance.now()
    const script = `"$@"; code=$?; times >&2; exit $code`
    const child = spawn("bash", ["-c", script, "bash", ...command], { cwd, env, stdio: ["ignore", "ignore", "pipe"] })
    let stderr = ""
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`${command.join(" ")} exited ${code}: ${stderr.slice(-2000)}`))
      // The last line of `times`: the children's user and system time.
      const [user = "", system = ""] = stderr.trim().split("\n").at(-1)!.split(" ")
      resolve({ ms: performance.now() - started, cpuMs: minutesSeconds(user) + minutesSeconds(system) })
    })
  })

const timed = (cwd: string, command: ReadonlyArray<string>, env: Record<string, string>) =>
  timedWithCpu(cwd, command, env).then((result) => result.ms)

/** `npm start` until it listens, then SIGTERM to npm until all it started is gone. */
const startAndStop = (cwd: string, env: Record<string, string>) =>
  new Promise<{ startMs: number; stopMs: number; leftRunning: number }>((resolve, reject) => {
    const started = performance.now()
    // Its own process group: what npm leaves behind, if anything, is found and killed at the end.
    const child = spawn("npm", ["start"], { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    let listening = false
    const onData = async (chunk: Buffer) => {
      output += chunk.toString()
      if (listening || !/Listening on http/.test(output)) return
      listening = true
      const startMs = performance.now() - started
      const stopping = performance.now()
      child.kill("SIGTERM")
      let members = groupMembers(child.pid!)
      while (members.length > 0 && performance.now() - stopping < STOP_GRACE_MS) {
        await sleep(20)
        members = groupMembers(child.pid!)
      }
      const stopMs = performance.now() - stopping
      const leftRunning = members.length
      if (leftRunning > 0) process.kill(-child.pid!, "SIGKILL")
      resolve({ startMs, stopMs, leftRunning })
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("exit", (code) => {
      if (!listening) reject(new Error(`npm start exited ${code} before it listened:\n${output.slice(-3000)}`))
    })
  })

const measure = async (cwd: string, env: Record<string, string>) => {
  const run = await startAndStop(cwd, { ...env, PORT: String(await freePort()) })
  const command = await timedWithCpu(cwd, ["npm", "run", "cli", "--", "project", "create", "--name", "startup bench"], env)
  const help = await timedWithCpu(cwd, ["npm", "run", "cli", "--", "--help"], env)
  return { ...run, commandMs: command.ms, commandCpuMs: command.cpuMs, helpMs: help.ms, helpCpuMs: help.cpuMs }
}

type Figures = Awaited<ReturnType<typeof measure>>

const summarize = (runs: ReadonlyArray<Figures>) => ({
  startMs: median(runs.map((r) => r.startMs)),
  stopMs: median(runs.map((r) => r.stopMs)),
  commandMs: median(runs.map((r) => r.commandMs)),
  helpMs: median(runs.map((r) => r.helpMs)),
  commandCpuMs: median(runs.map((r) => r.commandCpuMs)),
  helpCpuMs: median(runs.map((r) => r.helpCpuMs)),
  leftRunning: Math.max(...runs.map((r) => r.leftRunning)),
  runs: runs.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, round(v)])))
})

export const run = (args: ReadonlyArray<string>) =>
  withEnvironment(async (environment) => {
    const rounds = setting("BENCH_ROUNDS", 3)
    const env: Record<string, string> = {
      ...process.env as Record<string, string>,
      DATABASE_URL: environment.databaseUrl,
      NATS_PREFIX: environment.natsPrefix,
      API_PROCESSES: "1",
      // npm would print its banners; the figures are the same.
      npm_config_loglevel: "silent"
    }
    const checkouts: Array<{ code: string; dir: string; runs: Array<Figures> }> = [{ code: "after", dir: ROOT, runs: [] }]
    if (args[0]) checkouts.unshift({ code: `before (${worktreeOf(args[0]).sha})`, dir: worktreeOf(args[0]).dir, runs: [] })
    // Once each, unmeasured: builds what a start after no change finds built.
    for (const checkout of checkouts) await measure(checkout.dir, env)
    const floor = { npmRunNoopMs: [] as Array<number>, npmRunNoopCpuMs: [] as Array<number>, bareNodeMs: [] as Array<number> }
    for (let index = 0; index < rounds; index++) {
      for (const checkout of checkouts) {
        checkout.runs.push(await measure(checkout.dir, env))
        console.error(`[startup] round ${index + 1} ${checkout.code}: ${JSON.stringify(checkout.runs.at(-1))}`)
      }
      const noop = await timedWithCpu(ROOT, ["npm", "run", "env"], env).catch(() => ({ ms: Number.NaN, cpuMs: Number.NaN }))
      floor.npmRunNoopMs.push(noop.ms)
      floor.npmRunNoopCpuMs.push(noop.cpuMs)
      floor.bareNodeMs.push(await timed(ROOT, [process.execPath, "-e", ""], env))
    }
    return {
      description: "operator waits: `npm start` to `Listening on` (services and build checks included, nothing to build) and its " +
        "SIGTERM to the exit of every process, `npm run cli -- project create`, `npm run cli -- --help`; medians of " +
        `${rounds} rounds; baseline: npm's own cost (npm run of an empty script) and a bare node`,
      targets: TARGETS,
      ...Object.fromEntries(checkouts.map((checkout) => [checkout.code, summarize(checkout.runs)])),
      baseline: { npmRunMs: median(floor.npmRunNoopMs), npmRunCpuMs: median(floor.npmRunNoopCpuMs), bareNodeMs: median(floor.bareNodeMs) }
    }
  })
