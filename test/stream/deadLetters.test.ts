/**
 * One project's data never stalls the shared outbox relay: a row NATS refuses is set aside as a dead
 * letter with its reason, and every row behind it (of any project) is published exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { uuidv7 } from "../../src/domain/ids.ts"
import { eventually, laneSubject, readStream } from "../support/nats.ts"
import { createStack, request, type Service, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack
let api: Service
let noisy: TestProject
let quiet: TestProject

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
  noisy = await stack.createProject("noisy")
  quiet = await stack.createProject("quiet")
  api = await stack.start("all")
})
afterAll(async () => {
  await stack?.stop()
})

const count = async (text: string, params: Array<unknown> = []) => (await stack.query<{ n: number }>(text, params))[0]!.n

describe("outbox relay", () => {
  it("sets aside a row over NATS' max payload and publishes everything behind it once", async () => {
    // A row as a bug (or an old release) could leave it: 2 MB, more than the server accepts.
    const poisonId = uuidv7()
    const subject = laneSubject(stack.natsPrefix, noisy.id, undefined, "contact")
    await stack.query("INSERT INTO outbox (id, subject, payload) VALUES ($1, $2, $3::jsonb)", [
      poisonId,
      subject,
      JSON.stringify({ kind: "contact", type: "contact.updated", projectId: noisy.id, blob: "x".repeat(2 * 1024 * 1024) })
    ])
    // Behind it, another project's ordinary traffic: a contact that unsubscribes once.
    const created = await request(api.url, "POST", "/contacts", { key: quiet.secretKey, body: { email: "behind@example.com" } })
    expect(created.status).toBe(201)
    const patched = await request(api.url, "PATCH", `/contacts/${created.json.id}`, { key: quiet.secretKey, body: { subscribed: false } })
    expect(patched.status).toBe(200)

    await eventually(async () => {
      expect(await count("SELECT count(*)::int AS n FROM outbox")).toBe(0)
    }, 15_000)
    const [letter] = await stack.query<{ source: string; subject: string; error: string; project_id: string }>(
      "SELECT source, subject, error, project_id FROM dead_letters WHERE source = 'outbox'"
    )
    expect(letter).toMatchObject({ source: "outbox", subject, project_id: noisy.id })
    expect(letter!.error).toMatch(/max_payload/)

    // Exactly one contact.unsubscribed, however long the relay kept trying.
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const out = await readStream(`${stack.natsPrefix}_OUT`, `${stack.natsPrefix}.out.${quiet.id}.contact.unsubscribed`)
    expect(out).toHaveLength(1)
    const inMessages = await readStream(`${stack.natsPrefix}_IN`, `${stack.natsPrefix}.lane.*.${quiet.id}.*.contact`)
    expect(inMessages.filter((m) => m.data.contactId === created.json.id).map((m) => m.data.type))
      .toEqual(["contact.created", "contact.updated"])
  })
})

describe("contact data limit", () => {
  const kib = (n: number) => "x".repeat(n * 1024)

  it("refuses a write that would grow a contact past 256 KiB, with the limit, and lets it shrink", async () => {
    const email = "big@example.com"
    const first = await request(api.url, "POST", "/contacts", { key: noisy.secretKey, body: { email, data: { a: kib(200) } } })
    expect(first.status).toBe(201)
    const grow = await request(api.url, "POST", "/contacts", { key: noisy.secretKey, body: { email, data: { b: kib(100) } } })
    expect(grow.status).toBe(422)
    expect(grow.json.error).toMatchObject({ code: "VALIDATION_ERROR", details: { limitBytes: 262144 } })
    expect(grow.json.error.errors[0]).toMatchObject({ field: "data", code: "data_too_large" })
    const patch = await request(api.url, "PATCH", `/contacts/${first.json.id}`, { key: noisy.secretKey, body: { data: { b: kib(100) } } })
    expect(patch.status).toBe(422)
    const send = await request(api.url, "PATCH", `/contacts/${first.json.id}`, {
      key: noisy.secretKey,
      body: { data: { a: null, b: kib(100) } }
    })
    expect(send.status).toBe(200)
    expect(Object.keys(send.json.data)).toEqual(["b"])
  })

  it("records a tracked event whose data would not fit, and sets its data change aside as a dead letter", async () => {
    const email = "tracked-big@example.com"
    const created = await request(api.url, "POST", "/contacts", { key: noisy.secretKey, body: { email, data: { a: kib(200) } } })
    const tracked = await request(api.url, "POST", "/v1/track", {
      key: noisy.publicKey,
      body: { email, event: "grew", subscribed: false, data: { b: kib(100) } }
    })
    expect(tracked.status).toBe(200)
    await eventually(async () => {
      expect(await count("SELECT count(*)::int AS n FROM events WHERE id = $1", [tracked.json.data.event])).toBe(1)
      expect(await count("SELECT count(*)::int AS n FROM dead_letters WHERE source = 'actor' AND project_id = $1", [noisy.id])).toBe(1)
    })
    const contact = await request(api.url, "GET", `/contacts/${created.json.id}`, { key: noisy.secretKey })
    // The data change waits in the dead letter; the subscription change was applied.
    expect(Object.keys(contact.json.data)).toEqual(["a"])
    expect(contact.json.subscribed).toBe(false)
    const [letter] = await stack.query<{ error: string; payload: string }>(
      "SELECT error, payload FROM dead_letters WHERE source = 'actor' AND project_id = $1",
      [noisy.id]
    )
    expect(letter!.error).toMatch(/256 KiB/)
    expect(JSON.parse(letter!.payload).events[0]).toMatchObject({ eventId: tracked.json.data.event, subscribed: null })
  })
})

describe("GET/POST/DELETE /dead-letters", () => {
  it("lists the project's letters only, replays one in order once the cause is fixed, and deletes", async () => {
    const email = "replay@example.com"
    const created = await request(api.url, "POST", "/contacts", {
      key: quiet.secretKey,
      body: { email, data: { a: "x".repeat(200 * 1024) } }
    })
    const tracked = await request(api.url, "POST", "/v1/track", {
      key: quiet.publicKey,
      body: { email, event: "grew", data: { b: "y".repeat(100 * 1024) } }
    })
    const letter = await eventually(async () => {
      const list = await request(api.url, "GET", "/dead-letters", { key: quiet.secretKey })
      expect(list.status).toBe(200)
      const found = list.json.data.find((item: any) => item.source === "actor")
      expect(found).toBeDefined()
      return found
    })
    expect(letter.summary).toMatchObject({ kind: "track", name: "grew", email, events: 1 })
    expect(letter.summary.bytes).toBeGreaterThan(100 * 1024)
    expect(letter.reason).toMatch(/256 KiB/)

    // Another project sees none of it.
    const foreign = await request(api.url, "GET", "/dead-letters", { key: noisy.secretKey })
    expect(foreign.json.data.map((item: any) => item.id)).not.toContain(letter.id)
    expect((await request(api.url, "GET", `/dead-letters/${letter.id}`, { key: noisy.secretKey })).status).toBe(404)
    expect((await request(api.url, "POST", `/dead-letters/${letter.id}/replay`, { key: noisy.secretKey })).status).toBe(404)
    expect((await request(api.url, "GET", `/dead-letters/${letter.id}`, { key: quiet.secretKey })).json.payload.events[0].eventId)
      .toBe(tracked.json.data.event)
    expect((await request(api.url, "GET", "/dead-letters?cursor=nope", { key: quiet.secretKey })).status).toBe(400)

    // Make room, then replay: the data change applies, the event is not stored twice.
    await request(api.url, "PATCH", `/contacts/${created.json.id}`, { key: quiet.secretKey, body: { data: { a: null } } })
    const replayed = await request(api.url, "POST", `/dead-letters/${letter.id}/replay`, { key: quiet.secretKey })
    expect(replayed.status).toBe(200)
    expect(replayed.json).toMatchObject({ id: letter.id, replays: 1 })
    await eventually(async () => {
      const contact = await request(api.url, "GET", `/contacts/${created.json.id}`, { key: quiet.secretKey })
      expect(Object.keys(contact.json.data)).toEqual(["b"])
    })
    expect(await count("SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND name = 'grew'", [quiet.id])).toBe(1)
    expect((await request(api.url, "GET", "/dead-letters?replayed=false", { key: quiet.secretKey })).json.data
      .map((item: any) => item.id)).not.toContain(letter.id)

    expect((await request(api.url, "DELETE", `/dead-letters/${letter.id}`, { key: quiet.secretKey })).status).toBe(200)
    expect((await request(api.url, "GET", `/dead-letters/${letter.id}`, { key: quiet.secretKey })).status).toBe(404)
  })
})
