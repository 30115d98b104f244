/**
 * /v1/track's fast path (src/http/trackFastPath.ts) answers exactly as the HttpApi endpoint does. A
 * query string sends the same request through the router instead, so each case is asked both ways
 * and the answers compared: status, headers and body, with only the request id, times and the
 * remaining rate-limit count told apart. The fast path's counter says which way each request went.
 */
import { request } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createStack, type Service, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack
let api: Service
let project: TestProject

beforeAll(async () => {
  // A limit, so the rate-limit headers are part of every answer compared.
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "1000" })
  api = await stack.start("api")
  project = await stack.createProject()
})
afterAll(async () => {
  await stack?.stop()
})

const fastPathCount = async () => {
  const metrics = await (await fetch(`${api.url}/metrics`)).text()
  return Number(/^mailstream_http_track_fast_path_total (\d+)/m.exec(metrics)?.[1] ?? "0")
}

const MiB = 1024 * 1024
const json = (value: unknown) => JSON.stringify(value)

interface Case {
  readonly name: string
  readonly headers: (keys: TestProject) => Record<string, string>
  readonly body: string | Uint8Array<ArrayBuffer>
  readonly path?: "/v1/track" | "/events/track"
  /** The fast path takes it (otherwise it declines, and the router answers both). */
  readonly fast: boolean
}

const publicKey = (keys: TestProject) => ({ authorization: `Bearer ${keys.publicKey}`, "content-type": "application/json" })

const CASES: ReadonlyArray<Case> = [
  { name: "an event", headers: publicKey, body: json({ email: "Fast@Example.com", event: "signup", data: { plan: "pro" } }), fast: true },
  { name: "the alias", path: "/events/track", headers: publicKey, body: json({ email: "alias@example.com", event: "signup" }), fast: true },
  {
    name: "no Content-Type, a lower-case scheme and extra spaces",
    headers: (keys) => ({ authorization: `bearer   ${keys.publicKey}` }),
    body: new TextEncoder().encode(json({ email: "a@example.com", event: "x" })),
    fast: true
  },
  {
    name: "JSON with a charset",
    headers: (keys) => ({ ...publicKey(keys), "content-type": "Application/JSON; charset=utf-8" }),
    body: json({ email: "b@example.com", event: "x" }),
    fast: true
  },
  {
    name: "an unknown key",
    headers: () => ({ authorization: "Bearer pk_unknown", "content-type": "application/json" }),
    body: "{",
    fast: true
  },
  {
    name: "the secret key",
    headers: (keys) => ({ ...publicKey(keys), authorization: `Bearer ${keys.secretKey}` }),
    body: "{}",
    fast: true
  },
  { name: "a blank key", headers: () => ({ authorization: "Bearer  ", "content-type": "application/json" }), body: "{}", fast: false },
  { name: "no key", headers: () => ({ "content-type": "application/json" }), body: "{}", fast: false },
  { name: "invalid JSON", headers: publicKey, body: "{nope", fast: true },
  { name: "an empty body", headers: publicKey, body: "", fast: true },
  { name: "an array", headers: publicKey, body: "[]", fast: true },
  { name: "one invalid field", headers: publicKey, body: json({ email: "nope", event: "x" }), fast: true },
  { name: "several invalid fields", headers: publicKey, body: json({ email: 3, event: "", subscribed: "yes" }), fast: true },
  { name: "a reserved event name", headers: publicKey, body: json({ email: "c@example.com", event: "email.sent" }), fast: true },
  {
    name: "invalid custom data",
    headers: publicKey,
    body: json({ email: "c@example.com", event: "x", data: { email: 1, "": 2 } }),
    fast: true
  },
  {
    name: "a body over 1 MiB",
    headers: publicKey,
    body: json({ email: "d@example.com", event: "x", data: { s: "x".repeat(MiB) } }),
    fast: true
  },
  {
    name: "a body over 1 MiB with an unknown key",
    headers: () => ({ authorization: "Bearer pk_x", "content-type": "application/json" }),
    body: "x".repeat(MiB + 1),
    fast: true
  },
  { name: "text/plain", headers: (keys) => ({ ...publicKey(keys), "content-type": "text/plain" }), body: "{}", fast: false },
  {
    name: "an Idempotency-Key",
    headers: (keys) => ({ ...publicKey(keys), "idempotency-key": `k-${Math.random()}` }),
    body: json({ email: "e@example.com", event: "x" }),
    fast: false
  }
]

