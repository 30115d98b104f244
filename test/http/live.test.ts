/**
 * GET /projects/:id/live over HTTP (issue 36): the session and membership decide who may listen, a
 * tracked event reaches the project's streams (and no other project's), heartbeats flow, the caps per
 * user and per process hold, and a client that stops reading is cut off while the others go on.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { Browser, signUp } from "../accounts/support.ts"
import { openSse, type SseStream } from "../support/sse.ts"
import { createStack, request, type Service, type Stack } from "../support/stack.ts"

let stack: Stack
let api: Service
let nats: NatsConnection
let owner: Browser
let stranger: Browser
let third: Browser
let project: { id: string; publicKey: string; secretKey: string }
let other: { id: string; publicKey: string }
const open: Array<SseStream> = []

const live = async (browser: Browser | undefined, projectId: string) => {
  const stream = await openSse(`${api.url}/projects/${projectId}/live`, browser ? { cookie: browser.cookieHeader() } : {})
  open.push(stream)
  return stream
}

const track = (email: string, event: string, data: Record<string, unknown> = {}) =>
  request(api.url, "POST", "/v1/track", { key: project.publicKey, body: { email, event, data } })

beforeAll(async () => {
  stack = await createStack({
    RATE_LIMIT_PER_MINUTE: "0",
    LIVE_MAX_CLIENTS: "4",
    LIVE_MAX_CLIENTS_PER_USER: "2",
    LIVE_CLIENT_BUFFER: "64",
    LIVE_HEARTBEAT_SECONDS: "1"
  })
  api = await stack.start("all")
  nats = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" })
  owner = (await signUp(api.url, "owner@example.com")).browser
  stranger = (await signUp(api.url, "stranger@example.com")).browser
  third = (await signUp(api.url, "third@example.com")).browser
  project = (await owner.post("/users/@me/projects", { name: "Live" })).json
  other = (await owner.post("/users/@me/projects", { name: "Elsewhere" })).json
}, 60_000)

afterAll(async () => {
  for (const stream of open) stream.close()
  await nats?.close()
  await stack?.stop()
})

/** Membership straight in the table: how a member joins is not what this test is about. */
const join = async (email: string) => {
  const [user] = await stack.query<{ id: string }>("SELECT id FROM users WHERE email = $1", [email])
  await stack.query("INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, 'MEMBER') ON CONFLICT DO NOTHING", [
    project.id,
    user!.id
  ])
}

afterEach(async () => {
  for (const stream of open.splice(0)) {
    stream.close()
    await stream.closed
  }
})

