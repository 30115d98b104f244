/**
 * `all` with one api process (API_PROCESSES=1, the default on two cores): the api and the worker in
 * that one process, no supervisor and no child process, the worker on the api's event loop or on a
 * thread of its own (WORKER_THREAD, the default with 2 cores or more). It listens once both are up, the
 * worker's figures are on the api's /metrics, an event tracked through the api is applied, and SIGTERM
 * stops both gracefully, then it exits 0.
 */
import { readdirSync, readFileSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/nats.ts"
import { logText as text, parsedLogs as parsed } from "../support/logs.ts"
import { request, type Service, type Stack, createStack } from "../support/stack.ts"

let stack: Stack

beforeAll(async () => {
  stack = await createStack({ API_PROCESSES: "1" })
})
afterAll(async () => {
  await stack?.stop()
})

/** The processes whose parent is `pid`. */
const childrenOf = (pid: number) =>
  readdirSync(`/proc/${pid}/task`).flatMap((task) => readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").split(" ").filter(Boolean))

/** The JavaScript threads of `pid` (Node names its main thread `node` or `MainThread`, a worker thread `WorkerThread`). */
const workerThreadsOf = (pid: number) =>
  readdirSync(`/proc/${pid}/task`).filter((task) => readFileSync(`/proc/${pid}/task/${task}/comm`, "utf8").trim() === "WorkerThread")

describe.each([
  { workerThread: false, labels: ["all"] },
  { workerThread: true, labels: ["all", "worker"] }
])("all as one process, WORKER_THREAD=$workerThread", ({ workerThread, labels }) => {
  let all: Service
  beforeAll(async () => {
    all = await stack.start("all", { WORKER_THREAD: String(workerThread) })
  })

  it("runs the api and the worker itself, no child process, listening once both are up", async () => {
    expect(childrenOf(all.process.pid!)).toEqual([])
    expect(workerThreadsOf(all.process.pid!)).toHaveLength(workerThread ? 1 : 0)
    const lines = parsed(all)
    expect(lines).toHaveLength(all.logs.length)
    expect(new Set(lines.map((line) => line.process))).toEqual(new Set(labels))
    const listening = lines.findIndex((line) => text(line).startsWith("Listening on http://0.0.0.0:"))
    expect(listening).toBeGreaterThan(lines.findIndex((line) => text(line) === "worker started"))
    expect(lines.filter((line) => text(line).startsWith("started process")).map((line) => line.process)).toEqual(
      workerThread ? ["all"] : []
    )

    const project = await stack.createProject()
    const tracked = await request(all.url, "POST", "/v1/track", { key: project.publicKey, body: { email: "a@one.test", event: "e" } })
    expect(tracked.status).toBe(200)
    await eventually(async () => {
      const metrics = await request(all.url, "GET", "/metrics")
      expect(metrics.text).toMatch(/^mailstream_events_applied_total [1-9]/m)
      expect(metrics.text).toMatch(/^mailstream_partitions_owned 32$/m)
    }, 20_000)
    expect((await request(all.url, "GET", "/readyz")).status).toBe(200)
  })

  it("SIGTERM stops the api and the worker gracefully, then exits 0", async () => {
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      all.process.once("exit", (code, signal) => resolve({ code, signal }))
    )
    all.process.kill("SIGTERM")
    expect(await exited).toEqual({ code: 0, signal: null })
    const said = parsed(all).map(text)
    expect(said).toContain("worker handed its partitions over")
    expect(said).not.toContain("worker did not stop within 12s; killing it")
    expect(said.at(-1)).toBe("all stopped")
  })
})
