import { describe, expect, it } from "vitest"
import { eventually, readStream } from "../support/nats.ts"
import { request, withStack, type Service, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack
let api: Service
let project: TestProject

const track = (body: unknown, headers: Record<string, string> = {}, path = "/v1/track") =>
  request(api.url, "POST", path, { key: project.publicKey, body, headers })
const secret = (method: string, path: string, body?: unknown) => request(api.url, method, path, { key: project.secretKey, body })

withStack("all", (context) => ({ stack, api, project } = context))

describe("POST /v1/track", () => {
  it("creates the contact subscribed, answers the ids, and keeps non-persistent values off the contact", async () => {
    const res = await track({
      email: "Track@Example.com",
      event: "signed_up",
      data: { plan: "pro", coupon: { value: "X1", persistent: false } }
    })
    expect(res.status).toBe(200)
    expect(res.json).toEqual({
      success: true,
      data: { contact: expect.any(String), event: expect.stringMatching(/^[0-9a-f-]{36}$/), timestamp: expect.any(String) }
    })
    // The event went to the project's ingest subject of stream IN before we were answered (a worker
    // splits it into its contact's lane afterwards).
    const subject = `${stack.natsPrefix}.ingest.*.${project.id}.track`
    const envelopes = await readStream(`${stack.natsPrefix}_IN`, subject)
    const published = envelopes.flatMap((m) => m.data.events).filter((e: { eventId: string }) => e.eventId === res.json.data.event)
    expect(published).toHaveLength(1)

    // The actor stores it and applies the contact's data, in stream order.
    const stored = await eventually(async () => {
      const events = await secret("GET", `/events?name=signed_up`)
      expect(events.json.data).toHaveLength(1)
      return events.json.data[0]
    })
    expect(stored).toMatchObject({
      id: res.json.data.event,
      name: "signed_up",
      contactId: res.json.data.contact,
      email: "track@example.com",
      data: { plan: "pro", coupon: "X1" }
    })
    const contact = await secret("GET", `/contacts/${res.json.data.contact}`)
    expect(contact.json).toMatchObject({ email: "track@example.com", subscribed: true, data: { plan: "pro" } })
    expect(contact.json.data.coupon).toBeUndefined()
  })

  it("keeps an existing contact's subscription unless subscribed is passed", async () => {
    const created = await secret("POST", "/contacts", { email: "off@example.com", subscribed: false })
    await track({ email: "off@example.com", event: "visited" })
    await eventually(async () => expect((await secret("GET", `/events/contact/${created.json.id}`)).json.data).toHaveLength(1))
    expect((await secret("GET", `/contacts/${created.json.id}`)).json.subscribed).toBe(false)
    await track({ email: "off@example.com", event: "visited", subscribed: true })
    await eventually(async () => expect((await secret("GET", `/contacts/${created.json.id}`)).json.subscribed).toBe(true))
  })

  it("works on the /events/track alias", async () => {
    expect((await track({ email: "alias@example.com", event: "x" }, {}, "/events/track")).status).toBe(200)
  })

  it.each([
    "email.opened",
    "Email.Sent",
    "contact.subscribed",
    "contact.unsubscribed",
    "segment.pro-users.entry",
    "segment.pro-users.exit"
  ])("rejects the reserved event name %s with 422 reserved_event", async (event) => {
    const res = await track({ email: "r@example.com", event })
    expect(res.status).toBe(422)
    expect(res.json.error.code).toBe("VALIDATION_ERROR")
    expect(res.json.error.errors).toEqual([expect.objectContaining({ field: "event", code: "reserved_event" })])
  })

  it("refuses NUL characters, which Postgres cannot store, before accepting the event", async () => {
    expect((await track({ email: "nul@example.com", event: "x", data: { k: "a\u0000b" } })).status).toBe(422)
    expect((await track({ email: "nul@example.com", event: "x\u0000" })).status).toBe(422)
    expect((await track({ email: "n\u0000ul@example.com", event: "x" })).status).toBe(422)
  })

  it("validates email and event", async () => {
    const res = await track({ email: "nope", event: "" })
    expect(res.status).toBe(422)
    expect(res.json.error.errors.map((e: { field: string }) => e.field).sort()).toEqual(["email", "event"])
    const missing = await track({})
    expect(missing.status).toBe(422)
    expect(missing.json.error.errors.map((e: { code: string }) => e.code)).toEqual(["required", "required"])
  })
})

describe("Idempotency-Key", () => {
  it("answers a repeat with 409 IDEMPOTENCY_KEY_REUSED and the original request's details", async () => {
    const first = await track({ email: "idem@example.com", event: "paid" }, { "Idempotency-Key": "order-1" })
    expect(first.status).toBe(200)
    const repeat = await track({ email: "idem@example.com", event: "paid" }, { "Idempotency-Key": "order-1" })
    expect(repeat.status).toBe(409)
    expect(repeat.json.error.code).toBe("IDEMPOTENCY_KEY_REUSED")
    expect(repeat.json.error.details).toEqual({
      key: "order-1",
      originalRequest: "POST /v1/track",
      originalRequestAt: expect.any(String),
      originalStatusCode: 200,
      inProgress: false,
      // The first answer, for a client that lost it.
      originalResponse: first.json
    })
  })

  it("performs a retry whose first attempt died before completing its key, with the same event id", async () => {
    const first = await track({ email: "crashed@example.com", event: "crash_once" }, { "Idempotency-Key": "crash-1" })
    expect(first.status).toBe(200)
    // As a process killed after the PubAck but before recording the outcome leaves the key: in
    // progress, its lease run out.
    await stack.query(
      "UPDATE idempotency_keys SET status_code = NULL, response = NULL, locked_until = now() - interval '1 second' WHERE key = 'crash-1'"
    )
    const retried = await track({ email: "crashed@example.com", event: "crash_once" }, { "Idempotency-Key": "crash-1" })
    expect(retried.status).toBe(200)
    expect(retried.json.data.event).toBe(first.json.data.event)
    const repeat = await track({ email: "crashed@example.com", event: "crash_once" }, { "Idempotency-Key": "crash-1" })
    expect(repeat.status).toBe(409)
    expect(repeat.json.error.details).toMatchObject({ inProgress: false, originalResponse: retried.json })
    // Published twice, stored once.
    const marker = await track({ email: "crashed@example.com", event: "crash_marker" })
    await eventually(async () => expect((await secret("GET", "/events?name=crash_marker")).json.data).toHaveLength(1))
    expect(marker.status).toBe(200)
    expect((await secret("GET", "/events?name=crash_once")).json.data.map((e: { id: string }) => e.id)).toEqual([first.json.data.event])
  })

  it("lets exactly one of many concurrent duplicates through", async () => {
    const results = await Promise.all(
      Array.from({ length: 12 }, () => track({ email: "race@example.com", event: "race" }, { "Idempotency-Key": "race-key" }))
    )
    const statuses = results.map((r) => r.status).sort()
    expect(statuses.filter((s) => s === 200)).toHaveLength(1)
    expect(statuses.filter((s) => s === 409)).toHaveLength(11)
    const ids = results.filter((r) => r.status === 200).map((r) => r.json.data.event)
    await eventually(async () => {
      const events = await secret("GET", "/events?name=race")
      expect(events.json.data.map((e: { id: string }) => e.id)).toEqual(ids)
    })
  })

  it("is scoped to the project", async () => {
    const other = await stack.createProject("Other")
    await track({ email: "scope@example.com", event: "x" }, { "Idempotency-Key": "shared" })
    const res = await request(api.url, "POST", "/v1/track", {
      key: other.publicKey,
      body: { email: "scope@example.com", event: "x" },
      headers: { "Idempotency-Key": "shared" }
    })
    expect(res.status).toBe(200)
  })

  it("releases the key when the request fails with a 4xx", async () => {
    const bad = await track({ email: "bad", event: "x" }, { "Idempotency-Key": "retry-me" })
    expect(bad.status).toBe(422)
    const good = await track({ email: "good@example.com", event: "x" }, { "Idempotency-Key": "retry-me" })
    expect(good.status).toBe(200)
  })

  it("rejects keys that are too long or not printable ASCII with 400 INVALID_IDEMPOTENCY_KEY (the reference's status)", async () => {
    for (const key of ["x".repeat(256), "naïve", "tab\there"]) {
      const res = await track({ email: "k@example.com", event: "x" }, { "Idempotency-Key": key })
      expect(res.status, key).toBe(400)
      expect(res.json.error).toMatchObject({ code: "INVALID_IDEMPOTENCY_KEY", statusCode: 400 })
    }
  })

  it("expires keys after the configured time", async () => {
    await track({ email: "exp@example.com", event: "x" }, { "Idempotency-Key": "expiring" })
    await stack.query("UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = 'expiring'")
    expect((await track({ email: "exp@example.com", event: "x" }, { "Idempotency-Key": "expiring" })).status).toBe(200)
  })
})
