/**
 * An idle role exits promptly after SIGTERM (exit code 0): `api`, `worker` and `all` (one process with
 * API_PROCESSES=1, its worker on the api's event loop or on a thread; the supervisor and its processes with 2), each started as its own process, ready, left alone a moment, then stopped. Nothing is
 * in flight, so nothing is worth waiting for: no drain timeout, lease renewal or poll may hold the exit.
 * #40's target (within 1 s) is measured by `npm run bench -- startup` (SIGTERM to the last exit): here the
 * bound is 3 s, under the shortest cap that could hold an exit (the worker's 5 s), because on a loaded
 * machine a process's own exit after "stopped" took 0.6 s alone.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createStack, type Service, type Stack } from "../support/stack.ts"

const EXIT_WITHIN_MS = 3_000

let stack: Stack
beforeAll(async () => {
  stack = await createStack()
})
afterAll(async () => {
  await stack?.stop()
})

const stopTimed = (service: Service) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>((resolve) => {
    const sent = performance.now()
    service.process.once("exit", (code, signal) => resolve({ code, signal, ms: performance.now() - sent }))
    service.process.kill("SIGTERM")
  })

describe("an idle role stopped by SIGTERM", () => {
  it.each(
    [
      ["api", {}],
      ["worker", {}],
      ["all", { API_PROCESSES: "1", WORKER_THREAD: "false" }],
      ["all", { API_PROCESSES: "1", WORKER_THREAD: "true" }],
      ["all", { API_PROCESSES: "2" }]
    ] as const
  )(`%s %j exits 0 within ${EXIT_WITHIN_MS} ms`, async (role, env) => {
    const service = await stack.start(role, env)
    // Past start-up: its timers (lease renewals, metrics, due loops) are running.
    await new Promise((resolve) => setTimeout(resolve, 3_000))
    const exit = await stopTimed(service)
    expect({ code: exit.code, signal: exit.signal }, service.logs.slice(-5).join("\n")).toEqual({ code: 0, signal: null })
    expect(exit.ms, service.logs.slice(-5).join("\n")).toBeLessThan(EXIT_WITHIN_MS)
  }, 120_000)
})
