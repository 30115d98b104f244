import { jetstream } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { uuidv7 } from "../../src/domain/ids.ts"
import { eventually, laneSubject, readStream } from "../support/nats.ts"
import { createStack, request, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack
let project: TestProject

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
  project = await stack.createProject()
})
afterAll(async () => {
  await stack?.stop()
})

const contactMessages = async () =>
  (await readStream(`${stack.natsPrefix}_IN`, `${stack.natsPrefix}.lane.*.${project.id}.*.contact`)).map((m) => m.data)

describe("contact changes on JetStream", () => {
  it("publishes create, update and delete in order after the commit", async () => {
    const api = await stack.start("all")
    const created = await request(api.url, "POST", "/contacts", { key: project.secretKey, body: { email: "order@example.com" } })
    const id = created.json.id
    await request(api.url, "PATCH", `/contacts/${id}`, { key: project.secretKey, body: { subscribed: false, data: { a: 1 } } })
    await request(api.url, "DELETE", `/contacts/${id}`, { key: project.secretKey })
    const messages = await eventually(async () => {
      const found = (await contactMessages()).filter((m) => m.contactId === id)
      expect(found).toHaveLength(3)
      return found
    })
    expect(messages.map((m) => m.type)).toEqual(["contact.created", "contact.updated", "contact.deleted"])
    expect(messages[1]).toMatchObject({ previousSubscribed: true, setKeys: ["a"], contact: { subscribed: false } })
    // Messages say what changed, never carry the contact's whole data (it would make them unbounded).
    expect(messages[1].contact.data).toBeUndefined()
    await api.stop()
  })

  it("loses nothing when the api process is killed mid-work, and publishes nothing twice", async () => {
    const api = await stack.start("api")
    const before = (await contactMessages()).length
    const writes = 400
    let accepted = 0
    let killed: Promise<void> | undefined
    const inFlight = Array.from(
      { length: writes },
      (_, i) =>
        request(api.url, "POST", "/contacts", { key: project.secretKey, body: { email: `crash${i}@example.com` } })
          .then((res) => {
            if (res.status === 201) accepted++
            // Kill it hard while requests and publishes are still in flight.
            if (accepted === 100) killed = api.stop("SIGKILL")
          })
          .catch(() => undefined)
    )
    await Promise.all(inFlight)
    await killed
    expect(accepted).toBeGreaterThanOrEqual(100)
    expect(accepted).toBeLessThan(writes)
    const { committed } = (await stack.query<{ committed: number }>(
      "SELECT count(*)::int AS committed FROM contacts WHERE project_id = $1 AND email LIKE 'crash%'",
      [project.id]
    ))[0]!
    expect(committed).toBeGreaterThanOrEqual(accepted)
    const { pending } = (await stack.query<{ pending: number }>("SELECT count(*)::int AS pending FROM outbox"))[0]!
    console.info(`killed with ${accepted} answered, ${committed} committed, ${pending} not yet published`)

    // A new process relays whatever the dead one left in the outbox.
    const next = await stack.start("worker")
    await eventually(async () => {
      const messages = (await contactMessages()).slice(before)
      const created = messages.filter((m) => m.type === "contact.created" && String(m.contact.email).startsWith("crash"))
      expect(created).toHaveLength(committed)
      expect(new Set(created.map((m) => m.contactId)).size).toBe(committed)
    }, 20_000)
    // The relay deletes the rows after JetStream acknowledged them: seen in the stream is not gone yet.
    await eventually(async () => {
      const { left } = (await stack.query<{ left: number }>("SELECT count(*)::int AS left FROM outbox"))[0]!
      expect(left).toBe(0)
    })
    await next.stop()
  })

  it("does not duplicate a message that was published but not yet deleted when the relay died", async () => {
    // Simulate the crash window: the message is on the stream and still in the outbox.
    const id = uuidv7()
    const subject = laneSubject(stack.natsPrefix, project.id, id, "contact")
    const payload = { kind: "contact", type: "contact.updated", projectId: project.id, contactId: id, probe: "dedupe" }
    const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" })
    await jetstream(nc).publish(subject, JSON.stringify(payload), { msgID: id })
    await nc.close()
    await stack.query("INSERT INTO outbox (id, subject, payload) VALUES ($1, $2, $3::jsonb)", [id, subject, JSON.stringify(payload)])

    const worker = await stack.start("worker")
    await eventually(async () => {
      const { left } = (await stack.query<{ left: number }>("SELECT count(*)::int AS left FROM outbox"))[0]!
      expect(left).toBe(0)
    })
    const copies = (await readStream(`${stack.natsPrefix}_IN`, subject)).filter((m) => m.data.probe === "dedupe")
    expect(copies).toHaveLength(1)
    await worker.stop()
  })
})