describe("GET /projects/:id/live", () => {
  it("needs a session, and a member of the project", async () => {
    const nobody = await live(undefined, project.id)
    expect(nobody.status).toBe(401)
    expect(JSON.parse(nobody.body).error.code).toBe("UNAUTHENTICATED")
    const outsider = await live(stranger, project.id)
    expect(outsider.status).toBe(404)
    expect(JSON.parse(outsider.body).error.message).toBe("Project not found")
    expect((await live(owner, "not-a-project")).status).toBe(404)
    // The secret key is no session: the stream is the dashboard's.
    const keyed = await openSse(`${api.url}/projects/${project.id}/live`, { authorization: `Bearer ${project.secretKey}` })
    expect(keyed.status).toBe(401)
  })

  it("streams the project's changes and emitted events, heartbeats, and nothing of other projects", async () => {
    const segment = await request(api.url, "POST", "/segments", {
      key: project.secretKey,
      body: {
        name: "Live pros",
        condition: { logic: "AND", groups: [{ filters: [{ field: "data.tier", operator: "equals", value: "pro" }] }] },
        trackMembership: true
      }
    })
    expect(segment.status).toBe(201)
    const mine = await live(owner, project.id)
    expect(mine.status).toBe(200)
    expect(mine.headers["content-type"]).toMatch(/^text\/event-stream/)
    expect(mine.headers["cache-control"]).toContain("no-cache")
    const elsewhere = await live(owner, other.id)
    await mine.waitFor((event) => event.type === "ready")
    await elsewhere.waitFor((event) => event.type === "ready")

    const started = Date.now()
    expect((await track("ada@example.com", "upgraded", { tier: "pro" })).status).toBe(200)
    await mine.waitFor((event) => event.type === "changed")
    const entry = await mine.waitFor((event) => event.type === "event" && event.name === "segment.live-pros.entry")
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(entry).toMatchObject({ segmentId: segment.json.id, contactId: expect.any(String), at: expect.any(String) })
    // Only ids travel, not the contact's data.
    expect(JSON.stringify(entry)).not.toContain("ada@example.com")

    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect(mine.comments()).toBeGreaterThan(0)
    expect(elsewhere.comments()).toBeGreaterThan(0)
    expect(elsewhere.events.map((event) => event.type)).toEqual(["ready"])
  }, 30_000)

  it("holds LIVE_MAX_CLIENTS_PER_USER and LIVE_MAX_CLIENTS, and frees a place when a stream closes", async () => {
    await join("stranger@example.com")
    await join("third@example.com")
    const first = await live(owner, project.id)
    expect((await live(owner, project.id)).status).toBe(200)
    const refused = await live(owner, project.id)
    expect(refused.status).toBe(429)
    expect(JSON.parse(refused.body).error.code).toBe("TOO_MANY_LIVE_STREAMS")
    expect(refused.headers["retry-after"]).toBe("30")
    // Another user has places of their own, until the process is full (4).
    expect((await live(stranger, project.id)).status).toBe(200)
    expect((await live(stranger, project.id)).status).toBe(200)
    const full = await live(third, project.id)
    expect(full.status).toBe(429)
    expect(JSON.parse(full.body).error.message).toContain("LIVE_MAX_CLIENTS")

    first.close()
    await first.closed
    const deadline = Date.now() + 5_000
    let again = await live(third, project.id)
    while (again.status === 429 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      again = await live(third, project.id)
    }
    expect(again.status).toBe(200)
  }, 30_000)

  it("cuts off a client that stops reading, and the others keep receiving", async () => {
    await join("stranger@example.com")
    const slow = await live(owner, project.id)
    const fast = await live(stranger, project.id)
    await slow.waitFor((event) => event.type === "ready")
    await fast.waitFor((event) => event.type === "ready")
    slow.pause()
    // Large events fill the slow client's socket buffers, then its LIVE_CLIENT_BUFFER (64) frames.
    const name = `test.${"x".repeat(16_000)}`
    const subject = `${stack.natsPrefix}.out.${project.id}.test`
    for (let i = 0; i < 2_000; i++) {
      nats.publish(
        subject,
        JSON.stringify({
          id: String(i),
          projectId: project.id,
          name,
          contactId: String(i),
          email: "",
          data: {},
          at: new Date().toISOString()
        })
      )
      // In step with the client that reads: it is never more than 10 events behind.
      if (i % 10 === 9) await fast.waitFor((event) => event.contactId === String(i), 10_000)
    }
    nats.publish(
      subject,
      JSON.stringify({
        id: "last",
        projectId: project.id,
        name: "test.last",
        contactId: "last",
        email: "",
        data: {},
        at: new Date().toISOString()
      })
    )
    await nats.flush()
    await fast.waitFor((event) => event.name === "test.last", 10_000)
    slow.resume()
    await slow.closed
    expect(slow.events.some((event) => event.name === "test.last")).toBe(false)
    // Counted, once: the client that kept reading stayed (the api process's figures reach `all`'s /metrics within 2 s).
    const dropped = /^mailstream_http_live_dropped_total(\{[^}]*\})? 1$/m
    const deadline = Date.now() + 5_000
    let metrics = ""
    while (!dropped.test(metrics) && Date.now() < deadline) {
      metrics = await fetch(`${api.url}/metrics`).then((response) => response.text())
      if (!dropped.test(metrics)) await new Promise((resolve) => setTimeout(resolve, 250))
    }
    expect(metrics).toMatch(dropped)
  }, 60_000)

  // Last: it stops the service.
  it("ends its streams as the service shuts down, rather than holding the shutdown to its 10 s cap", async () => {
    const stream = await live(owner, project.id)
    await stream.waitFor((event) => event.type === "ready")
    const started = Date.now()
    const stopping = api.stop()
    await stream.closed
    expect(Date.now() - started).toBeLessThan(3_000)
    await stopping
  }, 30_000)
})
