/**
 * Graceful shutdown of the api: on SIGTERM it refuses new connections at once, finishes every request
 * in flight (here /v1/verify calls held up by DNS lookups, under a load of /v1/track) with a complete
 * answer, then exits 0.
 */
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startDnsServer, type TestDnsServer } from "../support/dns.ts"
import { eventually } from "../support/nats.ts"
import { createStack, request, type Service, type Stack, type TestProject } from "../support/stack.ts"

const SLOW_DOMAINS = ["slow-1.test", "slow-2.test", "slow-3.test", "slow-4.test", "slow-5.test"]

let dns: TestDnsServer
let stack: Stack
let api: Service
let project: TestProject

beforeAll(async () => {
  dns = await startDnsServer()
  // Unanswered: each verification of these waits for its lookups to time out (2 s).
  for (const domain of SLOW_DOMAINS) dns.silence(domain)
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
  api = await stack.start("api", { DNS_SERVERS: dns.address })
  project = await stack.createProject()
})
afterAll(async () => {
  await stack?.stop()
  await dns?.close()
})

/** Resolves when a fresh TCP connection to the port is refused (tried every 20 ms). */
const refused = (port: number) =>
  new Promise<number>((resolve) => {
    const attempt = () => {
      const socket = connect(port, "127.0.0.1")
      socket.once("connect", () => {
        socket.destroy()
        setTimeout(attempt, 20)
      })
      socket.once("error", (error: NodeJS.ErrnoException) => error.code === "ECONNREFUSED" ? resolve(Date.now()) : setTimeout(attempt, 20))
    }
    attempt()
  })

type Outcome = { readonly status: number; readonly body: string } | { readonly failure: string }

const failureCode = (error: unknown): string => {
  const cause = error instanceof Error ? error.cause : undefined
  return cause instanceof Error ? ("code" in cause ? String(cause.code) : cause.name) : String(error)
}

describe("api graceful shutdown", () => {
  it("SIGTERM refuses new connections at once, answers every request in flight in full, then exits 0", async () => {
    const port = Number(new URL(api.url).port)
    const outcomes: Array<Outcome> = []
    let loading = true
    const load = async (lane: number) => {
      for (let i = 0; loading; i++) {
        try {
          const response = await fetch(`${api.url}/v1/track`, {
            method: "POST",
            headers: { authorization: `Bearer ${project.publicKey}`, "content-type": "application/json" },
            body: JSON.stringify({ email: `load${lane}-${i}@shutdown.test`, event: "load" })
          })
          outcomes.push({ status: response.status, body: await response.text() })
        } catch (error) {
          outcomes.push({ failure: failureCode(error) })
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
      }
    }
    const loads = [0, 1, 2, 3].map(load)
    await eventually(async () => expect(outcomes.length).toBeGreaterThan(20))

    const slow = SLOW_DOMAINS.map((domain) =>
      request(api.url, "POST", "/v1/verify", { key: project.secretKey, body: { email: `ada@${domain}` } })
        .then((answer) => ({ ...answer, at: Date.now() }))
    )
    // In flight: the api has asked the DNS server about every slow domain.
    await eventually(async () => {
      for (const domain of SLOW_DOMAINS) expect(dns.queries.some((query) => query.name === domain)).toBe(true)
    })

    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      api.process.once("exit", (code, signal) => resolve({ code, signal }))
    )
    const termAt = Date.now()
    api.process.kill("SIGTERM")
    const refusedAt = await refused(port)
    const answers = await Promise.all(slow)
    const exit = await exited
    loading = false
    await Promise.all(loads)

    expect(exit).toEqual({ code: 0, signal: null })
    // New connections were refused while the requests in flight were still running...
    expect(refusedAt).toBeLessThan(Math.min(...answers.map((answer) => answer.at)))
    // ...and each of those got its complete answer.
    for (const [index, answer] of answers.entries()) {
      expect(answer.status).toBe(200)
      expect(answer.json.data).toMatchObject({ email: `ada@${SLOW_DOMAINS[index]}`, valid: false })
    }
    // Under load: every answer is complete and a success; the rest could not connect or were cut between requests.
    const answered = outcomes.filter((outcome) => "status" in outcome)
    expect(answered.length).toBeGreaterThan(20)
    for (const outcome of answered) expect({ ...outcome, body: JSON.parse(outcome.body).success }).toEqual({ status: 200, body: true })
    for (const outcome of outcomes) {
      if ("failure" in outcome) expect(["ECONNREFUSED", "ECONNRESET", "UND_ERR_SOCKET", "SocketError"]).toContain(outcome.failure)
    }
    expect(Date.now() - termAt).toBeLessThan(12_000)
    expect(api.logs.some((line) => line.includes('"api stopped"'))).toBe(true)
  })
})
