/**
 * The api's Node server answers a request that arrives while the Effect app is not attached to it (the
 * instant between the bind and the app's handler, or after the handler is removed at shutdown) with a
 * quick 503 and Retry-After, never by holding the connection until the client gives up.
 */
import { Effect } from "effect"
import type { AddressInfo } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { drainableServer } from "../../src/http/server.ts"

const declines = { take: () => false, drain: () => {} }
const { server } = Effect.runSync(drainableServer(declines))

afterEach(() => {
  server.removeAllListeners("request")
})

const get = async (path: string) => {
  const { port } = server.address() as AddressInfo
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(1_000) })
  return { status: response.status, headers: response.headers, json: await response.json() }
}

describe("the api's server without its app", () => {
  it("answers 503 SERVICE_UNAVAILABLE with Retry-After and closes the connection, then serves once the app is attached", async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    try {
      const early = await get("/readyz")
      expect(early.status).toBe(503)
      expect(early.headers.get("retry-after")).toBe("1")
      expect(early.headers.get("connection")).toBe("close")
      expect(early.json).toMatchObject({ success: false, error: { code: "SERVICE_UNAVAILABLE", statusCode: 503 } })
      expect(early.json.error.requestId).toMatch(/^req_/)

      server.on("request", (_request, response) => response.end(JSON.stringify({ status: "ready" })))
      expect(await get("/readyz")).toMatchObject({ status: 200, json: { status: "ready" } })
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