/** Status, headers and body with what differs between any two requests masked. */
const answerOf = async (response: Response) => {
  const headers = [...response.headers]
    .filter(([name]) => name !== "date" && name !== "ratelimit-remaining" && name !== "ratelimit-reset")
    .map(([name, value]) => `${name}: ${name === "x-request-id" ? "<id>" : value}`)
    .sort()
  const body = (await response.text())
    .replace(/req_[\w-]+/g, "<id>")
    .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "<time>")
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<uuid>")
  return { status: response.status, headers, body }
}

/**
 * A POST whose body is over the limit: both paths answer 413 from its Content-Length and close the
 * connection, which races a client still sending the body (fetch then fails with EPIPE, the answer lost).
 * So the headers go first and the body only if no answer came within a few seconds.
 */
const postOversized = (url: string, headers: Record<string, string>, body: string | Uint8Array) =>
  new Promise<Response>((resolve, reject) => {
    let answered = false
    const outgoing = request(
      url,
      { method: "POST", headers: { ...headers, "content-length": String(Buffer.byteLength(body)) } },
      (incoming) => {
        answered = true
        const chunks: Array<Buffer> = []
        incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
        incoming.on("end", () => {
          outgoing.destroy()
          const answerHeaders = new Headers()
          for (const [name, value] of Object.entries(incoming.headers)) if (value !== undefined) answerHeaders.set(name, String(value))
          resolve(new Response(Buffer.concat(chunks), { status: incoming.statusCode!, headers: answerHeaders }))
        })
        incoming.on("error", reject)
      }
    )
    outgoing.on("error", (error) => answered || reject(error))
    outgoing.flushHeaders()
    setTimeout(() => answered || outgoing.end(body), 5_000)
  })

describe("POST /v1/track's fast path", () => {
  it.each(CASES)("answers $name as the router does", async (testCase) => {
    const path = testCase.path ?? "/v1/track"
    const ask = async (url: string) => {
      const headers = testCase.headers(project)
      // Each its own Idempotency-Key, so the second is not answered as a repeat of the first.
      if (headers["idempotency-key"]) headers["idempotency-key"] += url
      const body = testCase.body
      return answerOf(await (body.length > MiB ? postOversized(url, headers, body) : fetch(url, { method: "POST", headers, body })))
    }
    const before = await fastPathCount()
    const viaRouter = await ask(`${api.url}${path}?via=router`)
    const afterRouter = await fastPathCount()
    const viaFastPath = await ask(`${api.url}${path}`)
    const afterFastPath = await fastPathCount()

    expect(afterRouter - before).toBe(0)
    expect(afterFastPath - afterRouter).toBe(testCase.fast ? 1 : 0)
    expect(viaFastPath).toEqual(viaRouter)
  })

  it("stores what it accepted, like the router", async () => {
    const response = await fetch(`${api.url}/v1/track`, {
      method: "POST",
      headers: publicKey(project),
      body: json({ email: "stored@example.com", event: "fast_path_event", data: { plan: "team" } })
    })
    expect(response.status).toBe(200)
    const { data } = await response.json() as { data: { contact: string } }
    const contact = await fetch(`${api.url}/contacts/${data.contact}`, { headers: { authorization: `Bearer ${project.secretKey}` } })
    expect(await contact.json()).toMatchObject({ email: "stored@example.com" })
  })
})
