/**
 * Past its capacity the api sheds /v1/track load early (issue 35): once TRACK_MAX_IN_FLIGHT requests are
 * in flight in a process, a new one is answered 503 SERVICE_UNAVAILABLE with Retry-After at once, instead
 * of waiting behind them. Here the private nats-server of the test is frozen (SIGSTOP), so accepted
 * requests wait for their PubAck and pile up; those past the bound come back at once; thawed, the ones
 * taken complete and new ones are accepted again.
 */
import { spawn } from "node:child_process"
import { rm } from "node:fs/promises"
import { describe, expect, it } from "vitest"
import { freePort, NATS_SERVER } from "../support/nats.ts"
import { createStack, type Stack } from "../support/stack.ts"

const MAX_IN_FLIGHT = 4
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("load shedding on /v1/track", () => {
  it.skipIf(!NATS_SERVER)(
    "answers 503 with Retry-After at once past TRACK_MAX_IN_FLIGHT, and takes requests again once below it",
    async () => {
      const port = await freePort()
      const dir = `/tmp/mailstream-nats-${port}`
      const nats = spawn(NATS_SERVER!, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir], { stdio: "ignore" })
      let stack: Stack | undefined
      try {
        await sleep(500)
        stack = await createStack({
          NATS_URL: `nats://127.0.0.1:${port}`,
          TRACK_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
          RATE_LIMIT_PER_MINUTE: "0"
        })
        const api = await stack.start("api")
        const project = await stack.createProject()
        const track = async (n: number) => {
          const started = Date.now()
          const response = await fetch(`${api.url}/v1/track`, {
            method: "POST",
            headers: { authorization: `Bearer ${project.publicKey}`, "content-type": "application/json" },
            body: JSON.stringify({ email: `c${n}@shed.test`, event: "visited" }),
            signal: AbortSignal.timeout(20_000)
          })
          const json = (await response.json()) as { error?: { code: string } }
          return {
            status: response.status,
            code: json.error?.code,
            retryAfter: response.headers.get("retry-after"),
            ms: Date.now() - started
          }
        }
        // Warm: the key and the contacts known, so the held requests wait on NATS only.
        for (let n = 0; n < 12; n++) expect((await track(n)).status).toBe(200)

        nats.kill("SIGSTOP")
        const held = Array.from({ length: MAX_IN_FLIGHT }, (_, n) => track(n))
        await sleep(300)
        const past = await Promise.all(Array.from({ length: 8 }, (_, n) => track(MAX_IN_FLIGHT + n)))
        for (const answer of past) {
          expect(answer).toMatchObject({ status: 503, code: "SERVICE_UNAVAILABLE", retryAfter: "1" })
          expect(answer.ms).toBeLessThan(1_000)
        }
        nats.kill("SIGCONT")
        // The held ones are answered (accepted, or 503 if their publish timed out meanwhile), never shed.
        for (const answer of await Promise.all(held)) expect([200, 503]).toContain(answer.status)
        expect((await track(99)).status).toBe(200)
        const metrics = await (await fetch(`${api.url}/metrics`)).text()
        expect(Number(metrics.match(/^mailstream_http_track_shed_total (\d+)/m)?.[1])).toBe(8)
      } finally {
        nats.kill("SIGCONT")
        await stack?.stop().catch(() => undefined)
        nats.kill("SIGKILL")
        await rm(dir, { recursive: true, force: true })
      }
    },
    60_000
  )
})
