/**
 * `all` as a supervisor (API_PROCESSES above 1; with 1 it is one process, ./allInOne.test.ts):
 * API_PROCESSES api processes and one worker process as its children, on one
 * port; a crashed child restarted; SIGTERM stopping every child gracefully (exit 0); and SIGKILL of
 * `all` leaving no child behind.
 */
import { existsSync, readFileSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/nats.ts"
import { logText as text, parsedLogs as parsed } from "../support/logs.ts"
import { request, type Service, type Stack, createStack } from "../support/stack.ts"

let stack: Stack
let all: Service

beforeAll(async () => {
  stack = await createStack({ API_PROCESSES: "2" })
  all = await stack.start("all")
})
afterAll(async () => {
  await stack?.stop()
})

/** The pid of each child as `all` logged them, latest first. */
const pids = (service: Service, child: string): Array<number> =>
  parsed(service)
    .filter((line) => line.process === "all" && text(line) === `started process ${child}`)
    .map((line) => Array.isArray(line.message) ? Number(line.message[1].pid) : NaN)
    .reverse()

const parentOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ")[1])

/** Gone, or a zombie nobody has reaped yet (it runs nothing and holds nothing). */
const gone = (pid: number) =>
  !existsSync(`/proc/${pid}/stat`) || readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").startsWith("Z")

const exitOf = (service: Service) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (service.process.exitCode !== null || service.process.signalCode !== null) {
      resolve({ code: service.process.exitCode, signal: service.process.signalCode })
    } else service.process.once("exit", (code, signal) => resolve({ code, signal }))
  })

describe("all", () => {
  it("runs API_PROCESSES api processes and one worker process as its children, listening once all are ready", async () => {
    const supervisor = all.process.pid!
    const children = ["api-1", "api-2", "worker"].map((name) => pids(all, name)[0])
    for (const pid of children) expect(parentOf(pid!)).toBe(supervisor)
    const lines = parsed(all)
    const listening = lines.findIndex((line) => line.process === "all" && text(line).startsWith("Listening on http://0.0.0.0:"))
    expect(listening).toBeGreaterThan(lines.findIndex((line) => line.process === "worker" && text(line) === "worker started"))
    // Every line says where it came from (a child's lines and its IPC "ready" travel apart: wait for them).
    await eventually(async () => {
      expect(new Set(parsed(all).map((line) => line.process))).toEqual(new Set(["all", "api-1", "api-2", "worker"]))
    })
    expect(parsed(all)).toHaveLength(all.logs.length)

    const project = await stack.createProject()
    for (let i = 0; i < 20; i++) {
      expect((await request(all.url, "GET", "/healthz")).status).toBe(200)
    }
    const tracked = await request(all.url, "POST", "/v1/track", { key: project.publicKey, body: { email: "a@all.test", event: "e" } })
    expect(tracked.status).toBe(200)
    // The worker process applies it; any api process renders every process's metrics.
    await eventually(async () => {
      const metrics = await request(all.url, "GET", "/metrics")
      expect(metrics.text).toMatch(/^mailstream_events_applied_total [1-9]/m)
      expect(metrics.text).toMatch(/^mailstream_partitions_owned 32$/m)
    }, 10_000)
  })

  it("restarts a child that dies, on the same port", async () => {
    const [victim] = pids(all, "api-2")
    process.kill(victim!, "SIGKILL")
    await eventually(async () => {
      expect(pids(all, "api-2")).toHaveLength(2)
      expect(all.logs.some((line) => line.includes('"api-2 restarted"'))).toBe(true)
    }, 45_000)
    expect(all.logs.some((line) => line.includes("api-2 exited unexpectedly; restarting it in 500 ms"))).toBe(true)
    expect(pids(all, "api-2")[0]).not.toBe(victim)
    expect(parentOf(pids(all, "api-2")[0]!)).toBe(all.process.pid)
    for (let i = 0; i < 10; i++) expect((await request(all.url, "GET", "/healthz")).status).toBe(200)
    // A new api process to start: slow on a loaded machine.
  }, 60_000)

  it("SIGTERM stops every child gracefully, then exits 0", async () => {
    const children = ["api-1", "api-2", "worker"].map((name) => pids(all, name)[0]!)
    const exited = exitOf(all)
    all.process.kill("SIGTERM")
    expect(await exited).toEqual({ code: 0, signal: null })
    for (const pid of children) expect(gone(pid)).toBe(true)
    const stopped = parsed(all).filter((line) => text(line).endsWith(" stopped")).map((line) => `${line.process}: ${text(line)}`)
    expect(stopped.sort()).toEqual(["all: all stopped", "api-1: api stopped", "api-2: api stopped", "worker: worker stopped"])
  })

  it("killed by SIGKILL, it leaves no child behind", async () => {
    const doomed = await stack.start("all", { API_PROCESSES: "2" })
    const children = ["api-1", "api-2", "worker"].map((name) => pids(doomed, name)[0]!)
    const exited = exitOf(doomed)
    doomed.process.kill("SIGKILL")
    await exited
    await eventually(async () => {
      for (const pid of children) expect(gone(pid)).toBe(true)
    }, 5_000)
    // Four processes to start first: slow on a loaded machine.
  }, 90_000)
})
