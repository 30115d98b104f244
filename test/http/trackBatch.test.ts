import { spawn } from "node:child_process"
import { rm } from "node:fs/promises"
import { describe, expect, it } from "vitest"
import { eventually, freePort, NATS_SERVER } from "../support/nats.ts"
import { request, withStack, type Service, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack
let api: Service
let project: TestProject

const batch = (body: unknown, headers: Record<string, string> = {}, key = project.publicKey) =>
  request(api.url, "POST", "/v1/track/batch", { key, body, headers })
const raw = (rawBody: string) => request(api.url, "POST", "/v1/track/batch", { key: project.publicKey, rawBody })
const secret = (method: string, path: string, body?: unknown) => request(api.url, method, path, { key: project.secretKey, body })

/** The stored events of one name, oldest first. */
const eventsNamed = async (name: string): Promise<Array<{ id: string; contactId: string; email: string; data: Record<string, unknown> }>> =>
  (await secret("GET", `/events?name=${encodeURIComponent(name)}&limit=100`)).json.data.reverse()

const contactsMatching = async (
  search: string
): Promise<Array<{ id: string; email: string; data: Record<string, unknown>; subscribed: boolean }>> =>
  (await secret("GET", `/contacts?search=${encodeURIComponent(search)}&limit=100`)).json.data

const refusedWith = (response: Awaited<ReturnType<typeof request>>, status: number, code: string) => {
  expect(response.status, response.text).toBe(status)
  expect(response.json).toMatchObject({ success: false, error: { code, statusCode: status, requestId: expect.any(String) } })
}

withStack("all", (context) => ({ stack, api, project } = context))

describe("POST /v1/track/batch refuses", () => {
  const one = { events: [{ email: "refused@example.com", event: "refused" }] }

  it("a request without a key, or with the secret key, with 401 INVALID_API_KEY", async () => {
    refusedWith(await request(api.url, "POST", "/v1/track/batch", { body: one }), 401, "INVALID_API_KEY")
    refusedWith(await batch(one, {}, project.secretKey), 401, "INVALID_API_KEY")
  })

  it("an empty batch and one of 501 events with 422 naming events", async () => {
    for (const events of [[], Array.from({ length: 501 }, (_, i) => ({ email: `e${i}@example.com`, event: "too_many" }))]) {
      const response = await batch({ events })
      refusedWith(response, 422, "VALIDATION_ERROR")
      expect(response.json.error.errors).toEqual([
        expect.objectContaining({ field: "events", code: events.length === 0 ? "too_small" : "too_big" })
      ])
    }
    // 500 is allowed.
    const full = await batch({
      events: Array.from({ length: 500 }, (_, i) => ({ email: `full${i % 7}@example.com`, event: "five_hundred" }))
    })
    expect(full.status, full.text).toBe(200)
    expect(full.json.data).toEqual({ accepted: 500, rejected: [] })
  })

  it("a body over 1 MiB with 413 PAYLOAD_TOO_LARGE", async () => {
    const events = Array.from(
      { length: 20 },
      (_, i) => ({ email: `big${i}@example.com`, event: "big", data: { blob: "x".repeat(60 * 1024) } })
    )
    refusedWith(await batch({ events }), 413, "PAYLOAD_TOO_LARGE")
  })

  it("a body that is not { events: [...] } with 422, and malformed JSON with 400", async () => {
    for (const body of [{ events: one.events[0] }, { events: "x" }, { events: null }, {}, one.events, "events"]) {
      refusedWith(await batch(body), 422, "VALIDATION_ERROR")
    }
    refusedWith(await raw('{"events":['), 400, "INVALID_JSON")
    expect(await eventsNamed("refused")).toEqual([])
  })
})

describe("POST /v1/track/batch records", () => {
  it("the good events and lists each bad one by index with the field errors /v1/track gives", async () => {
    const bad = [
      { email: "not-an-email", event: "mixed" },
      { email: "reserved@example.com", event: "email.opened" },
      { email: "nul@example.com", event: "mixed", data: { plan: "a\u0000b" } },
      "not an object",
      { event: "mixed" }
    ]
    const events = [{ email: "good1@example.com", event: "mixed", data: { plan: "pro" } }, ...bad, {
      email: "good2@example.com",
      event: "mixed"
    }]
    const response = await batch({ events })
    expect(response.status, response.text).toBe(200)
    expect(response.json.success).toBe(true)
    expect(response.json.data.accepted).toBe(2)
    const single = await Promise.all(bad.map((body) => request(api.url, "POST", "/v1/track", { key: project.publicKey, body })))
    // Index by index, the errors of the same body sent to /v1/track.
    expect(response.json.data.rejected).toEqual(single.map((res, i) => {
      expect(res.status).toBe(422)
      return { index: i + 1, errors: res.json.error.errors }
    }))
    expect(response.json.data.rejected[1].errors).toEqual([expect.objectContaining({ field: "event", code: "reserved_event" })])
    expect(response.json.data.rejected[4].errors).toEqual([expect.objectContaining({ field: "email", code: "required" })])

    const stored = await eventually(async () => {
      const stored = await eventsNamed("mixed")
      expect(stored).toHaveLength(2)
      return stored
    })
    expect(stored.map((event) => event.email)).toEqual(["good1@example.com", "good2@example.com"])
    expect((await contactsMatching("good1@example.com"))[0]).toMatchObject({ subscribed: true, data: { plan: "pro" } })
    expect(await contactsMatching("reserved@example.com")).toEqual([])
  })

  it("answers 200 with accepted 0 when every event is rejected", async () => {
    const response = await batch({ events: [{ email: "x", event: "all_bad" }, { email: "y@example.com", event: "" }] })
    expect(response.status, response.text).toBe(200)
    expect(response.json.data).toEqual({
      accepted: 0,
      rejected: [
        { index: 0, errors: [expect.objectContaining({ field: "email" })] },
        { index: 1, errors: [expect.objectContaining({ field: "event" })] }
      ]
    })
    // An event nested 5,000 levels deep is one rejected event, not a stack overflow.
    const deep = await raw(`{"events":[${"[".repeat(5_000)}${"]".repeat(5_000)}]}`)
    expect(deep.status, deep.text).toBe(200)
    expect(deep.json.data).toEqual({ accepted: 0, rejected: [{ index: 0, errors: [expect.objectContaining({ field: "body" })] }] })
  })

  it("creates one contact for an email repeated in the batch and applies its events in batch order", async () => {
    const response = await batch({
      events: [
        { email: "Repeat@Example.com", event: "repeat_a", data: { plan: "free", step: 1 } },
        { email: "other-repeat@example.com", event: "repeat_a" },
        { email: "repeat@example.com", event: "repeat_b", data: { plan: "pro" }, subscribed: false },
        { email: " REPEAT@example.com ", event: "repeat_c", data: { plan: "team", step: null } }
      ]
    })
    expect(response.json.data).toEqual({ accepted: 4, rejected: [] })
    await eventually(async () => expect(await eventsNamed("repeat_c")).toHaveLength(1))
    const contacts = await contactsMatching("repeat@example.com")
    expect(contacts.map((contact) => contact.email).sort()).toEqual(["other-repeat@example.com", "repeat@example.com"])
    const repeat = contacts.find((contact) => contact.email === "repeat@example.com")!
    // The last event's data wins, `step` deleted by it; the explicit subscribed: false of the second applied.
    expect(repeat).toMatchObject({ subscribed: false, data: { plan: "team" } })
    expect(repeat.data.step).toBeUndefined()
    const history: Array<string> = (await secret("GET", `/events/contact/${repeat.id}`)).json.data.map((event: { name: string }) =>
      event.name
    )
    expect(history.filter((name) => name.startsWith("repeat_")).sort()).toEqual(["repeat_a", "repeat_b", "repeat_c"])
    expect(history).toContain("contact.unsubscribed")
    expect(
      (await stack.query("SELECT count(*)::int AS n FROM contacts WHERE project_id = $1 AND email = 'repeat@example.com'", [project.id]))[0]
    )
      .toEqual({ n: 1 })
  })
})

describe("POST /v1/track/batch with an Idempotency-Key", () => {
  it("answers a repeat with 409 and the original answer, and records the batch once", async () => {
    const body = {
      events: [{ email: "idem1@example.com", event: "idem_batch" }, { email: "idem2@example.com", event: "idem_batch" }, {
        email: "x",
        event: "idem_batch"
      }]
    }
    const first = await batch(body, { "Idempotency-Key": "batch-1" })
    expect(first.json.data).toMatchObject({ accepted: 2 })
    const repeat = await batch(body, { "Idempotency-Key": "batch-1" })
    refusedWith(repeat, 409, "IDEMPOTENCY_KEY_REUSED")
    expect(repeat.json.error.details).toMatchObject({ originalRequest: "POST /v1/track/batch", originalResponse: first.json })
    await eventually(async () => expect(await eventsNamed("idem_batch")).toHaveLength(2))
  })

  it("performs a retry whose first attempt died before completing its key, with the same event ids: recorded once", async () => {
    const body = { events: [{ email: "crash1@example.com", event: "batch_crash" }, { email: "crash2@example.com", event: "batch_crash" }] }
    expect((await batch(body, { "Idempotency-Key": "batch-crash" })).status).toBe(200)
    const firstIds = (await eventually(async () => {
      const stored = await eventsNamed("batch_crash")
      expect(stored).toHaveLength(2)
      return stored
    })).map((event) => event.id)
    // As a process killed after the PubAcks but before recording the outcome leaves the key.
    await stack.query(
      "UPDATE idempotency_keys SET status_code = NULL, response = NULL, locked_until = now() - interval '1 second' WHERE key = 'batch-crash'"
    )
    const retried = await batch(body, { "Idempotency-Key": "batch-crash" })
    expect(retried.json.data).toEqual({ accepted: 2, rejected: [] })
    // A later event of the same contacts is applied after the retry's: by then the retry was dropped.
    expect(
      (await batch({
        events: [{ email: "crash1@example.com", event: "batch_crash_marker" }, { email: "crash2@example.com", event: "batch_crash_marker" }]
      })).status
    ).toBe(200)
    await eventually(async () => expect(await eventsNamed("batch_crash_marker")).toHaveLength(2))
    expect((await eventsNamed("batch_crash")).map((event) => event.id)).toEqual(firstIds)
  })

  it("gives two batches under different keys different event ids", async () => {
    const body = { events: [{ email: "keys@example.com", event: "two_keys" }] }
    await batch(body, { "Idempotency-Key": "key-a" })
    await batch(body, { "Idempotency-Key": "key-b" })
    await eventually(async () => expect(new Set((await eventsNamed("two_keys")).map((event) => event.id)).size).toBe(2))
  })
})

describe("POST /v1/track/batch without JetStream", () => {
  it.skipIf(!NATS_SERVER)(
    "answers 503 SERVICE_UNAVAILABLE within a bounded time, and the retry with the key succeeds once it is back",
    async () => {
      const port = await freePort()
      const startNats = () =>
        spawn(NATS_SERVER!, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", `/tmp/mailstream-nats-${port}`], { stdio: "ignore" })
      let nats = startNats()
      try {
        await new Promise((resolve) => setTimeout(resolve, 500))
        const own = await stack.start("api", { NATS_URL: `nats://127.0.0.1:${port}` })
        const send = () =>
          request(own.url, "POST", "/v1/track/batch", {
            key: project.publicKey,
            body: { events: [{ email: "down1@example.com", event: "down" }, { email: "down2@example.com", event: "down" }] },
            headers: { "Idempotency-Key": "while-down" }
          })
        nats.kill("SIGKILL")
        const started = Date.now()
        refusedWith(await send(), 503, "SERVICE_UNAVAILABLE")
        expect(Date.now() - started).toBeLessThan(6_000)
        nats = startNats()
        // The 503 released the key: the retry performs the batch.
        await eventually(async () => expect((await send()).json.data).toEqual({ accepted: 2, rejected: [] }), 15_000)
        await own.stop()
      } finally {
        nats.kill("SIGKILL")
        await rm(`/tmp/mailstream-nats-${port}`, { recursive: true, force: true })
      }
    },
    60_000
  )
})
