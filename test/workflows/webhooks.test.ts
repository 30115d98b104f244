/**
 * WEBHOOK steps end to end: Liquid-rendered requests signed per Standard Webhooks (verified with the
 * `standardwebhooks` package), retries of transient failures, permanent failures, and SSRF probes that
 * must reach nothing. The receiver listens on 127.0.0.2, the one private address the stack is told to
 * allow (WEBHOOK_ALLOW_CIDRS); a canary on 127.0.0.1 counts every request that gets through.
 */
import { createServer, type IncomingMessage, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cidrMatcher, isPublicAddress } from "../../src/domain/addresses.ts"
import { safeFetch } from "../../src/lib/safeHttp.ts"
import { type MailContext, withMailStack } from "../support/mail.ts"
import { request } from "../support/stack.ts"
import { buildWorkflow, call, type Client, settled } from "./support.ts"

interface Received {
  readonly method: string
  readonly path: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

interface Answer {
  readonly status: number
  readonly headers?: Record<string, string>
  readonly body?: string
}

const listen = async (host: string, handle: (received: Received) => Answer) => {
  const received: Array<Received> = []
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const entry = { method: req.method!, path: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") }
      received.push(entry)
      const answer = handle(entry)
      res.writeHead(answer.status, answer.headers ?? {})
      res.end(answer.body ?? "")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  return {
    received,
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

let context: MailContext
let client: Client
withMailStack((ready) => {
  context = ready
  client = { url: ready.api.url, key: ready.project.secretKey }
}, { WEBHOOK_ALLOW_CIDRS: "127.0.0.2/32" })

let receiver: Awaited<ReturnType<typeof listen>>
let canary: Awaited<ReturnType<typeof listen>>
const failuresLeft = new Map<string, number>()
beforeAll(async () => {
  canary = await listen("127.0.0.1", () => ({ status: 200, body: "canary" }))
  receiver = await listen("127.0.0.2", (received): Answer => {
    if (received.path.startsWith("/redirect")) return { status: 302, headers: { location: `http://127.0.0.1:${canary.port}/stolen` } }
    if (received.path.startsWith("/loop")) return { status: 302, headers: { location: `/loop/${received.path.split("/").length}` } }
    if (received.path.startsWith("/hop")) return { status: 307, headers: { location: `http://b.wf.test:${receiver.port}/landed` } }
    if (received.path.startsWith("/flaky")) {
      const left = failuresLeft.get(received.path) ?? 2
      failuresLeft.set(received.path, left - 1)
      if (left > 0) return { status: 503 }
    }
    if (received.path.startsWith("/gone")) return { status: 410 }
    return { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ ok: true }) }
  })
})
afterAll(async () => {
  await receiver?.close()
  await canary?.close()
})

const track = async (email: string, event: string, data?: Record<string, unknown>) => {
  const response = await request(context.api.url, "POST", "/v1/track", { key: context.project.publicKey, body: { email, event, data } })
  expect(response.status).toBe(200)
  return response.json.data as { contact: string }
}

const webhookWorkflow = (name: string, config: Record<string, unknown>) =>
  buildWorkflow(client, { name, eventName: `hook_${name}`, first: "hook", steps: { hook: { type: "WEBHOOK", config } } })

describe("WEBHOOK steps", () => {
  it("sends the default body, rendered headers and a Standard Webhooks signature that verifies", async () => {
    await call(client, "POST", "/contacts", { email: "hook@wf.test", data: { plan: "pro" } })
    const { workflowId } = await webhookWorkflow("signed", {
      url: `http://127.0.0.2:${receiver.port}/hooks/{{ id }}?plan={{ plan }}`,
      headers: { "x-plan": "{{ data.plan | upcase }}", authorization: "Bearer abc" }
    })
    const tracked = await track("hook@wf.test", "hook_signed", { orderId: 7 })
    const [execution] = await settled(client, workflowId, "COMPLETED")
    const hit = receiver.received.find((received) => received.path.startsWith(`/hooks/${tracked.contact}`))!
    expect(hit.path).toBe(`/hooks/${tracked.contact}?plan=pro`)
    expect(hit.method).toBe("POST")
    expect(hit.headers["x-plan"]).toBe("PRO")
    expect(hit.headers.authorization).toBe("Bearer abc")
    const body = JSON.parse(hit.body)
    expect(body).toEqual({
      contact: { id: tracked.contact, email: "hook@wf.test", subscribed: expect.any(Boolean), data: { plan: "pro", orderId: 7 } },
      workflow: { id: workflowId, name: "signed" },
      execution: { id: execution!.id, startedAt: expect.any(String) },
      event: { orderId: 7 }
    })
    const secret = (await call(client, "GET", "/workflows/webhook-secret")).json.secret
    const verified = new Webhook(secret).verify(hit.body, {
      "webhook-id": String(hit.headers["webhook-id"]),
      "webhook-timestamp": String(hit.headers["webhook-timestamp"]),
      "webhook-signature": String(hit.headers["webhook-signature"])
    })
    expect(verified).toEqual(body)
    const step = execution!.steps.find((candidate) => candidate.stepType === "WEBHOOK")!
    expect(hit.headers["webhook-id"]).toBe(step.id)
    expect(step).toMatchObject({ status: "COMPLETED", attempts: 1, output: { status: 200, body: '{"ok":true}' } })
    // A tampered body does not verify.
    expect(() => new Webhook(secret).verify(`${hit.body} `, hit.headers as Record<string, string>)).toThrow()
  })

  it("renders a custom body; GET without one; retries 503s with backoff, fails for good on a 4xx", async () => {
    const custom = await webhookWorkflow("custom", {
      url: `http://127.0.0.2:${receiver.port}/custom`,
      method: "PUT",
      body: '{"email": "{{ email }}", "total": {{ event.total }}}'
    })
    const get = await webhookWorkflow("get", { url: `http://127.0.0.2:${receiver.port}/get?e={{ email | url_encode }}`, method: "GET" })
    const flaky = await webhookWorkflow("flaky", { url: `http://127.0.0.2:${receiver.port}/flaky/{{ id }}` })
    const gone = await webhookWorkflow("gone", { url: `http://127.0.0.2:${receiver.port}/gone` })
    await track("custom@wf.test", "hook_custom", { total: 12.5 })
    await track("get@wf.test", "hook_get")
    await track("flaky@wf.test", "hook_flaky")
    await track("gone@wf.test", "hook_gone")
    await settled(client, custom.workflowId, "COMPLETED")
    const put = receiver.received.find((received) => received.path === "/custom")!
    expect(put.method).toBe("PUT")
    expect(JSON.parse(put.body)).toEqual({ email: "custom@wf.test", total: 12.5 })
    await settled(client, get.workflowId, "COMPLETED")
    const getHit = receiver.received.find((received) => received.path.startsWith("/get"))!
    expect(getHit).toMatchObject({ method: "GET", path: "/get?e=get%40wf.test", body: "" })

    const [failed] = await settled(client, gone.workflowId, "FAILED")
    expect(failed!.error).toContain("HTTP 410")
    expect(failed!.steps.at(-1)).toMatchObject({ stepType: "WEBHOOK", status: "FAILED", attempts: 1 })
    // Two 503s, then 200: about 2 s + 4 s of backoff.
    const [completed] = await settled(client, flaky.workflowId, "COMPLETED", 1, 30_000)
    expect(completed!.steps.at(-1)).toMatchObject({ status: "COMPLETED", attempts: 3 })
    expect(receiver.received.filter((received) => received.path.startsWith("/flaky"))).toHaveLength(3)
  }, 60_000)

  it("SSRF probes reach nothing: loopback, 169.254.169.254, ::ffff:127.0.0.1, IPv4-compatible ::7f00:1 and NAT64, a name resolving to 127.0.0.1, a redirect to loopback", async () => {
    context.dns.set("internal.wf.test", { A: ["127.0.0.1"] })
    context.dns.set("mixed.wf.test", { A: ["93.184.216.34", "127.0.0.1"] })
    const probes = {
      loopback: `http://127.0.0.1:${canary.port}/probe`,
      metadata: "http://169.254.169.254/latest/meta-data/",
      mapped: `http://[::ffff:127.0.0.1]:${canary.port}/probe`,
      mappedHex: `http://[::ffff:7f00:1]:${canary.port}/probe`,
      name: `http://internal.wf.test:${canary.port}/probe`,
      mixed: `http://mixed.wf.test:${canary.port}/probe`,
      redirect: `http://127.0.0.2:${receiver.port}/redirect`,
      decimal: `http://2130706433:${canary.port}/probe`,
      zero: `http://0.0.0.0:${canary.port}/probe`,
      // IPv4-compatible IPv6 (::/96, deprecated) and NAT64 carry an IPv4 address: loopback and metadata here.
      compatible: `http://[::7f00:1]:${canary.port}/probe`,
      compatibleDotted: `http://[::127.0.0.1]:${canary.port}/probe`,
      compatibleMetadata: "http://[::a9fe:a9fe]/latest/meta-data/",
      nat64: `http://[64:ff9b::7f00:1]:${canary.port}/probe`
    }
    const workflows = await Promise.all(
      Object.entries(probes).map(async ([name, url]) => [name, (await webhookWorkflow(`ssrf_${name}`, { url })).workflowId] as const)
    )
    for (const [name] of workflows) await track(`ssrf@wf.test`, `hook_ssrf_${name}`)
    for (const [name, workflowId] of workflows) {
      const [execution] = await settled(client, workflowId, "FAILED")
      expect(execution!.error, name).toMatch(/refused/)
      expect(execution!.steps.at(-1)!.attempts, name).toBe(1)
    }
    expect(canary.received).toEqual([])
    // The redirect itself was followed only as far as the check.
    expect(receiver.received.filter((received) => received.path === "/redirect")).toHaveLength(1)
  })

  it("fails for good after more than 3 redirects, without retrying", async () => {
    const { workflowId } = await webhookWorkflow("loop", { url: `http://127.0.0.2:${receiver.port}/loop` })
    await track("loop@wf.test", "hook_loop")
    const [execution] = await settled(client, workflowId, "FAILED")
    expect(execution!.error).toContain("more than 3 redirects")
    expect(execution!.steps.at(-1)).toMatchObject({ stepType: "WEBHOOK", status: "FAILED", attempts: 1 })
    // The request and its three redirects, once.
    expect(receiver.received.filter((received) => received.path.startsWith("/loop"))).toHaveLength(4)
  })

  it("a redirect to another host carries no Host, credentials or custom headers; the signature follows", async () => {
    context.dns.set("a.wf.test", { A: ["127.0.0.2"] })
    context.dns.set("b.wf.test", { A: ["127.0.0.2"] })
    const { workflowId } = await webhookWorkflow("hop", {
      url: `http://a.wf.test:${receiver.port}/hop`,
      method: "PUT",
      headers: { host: "internal.example", authorization: "Bearer s3cret", cookie: "sid=1", "x-api-key": "k1", accept: "application/json" }
    })
    await track("hop@wf.test", "hook_hop")
    await settled(client, workflowId, "COMPLETED")
    const first = receiver.received.find((received) => received.path === "/hop")!
    expect(first.headers).toMatchObject({ host: "internal.example", authorization: "Bearer s3cret", cookie: "sid=1", "x-api-key": "k1" })
    const landed = receiver.received.find((received) => received.path === "/landed")!
    expect(landed.method).toBe("PUT")
    expect(landed.body).toBe(first.body)
    expect(landed.headers.host).toBe(`b.wf.test:${receiver.port}`)
    for (const name of ["authorization", "cookie", "x-api-key"]) expect(landed.headers[name], name).toBeUndefined()
    expect(landed.headers).toMatchObject({
      accept: "application/json",
      "content-type": "application/json",
      "webhook-id": first.headers["webhook-id"],
      "webhook-signature": first.headers["webhook-signature"]
    })
  })

  it("the address rules themselves", async () => {
    for (
      const address of [
        "127.0.0.1",
        "10.0.0.1",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "2002:7f00:1::",
        "224.0.0.1",
        "255.255.255.255"
      ]
    ) {
      expect(isPublicAddress(address), address).toBe(false)
    }
    // IPv6 forms that carry an IPv4 address: IPv4-compatible (::/96), NAT64 of a private address,
    // 6to4 and Teredo (refused whatever they carry), RFC 6145, the local NAT64 prefix; the rest of ::/8.
    const embedding = [
      "::7f00:1",
      "::127.0.0.1",
      "::a9fe:a9fe",
      "::a00:1",
      "::5db8:d822",
      "64:ff9b::7f00:1",
      "64:ff9b::a9fe:a9fe",
      "64:ff9b::a00:1",
      "2002:5db8:d822::1",
      "2001:0:5db8:d822::1",
      "::ffff:0:5db8:d822",
      "64:ff9b:1::5db8:d822",
      "::1:0:0:1",
      "100::1"
    ]
    for (const address of embedding) expect(isPublicAddress(address), address).toBe(false)
    for (const address of ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "::ffff:93.184.216.34", "64:ff9b::5db8:d822"]) {
      expect(isPublicAddress(address), address).toBe(true)
    }
    const allow = cidrMatcher(["127.0.0.2/32", "fd00::/8"])
    expect([
      allow("127.0.0.2"),
      allow("::ffff:127.0.0.2"),
      allow("64:ff9b::7f00:2"),
      allow("::7f00:2"),
      allow("127.0.0.1"),
      allow("fd12::1")
    ])
      .toEqual([true, true, true, false, false, true])
    // Without the allowance, even the test receiver is refused; a hung server times out.
    const refused = await safeFetch({ url: `http://127.0.0.2:${receiver.port}/`, method: "GET", headers: {} }, async () => [])
    expect(refused).toMatchObject({ _tag: "Blocked" })
    const silent = createServer(() => undefined)
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.2", resolve))
    const started = Date.now()
    const timedOut = await safeFetch(
      { url: `http://127.0.0.2:${(silent.address() as AddressInfo).port}/`, method: "GET", headers: {}, timeoutMs: 500, allow: () => true },
      async () => []
    )
    expect(timedOut).toMatchObject({ _tag: "Failed" })
    expect(Date.now() - started).toBeLessThan(5_000)
    silent.closeAllConnections()
    silent.close()
    // The response body is capped.
    const big = createServer((_req, res) => res.end("x".repeat(1_000_000)))
    await new Promise<void>((resolve) => big.listen(0, "127.0.0.2", resolve))
    const capped = await safeFetch(
      {
        url: `http://127.0.0.2:${(big.address() as AddressInfo).port}/`,
        method: "GET",
        headers: {},
        maxResponseBytes: 1000,
        allow: () => true
      },
      async () => []
    )
    expect(capped).toMatchObject({ _tag: "Response", status: 200, truncated: true })
    expect((capped as { body: string }).body).toHaveLength(1000)
    big.close()
  })
})
