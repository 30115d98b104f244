/**
 * Event destinations end to end, through real HTTP receivers on 127.0.0.2 (the one private address the
 * stack may reach, WEBHOOK_ALLOW_CIDRS), a real worker consuming stream OUT and real Postgres: exactly
 * the subscribed events arrive, signed; a flaky receiver gets every event once per webhook-id, in each
 * contact's order; a blackholed endpoint does not hold up another; replay, test events, secret rotation
 * with overlap, auto-disable; validation and another project's ids. Events come from the service
 * itself (a tracked change entering a segment) and, where a test needs exact control of order and
 * count, are published to stream OUT as the outbox relay publishes them.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node"
import { jetstream, type JetStreamClient } from "@nats-io/jetstream"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { verifyWebhook } from "../../src/lib/standardWebhooks.ts"
import { eventually } from "../support/nats.ts"
import { createStack, request, type Service, type Stack, type TestProject } from "../support/stack.ts"

const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222"
const HOST = "127.0.0.2"

interface Hit {
  readonly path: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
  readonly json: any
  readonly at: number
}

/** A receiver: `answer` decides each request's status (perhaps later), or null to never answer (a blackhole). */
const listen = async (answer: (hit: Hit) => number | null | Promise<number> = () => 200) => {
  const hits: Array<Hit> = []
  const sockets = new Set<Socket>()
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8")
      const hit = { path: req.url!, headers: req.headers, body, json: JSON.parse(body), at: Date.now() }
      hits.push(hit)
      void Promise.resolve(answer(hit)).then((status) => {
        if (status === null) return
        res.writeHead(status, { "content-type": "text/plain" })
        res.end(status < 300 ? "ok" : "nope")
      })
    })
  })
  server.on("connection", (socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve))
  const url = (path = "/hook") => `http://${HOST}:${(server.address() as AddressInfo).port}${path}`
  return {
    hits,
    url,
    close: () => {
      for (const socket of sockets) socket.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

let stack: Stack
let api: Service
let project: TestProject
let other: TestProject
let nc: NatsConnection
let js: JetStreamClient
const receivers: Array<{ close(): Promise<void> }> = []

beforeAll(async () => {
  stack = await createStack({
    RATE_LIMIT_PER_MINUTE: "0",
    WEBHOOK_ALLOW_CIDRS: `${HOST}/32`,
    DESTINATION_RETRY_BASE_MS: "100",
    DESTINATION_RETRY_MAX_MS: "400",
    DESTINATION_TIMEOUT_MS: "20000",
    DESTINATION_DISABLE_AFTER_FAILURES: "12",
    DESTINATION_RETRY_HOURS: "0.01"
  })
  api = await stack.start("all")
  project = await stack.createProject("destinations")
  other = await stack.createProject("another")
  nc = await connect({ servers: NATS_URL })
  js = jetstream(nc)
}, 120_000)

afterAll(async () => {
  await nc?.close()
  for (const receiver of receivers) await receiver.close()
  await stack?.stop()
})

/** Waits for a condition, polling, with a deadline generous enough for a loaded machine (a pass is fast). */
const waitFor = <A>(check: () => Promise<A>) => eventually(check, 45_000)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const call = (method: string, path: string, body?: unknown, key = project.secretKey) => request(api.url, method, path, { key, body })

const receiver = async (answer?: (hit: Hit) => number | null | Promise<number>) => {
  const made = await listen(answer)
  receivers.push(made)
  return made
}

const createDestination = async (url: string, events: Array<string>) => {
  const created = await call("POST", "/destinations", { url, events })
  expect(created.status, created.text).toBe(201)
  return created.json as { id: string; secret: string }
}

/** Publishes an event to stream OUT as the outbox relay does (subject, payload, message id). */
const emit = async (name: string, contactId: string, data: Record<string, unknown> = {}, projectId = project.id) => {
  const event = {
    id: randomUUID(),
    projectId,
    name,
    contactId,
    email: `${contactId.slice(0, 8)}@example.com`,
    data,
    at: new Date().toISOString()
  }
  await js.publish(`${stack.natsPrefix}.out.${projectId}.${name}`, JSON.stringify(event), { msgID: event.id })
  return event
}

const verified = (secret: string, hit: Hit) =>
  verifyWebhook(
    secret,
    String(hit.headers["webhook-id"]),
    Number(hit.headers["webhook-timestamp"]),
    hit.body,
    String(hit.headers["webhook-signature"])
  )

const deliveries = async (destinationId: string, query = "") => {
  const listed = await call("GET", `/destinations/${destinationId}/deliveries?limit=100${query}`)
  expect(listed.status, listed.text).toBe(200)
  return listed.json.data as Array<Record<string, any>>
}

describe("event destinations", () => {
  it("delivers exactly the subscribed events (wildcards, real segment entries), signed per Standard Webhooks", async () => {
    const segment = await call("POST", "/segments", {
      name: "VIP",
      condition: { logic: "AND", groups: [{ filters: [{ field: "data.tier", operator: "equals", value: "vip" }] }] },
      trackMembership: true
    })
    expect(segment.status, segment.text).toBe(201)
    const entries = await receiver()
    const vipExits = await receiver()
    const everything = await receiver()
    const mail = await receiver()
    const a = await createDestination(entries.url(), ["segment.*.entry"])
    const b = await createDestination(vipExits.url(), ["segment.vip.exit"])
    const c = await createDestination(everything.url(), ["*"])
    const d = await createDestination(mail.url(), ["email.*", "signed_up"])

    const tracked = await request(api.url, "POST", "/v1/track", {
      key: project.publicKey,
      body: { email: "vip@example.com", event: "upgraded", data: { tier: "vip" } }
    })
    expect(tracked.status).toBe(200)
    await waitFor(async () => expect(entries.hits.length).toBe(1))
    const entry = entries.hits[0]!
    expect(entry.json).toMatchObject({
      type: "segment.vip.entry",
      timestamp: expect.any(String),
      data: { projectId: project.id, contactId: tracked.json.data.contact, email: "vip@example.com" }
    })
    expect(verified(a.secret, entry)).toBe(true)
    expect(verified(b.secret, entry)).toBe(false)
    expect(verified(a.secret, { ...entry, body: `${entry.body} ` })).toBe(false)

    const contact = randomUUID()
    await emit("segment.vip.exit", contact)
    await emit("segment.other.exit", contact)
    await emit("email.open", contact, { emailId: "e1" })
    await emit("email.sent.extra", contact)
    await emit("emails.open", contact)
    await emit("signed_up", contact)
    await emit("signed_up.twice", contact)
    // A tracked event's own name (it never goes through stream OUT: it is taken from the api's ingest envelopes).
    const signedUp = await request(api.url, "POST", "/v1/track", {
      key: project.publicKey,
      body: { email: "vip@example.com", event: "signed_up", data: { plan: "pro" } }
    })
    expect(signedUp.status).toBe(200)
    // "*": the tracked "upgraded" and "signed_up", the segment entry and the 7 published.
    await waitFor(async () => expect(everything.hits.length).toBe(10))
    await waitFor(async () =>
      expect(mail.hits.map((hit) => hit.json.type).sort()).toEqual(["email.open", "email.sent.extra", "signed_up", "signed_up"])
    )
    const tracked2 = mail.hits.find((hit) => hit.json.type === "signed_up" && hit.json.data.email === "vip@example.com")!
    expect(tracked2.json.data).toMatchObject({ contactId: tracked.json.data.contact, data: { plan: "pro" } })
    await waitFor(async () => expect(vipExits.hits.map((hit) => hit.json.type)).toEqual(["segment.vip.exit"]))
    expect(everything.hits.every((hit) => verified(c.secret, hit))).toBe(true)
    expect(mail.hits.every((hit) => verified(d.secret, hit))).toBe(true)
    // Nothing else arrives later.
    await sleep(300)
    expect(entries.hits).toHaveLength(1)
    expect(vipExits.hits).toHaveLength(1)
    expect(mail.hits).toHaveLength(4)
    // Another project's events reach none of them.
    await emit("segment.vip.entry", contact, {}, other.id)
    await sleep(300)
    expect(entries.hits).toHaveLength(1)

    const log = await deliveries(a.id)
    expect(log).toEqual([expect.objectContaining({
      id: entry.headers["webhook-id"],
      eventType: "segment.vip.entry",
      status: "succeeded",
      attempts: 1,
      lastStatusCode: 200,
      responseExcerpt: "ok",
      latencyMs: expect.any(Number)
    })])
    const got = await call("GET", `/destinations/${a.id}`)
    expect(got.json).toMatchObject({ enabled: true, consecutiveFailures: 0, stats: { succeeded: 1, pending: 0, parked: 0 } })
    expect(got.json.secret).toBeUndefined()
  }, 120_000)

  it("retries a receiver failing 5 times: every event once per webhook-id, in each contact's order", async () => {
    let failures = 5
    const flaky = await receiver(() => (failures-- > 0 ? 503 : 200))
    const destination = await createDestination(flaky.url(), ["order.*"])
    const contacts = [randomUUID(), randomUUID(), randomUUID()]
    const sent = new Map<string, Array<number>>(contacts.map((contact) => [contact, []]))
    for (let n = 0; n < 10; n++) {
      for (const contact of contacts) {
        await emit(`order.step`, contact, { n })
        sent.get(contact)!.push(n)
      }
    }
    const succeeded = () => new Set(flaky.hits.filter((_, index) => index >= 5).map((hit) => hit.headers["webhook-id"]))
    await waitFor(async () => expect(succeeded().size).toBe(30))
    // Every success is a different webhook-id: no event was delivered twice after it succeeded.
    const successes = flaky.hits.slice(5)
    expect(successes).toHaveLength(30)
    for (const contact of contacts) {
      const order = successes.filter((hit) => hit.json.data.contactId === contact).map((hit) => hit.json.data.data.n)
      expect(order).toEqual(sent.get(contact))
    }
    // A retried delivery keeps its webhook-id: the failed attempts carried ids that later succeeded.
    for (const hit of flaky.hits.slice(0, 5)) expect(succeeded().has(hit.headers["webhook-id"])).toBe(true)
    const log = await waitFor(async () => {
      const rows = await deliveries(destination.id)
      expect(rows.filter((row) => row.status === "succeeded")).toHaveLength(30)
      return rows
    })
    expect(log.reduce((sum, row) => sum + row.attempts, 0)).toBe(35)
    expect((await call("GET", `/destinations/${destination.id}`)).json.consecutiveFailures).toBe(0)
    // A redelivered OUT message (same event id) records and sends nothing new.
    const event = await emit("order.again", contacts[0]!)
    await waitFor(async () => expect(flaky.hits.length).toBe(36))
    await js.publish(`${stack.natsPrefix}.out.${project.id}.order.again`, JSON.stringify(event), { msgID: randomUUID() })
    await sleep(500)
    expect(flaky.hits).toHaveLength(36)
  }, 120_000)

  it("a blackholed endpoint does not delay another destination's deliveries", async () => {
    const hole = await receiver(() => null)
    const healthy = await receiver()
    const holeDestination = await createDestination(hole.url(), ["burst.*"])
    await createDestination(healthy.url(), ["burst.*"])
    const started = Date.now()
    for (let n = 0; n < 40; n++) await emit("burst.tick", randomUUID(), { n })
    await waitFor(async () => expect(healthy.hits.length).toBe(40))
    // Every one arrived before the blackhole's first attempts could time out (20 s each, 16 at a time):
    // the healthy destination never waited behind them.
    expect(Math.max(...healthy.hits.map((hit) => hit.at)) - started).toBeLessThan(20_000)
    await waitFor(async () => expect(hole.hits.length).toBeGreaterThan(0))
    const holeLog = await deliveries(holeDestination.id)
    expect(holeLog.filter((row) => row.status === "succeeded" || row.status === "failed")).toEqual([])
    await call("PATCH", `/destinations/${holeDestination.id}`, { enabled: false })
  }, 120_000)

  it("a blackholed endpoint with every slot taken does not delay another destination on the same host and port", async () => {
    // One server, two paths: the blackhole's attempts in flight (as many as the HTTP agent's former cap of 64
    // sockets per host) must not hold the sockets the healthy destination needs.
    const shared = await receiver((hit) => (hit.path === "/hole" ? null : 200))
    const holeDestination = await createDestination(shared.url("/hole"), ["samehost.hole"])
    const healthy = await createDestination(shared.url("/ok"), ["samehost.ok"])
    const hits = (path: string) => shared.hits.filter((hit) => hit.path === path)
    for (let n = 0; n < 70; n++) await emit("samehost.hole", randomUUID(), { n })
    // Every slot of the blackhole is taken (DESTINATION_CONCURRENCY, 64 by default), then the healthy ones come.
    await waitFor(async () => expect(hits("/hole")).toHaveLength(64))
    const started = Date.now()
    for (let n = 0; n < 20; n++) await emit("samehost.ok", randomUUID(), { n })
    await waitFor(async () => expect(hits("/ok")).toHaveLength(20))
    // All arrived well before the blackhole's attempts time out (20 s after they started, just before
    // `started`), each at its first attempt: none waited in the HTTP agent for a socket the blackhole holds.
    expect(Math.max(...hits("/ok").map((hit) => hit.at)) - started).toBeLessThan(10_000)
    const log = await waitFor(async () => {
      const rows = await deliveries(healthy.id)
      expect(rows.filter((row) => row.status === "succeeded")).toHaveLength(20)
      return rows
    })
    expect(log.map((row) => row.attempts)).toEqual(Array.from({ length: 20 }, () => 1))
    await call("PATCH", `/destinations/${holeDestination.id}`, { enabled: false })
  }, 120_000)

  it("replays one delivery (same webhook-id) and a time range", async () => {
    const target = await receiver()
    const destination = await createDestination(target.url(), ["replay.*"])
    const before = new Date(Date.now() - 1000).toISOString()
    const contact = randomUUID()
    for (let n = 0; n < 3; n++) await emit("replay.it", contact, { n })
    await waitFor(async () => expect(target.hits.length).toBe(3))
    const after = new Date(Date.now() + 1000).toISOString()
    const first = target.hits[0]!

    const one = await call("POST", `/destinations/${destination.id}/deliveries/${first.headers["webhook-id"]}/replay`)
    expect(one.status, one.text).toBe(202)
    expect(one.json).toMatchObject({ id: first.headers["webhook-id"], status: "pending", replays: 1 })
    await waitFor(async () => expect(target.hits.length).toBe(4))
    expect(target.hits[3]!.headers["webhook-id"]).toBe(first.headers["webhook-id"])
    expect(target.hits[3]!.body).toBe(first.body)

    const range = await call("POST", `/destinations/${destination.id}/replay`, { from: before, to: after })
    expect(range.status, range.text).toBe(202)
    expect(range.json).toEqual({ replayed: 3 })
    await waitFor(async () => expect(target.hits.length).toBe(7))
    expect(target.hits.slice(4).map((hit) => hit.json.data.data.n)).toEqual([0, 1, 2])
    expect((await call("POST", `/destinations/${destination.id}/replay`, { from: after, to: before })).status).toBe(422)
    expect((await call("POST", `/destinations/${destination.id}/deliveries/${randomUUID()}/replay`)).status).toBe(404)
  }, 120_000)

  it("sends a test event, and signs with both secrets during a rotation's overlap", async () => {
    const target = await receiver()
    const destination = await createDestination(target.url(), ["rotate.*"])
    const tested = await call("POST", `/destinations/${destination.id}/test`)
    expect(tested.status, tested.text).toBe(200)
    expect(tested.json).toMatchObject({
      eventType: "destination.test",
      status: "succeeded",
      lastStatusCode: 200,
      attempts: 1,
      latencyMs: expect.any(Number)
    })
    expect(target.hits[0]!.json.type).toBe("destination.test")
    expect(verified(destination.secret, target.hits[0]!)).toBe(true)

    const rotated = await call("POST", `/destinations/${destination.id}/rotate-secret`, {})
    expect(rotated.status, rotated.text).toBe(200)
    expect(rotated.json.secret).toMatch(/^whsec_/)
    expect(rotated.json.secret).not.toBe(destination.secret)
    expect(Date.parse(rotated.json.previousSecretExpiresAt) - Date.now()).toBeGreaterThan(86_000_000)
    await emit("rotate.one", randomUUID())
    await waitFor(async () => expect(target.hits.length).toBe(2))
    const during = target.hits[1]!
    expect(String(during.headers["webhook-signature"]).split(" ")).toHaveLength(2)
    expect(verified(rotated.json.secret, during)).toBe(true)
    expect(verified(destination.secret, during)).toBe(true)

    // Overlap 0: the old secret stops at once.
    const again = await call("POST", `/destinations/${destination.id}/rotate-secret`, { overlapSeconds: 0 })
    expect(again.json.previousSecretExpiresAt).toBeNull()
    await emit("rotate.two", randomUUID())
    await waitFor(async () => expect(target.hits.length).toBe(3))
    expect(verified(again.json.secret, target.hits[2]!)).toBe(true)
    expect(verified(rotated.json.secret, target.hits[2]!)).toBe(false)
    expect((await call("POST", `/destinations/${destination.id}/rotate-secret`, { overlapSeconds: -1 })).status).toBe(422)
  }, 120_000)

  it("disables a destination after a run of failures, and re-enabling resets it", async () => {
    let failing = true
    const down = await receiver(() => (failing ? 500 : 200))
    const destination = await createDestination(down.url(), ["down.*"])
    for (let n = 0; n < 3; n++) await emit("down.event", randomUUID(), { n })
    const disabled = await waitFor(async () => {
      const got = await call("GET", `/destinations/${destination.id}`)
      expect(got.json.enabled).toBe(false)
      return got.json
    })
    expect(disabled).toMatchObject({ disabledReason: "failures", disabledAt: expect.any(String) })
    // The 12th failure in a row disabled it (attempts already in flight then may add theirs).
    expect(disabled.consecutiveFailures).toBeGreaterThanOrEqual(12)
    expect(disabled.consecutiveFailures).toBeLessThan(12 + 3)
    // Attempts claimed before it was disabled may still arrive; then none.
    await sleep(1_500)
    const attempts = down.hits.length
    await sleep(1_000)
    expect(down.hits.length).toBe(attempts)

    failing = false
    const enabled = await call("PATCH", `/destinations/${destination.id}`, { enabled: true })
    expect(enabled.json).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null, consecutiveFailures: 0 })
    await waitFor(async () => expect((await deliveries(destination.id, "&status=succeeded")).length).toBe(3))
  }, 120_000)

  it("answers validation errors and 404 for another project's destinations", async () => {
    const bad = await call("POST", "/destinations", { url: "ftp://x", events: [] })
    expect(bad.status).toBe(422)
    expect(bad.json.error.code).toBe("VALIDATION_ERROR")
    expect(bad.json.error.errors.map((error: { field: string }) => error.field).sort()).toEqual(["events", "url"])
    const badPattern = await call("POST", "/destinations", { url: "https://example.com/h", events: ["email.**", "a..b"] })
    expect(badPattern.status).toBe(422)
    expect((await call("POST", "/destinations", { url: "https://user:pw@example.com/h", events: ["*"] })).status).toBe(422)
    expect((await call("PATCH", `/destinations/${randomUUID()}`, { enabled: true })).status).toBe(404)

    const mine = await createDestination("https://example.com/hook", ["*"])
    const key = other.secretKey
    for (
      const [method, path, body] of [
        ["GET", `/destinations/${mine.id}`],
        ["PATCH", `/destinations/${mine.id}`, { enabled: false }],
        ["DELETE", `/destinations/${mine.id}`],
        ["POST", `/destinations/${mine.id}/rotate-secret`, {}],
        ["POST", `/destinations/${mine.id}/test`],
        ["GET", `/destinations/${mine.id}/deliveries`],
        ["POST", `/destinations/${mine.id}/replay`, { from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z" }],
        ["POST", `/destinations/${mine.id}/deliveries/${randomUUID()}/replay`],
        ["GET", "/destinations/not-a-uuid"]
      ] as const
    ) {
      const answered = await call(method, path, body, key)
      expect(answered.status, `${method} ${path}`).toBe(404)
    }
    expect((await call("GET", "/destinations", undefined, key)).json.data).toEqual([])
    expect((await call("GET", `/destinations/${mine.id}/deliveries?cursor=nope`)).status).toBe(400)
    expect((await call("DELETE", `/destinations/${mine.id}`)).json).toEqual({ success: true })
    expect((await call("GET", `/destinations/${mine.id}`)).status).toBe(404)
  }, 120_000)

  // Last: the second worker shares the consumer from here on.
  it("with two workers sharing the consumer, a contact's deliveries never overlap and arrive in recorded order", async () => {
    const second = await stack.start("worker")
    try {
      const open = new Map<string, number>()
      let overlaps = 0
      const target = await receiver(async (hit) => {
        const contact = hit.json.data.contactId as string
        if ((open.get(contact) ?? 0) > 0) overlaps++
        open.set(contact, (open.get(contact) ?? 0) + 1)
        await sleep(10)
        open.set(contact, open.get(contact)! - 1)
        return 200
      })
      const destination = await createDestination(target.url(), ["pair.*"])
      const contacts = Array.from({ length: 6 }, () => randomUUID())
      // Every contact's events published at once: the two workers take their batches at the same time.
      const total = contacts.length * 15
      await Promise.all(Array.from({ length: 15 }, (_, n) => contacts.map((contact) => emit("pair.step", contact, { n }))).flat())
      await waitFor(async () => expect(target.hits.length).toBe(total))
      await sleep(300)
      expect(new Set(target.hits.map((hit) => hit.headers["webhook-id"])).size).toBe(total)
      expect(target.hits).toHaveLength(total)
      expect(overlaps).toBe(0)
      // Each contact's deliveries arrived one after another in the order they were recorded.
      const recorded = await stack.query<{ id: string; contact_id: string }>(
        "SELECT id, contact_id FROM destination_deliveries WHERE destination_id = $1 ORDER BY seq",
        [destination.id]
      )
      for (const contact of contacts) {
        const arrived = target.hits.filter((hit) => hit.json.data.contactId === contact).map((hit) => hit.headers["webhook-id"])
        expect(arrived).toEqual(recorded.filter((row) => row.contact_id === contact).map((row) => row.id))
      }
    } finally {
      await second.stop()
    }
  }, 120_000)
})
