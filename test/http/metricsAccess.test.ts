/**
 * Who may read /metrics (issue 33, finding 13), through HTTP: without METRICS_TOKEN only direct requests
 * from a private address (a request a proxy forwarded is refused, so a fresh install behind Caddy or any
 * proxy does not publish it); with it, whoever sends it as a bearer token; with METRICS_PORT, /metrics
 * leaves PORT for that port, shared by the api processes of `all`. The address rule's public side, which
 * this machine cannot connect from, is checked on the rule itself.
 */
import { Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { metricsAccess } from "../../src/observability/metricsAccess.ts"
import { freePort } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { createStack, request, type Service, type Stack } from "../support/stack.ts"

const TOKEN = "metrics-token-0123456789"

let stack: Stack
let plain: Service
let tokened: Service

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
  ;[plain, tokened] = await Promise.all([stack.start("api"), stack.start("api", { METRICS_TOKEN: TOKEN })])
})
afterAll(async () => {
  await stack?.stop()
})

const metrics = (base: string, headers: Record<string, string> = {}) => request(base, "GET", "/metrics", { headers })

describe("/metrics on PORT", () => {
  it("answers a direct request from this machine, and refuses one a proxy forwarded, without a token", async () => {
    const direct = await metrics(plain.url)
    expect(direct.status).toBe(200)
    expect(direct.text).toContain("mailstream_http_request_duration_seconds")
    const forwardings: Array<Record<string, string>> = [{ "x-forwarded-for": "203.0.113.9" }, { forwarded: "for=203.0.113.9" }, {
      "x-real-ip": "203.0.113.9"
    }]
    for (const headers of forwardings) {
      const proxied = await metrics(plain.url, headers)
      expect(proxied.status, JSON.stringify(headers)).toBe(403)
      expect(proxied.json.error).toMatchObject({ code: "METRICS_NOT_PUBLIC", statusCode: 403 })
      expect(proxied.text).not.toContain("mailstream_")
    }
  })

  it("requires the bearer token when METRICS_TOKEN is set, from anywhere", async () => {
    for (const authorization of [undefined, "Bearer wrong-token-0123456789", `Basic ${TOKEN}`, `Bearer ${TOKEN}x`]) {
      const refused = await metrics(tokened.url, authorization ? { authorization } : {})
      expect(refused.status, authorization).toBe(401)
      expect(refused.headers.get("www-authenticate")).toBe("Bearer")
      expect(refused.json.error.code).toBe("INVALID_METRICS_TOKEN")
    }
    expect((await metrics(tokened.url, { authorization: `Bearer ${TOKEN}` })).status).toBe(200)
    // Through a proxy too: the token is what counts.
    const proxied = await metrics(tokened.url, { authorization: `bearer ${TOKEN}`, "x-forwarded-for": "203.0.113.9" })
    expect(proxied.status).toBe(200)
    expect(proxied.text).toContain("mailstream_http_request_duration_seconds")
  })
})

describe("METRICS_PORT", () => {
  it("moves an api's /metrics off PORT, to a port the api processes of `all` share, under the same rule", async () => {
    const port = await freePort()
    const all = await stack.start("all", { METRICS_PORT: String(port), METRICS_TOKEN: TOKEN, API_PROCESSES: "2" })
    const onPort = await metrics(all.url, { authorization: `Bearer ${TOKEN}` })
    expect(onPort.status).toBe(404)
    expect(onPort.json.error.code).toBe("NOT_FOUND")
    const separate = `http://127.0.0.1:${port}`
    // Every process's figures, the worker's among them, whichever api process answers.
    await eventually(async () => {
      const served = await metrics(separate, { authorization: `Bearer ${TOKEN}` })
      expect(served.status).toBe(200)
      expect(served.text).toMatch(/^mailstream_partitions_owned \d+$/m)
    })
    const refused = await metrics(separate)
    expect(refused.status).toBe(401)
    expect(refused.headers.get("www-authenticate")).toBe("Bearer")
    expect((await request(separate, "GET", "/healthz")).json).toEqual({ status: "ok" })
    expect((await request(separate, "GET", "/other")).status).toBe(404)
    await all.stop()
  })
})

describe("the access rule", () => {
  const open = metricsAccess(undefined)
  it("lets direct requests from loopback and private networks in, and nothing public or forwarded", () => {
    for (
      const peer of ["127.0.0.1", "::1", "::ffff:127.0.0.1", "10.1.2.3", "172.30.253.7", "192.168.1.9", "fd00::5", "fe80::1", "100.64.0.1"]
    ) {
      expect(open({ authorization: undefined, forwarded: false, peer }), peer).toBe("allowed")
      expect(open({ authorization: undefined, forwarded: true, peer }), peer).toBe("forbidden")
    }
    for (const peer of ["203.0.113.9", "8.8.8.8", "2001:4860::8888", "::ffff:8.8.8.8", undefined, "garbage"]) {
      expect(open({ authorization: undefined, forwarded: false, peer }), peer).toBe("forbidden")
    }
  })

  it("with a token, takes the token from anywhere and nothing else", () => {
    const guarded = metricsAccess(Redacted.make(TOKEN))
    expect(guarded({ authorization: `Bearer ${TOKEN}`, forwarded: true, peer: "8.8.8.8" })).toBe("allowed")
    expect(guarded({ authorization: undefined, forwarded: false, peer: "127.0.0.1" })).toBe("unauthorized")
    expect(guarded({ authorization: `Bearer ${TOKEN.slice(1)}`, forwarded: false, peer: "127.0.0.1" })).toBe("unauthorized")
  })
})
