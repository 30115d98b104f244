/**
 * From its first second to its last, a process on PORT never holds a connection unanswered: while `api`
 * (or `all`) starts, and while it stops, a new connection is refused or answered (503 with Retry-After
 * before the app can serve, 200 once it can), quickly. Probed from the moment the process is spawned,
 * with a fresh connection every few milliseconds and a short client timeout.
 */
import { spawn } from "node:child_process"
import { request as httpRequest } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../support/nats.ts"
import { createStack, type Stack } from "../support/stack.ts"

const ROOT = new URL("../../", import.meta.url).pathname
/** A probe not answered within this long is a hang (an answer on this machine takes milliseconds). */
const PROBE_TIMEOUT_MS = 1_000
const PROBE_EVERY_MS = 10

let stack: Stack
beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
})
afterAll(async () => {
  await stack?.stop()
})

type Probe =
  | { readonly at: number; readonly status: number; readonly retryAfter: string | undefined; readonly code: string | undefined }
  | { readonly at: number; readonly failure: string }

/** GET /readyz on a fresh connection (no keep-alive), given up after PROBE_TIMEOUT_MS. */
const probe = (port: number) =>
  new Promise<Probe>((resolve) => {
    const at = Date.now()
    const req = httpRequest({ host: "127.0.0.1", port, path: "/readyz", agent: false, headers: { connection: "close" } }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () => {
        clearTimeout(timer)
        let code: string | undefined
        try {
          code = JSON.parse(Buffer.concat(chunks).toString()).error?.code
        } catch {
          code = undefined
        }
        resolve({ at, status: res.statusCode!, retryAfter: res.headers["retry-after"], code })
      })
      res.on("error", (error: NodeJS.ErrnoException) => resolve({ at, failure: error.code ?? error.message }))
    })
    const timer = setTimeout(() => {
      req.destroy()
      resolve({ at, failure: "TIMEOUT" })
    }, PROBE_TIMEOUT_MS)
    req.on("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      resolve({ at, failure: error.code ?? error.message })
    })
    req.end()
  })

/** Probes `port` until `until` resolves, one probe every PROBE_EVERY_MS, each on its own connection. */
const probeUntil = async (port: number, until: Promise<unknown>) => {
  const probes: Array<Promise<Probe>> = []
  let done = false
  void until.then(() => (done = true))
  while (!done) {
    probes.push(probe(port))
    await new Promise((resolve) => setTimeout(resolve, PROBE_EVERY_MS))
  }
  return Promise.all(probes)
}

const summary = (probes: ReadonlyArray<Probe>) => {
  const counts: Record<string, number> = {}
  for (const p of probes) {
    const key = "status" in p ? String(p.status) : p.failure
    counts[key] = (counts[key] ?? 0) + 1
  }
  return counts
}

/** Every probe was refused or reset, or answered 200, or a quick 503 that says when to come back. */
const expectNoHang = (probes: ReadonlyArray<Probe>) => {
  expect(probes.filter((p) => "failure" in p && p.failure === "TIMEOUT"), JSON.stringify(summary(probes))).toEqual([])
  for (const p of probes) {
    if ("failure" in p) expect(["ECONNREFUSED", "ECONNRESET", "EPIPE"]).toContain(p.failure)
    else if (p.status !== 200) {
      expect(p).toMatchObject({ status: 503 })
      expect(Number(p.retryAfter)).toBeGreaterThanOrEqual(1)
    }
  }
}

const startAndStop = async (role: "api" | "all") => {
  const port = await freePort()
  const child = spawn(process.execPath, ["src/main.ts", role], {
    cwd: ROOT,
    env: { ...stack.env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal }))
  )
  let output = ""
  const listening = new Promise<void>((resolve) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      if (/Listening on http/.test(output)) resolve()
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
  })
  try {
    // From the spawn until it says it listens, then a little longer.
    const starting = await probeUntil(
      port,
      Promise.race([
        listening.then(() => new Promise((resolve) => setTimeout(resolve, 300))),
        exited
      ])
    )
    expect(child.exitCode, output).toBeNull()
    const stoppedAt = Date.now()
    child.kill("SIGTERM")
    const stopping = await probeUntil(port, exited.then(() => new Promise((resolve) => setTimeout(resolve, 200))))
    return { starting, stopping, exit: await exited, stoppedAt }
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  }
}

describe("start-up and shutdown", () => {
  it.each(["api", "all"] as const)(
    "%s: every connection from the spawn to the exit is refused or answered at once, never held",
    async (role) => {
      const { starting, stopping, exit } = await startAndStop(role)
      expectNoHang(starting)
      expectNoHang(stopping)
      // Once it said it listens, /readyz answers 200.
      expect(starting.at(-1)).toMatchObject({ status: 200 })
      expect(exit).toEqual({ code: 0, signal: null })
    },
    60_000
  )
})
