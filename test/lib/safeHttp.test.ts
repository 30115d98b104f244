/**
 * safeFetch's connections: requests to one host reuse a kept-alive connection (a delivery no longer pays
 * a handshake each), and a host's address is still checked on every request.
 */
import http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { safeFetch } from "../../src/lib/safeHttp.ts"

let server: http.Server
let connections = 0
let port = 0
beforeAll(async () => {
  server = http.createServer((request, response) => {
    request.resume()
    request.on("end", () => response.end("ok"))
  })
  server.on("connection", () => connections++)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  port = (server.address() as AddressInfo).port
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

const local = (host: string) => Promise.resolve(host === "receiver.test" ? ["127.0.0.1"] : [])

describe("safeFetch", () => {
  it("reuses one connection for requests one after the other to the same host", async () => {
    const before = connections
    for (let n = 0; n < 5; n++) {
      const response = await safeFetch({
        url: `http://receiver.test:${port}/hook`,
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ n }),
        allow: () => true
      }, local)
      expect(response).toMatchObject({ _tag: "Response", status: 200, body: "ok" })
    }
    expect(connections - before).toBe(1)
  })

  it("still checks the address on every request: a loopback target not allowed is blocked", async () => {
    const response = await safeFetch({ url: `http://receiver.test:${port}/hook`, method: "GET", headers: {} }, local)
    expect(response._tag).toBe("Blocked")
  })
})
