/** The track path's email → contact id cache stays right across api processes. */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/nats.ts"
import { createStack, request, type Service, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack
let project: TestProject
let api1: Service
let api2: Service

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
  project = await stack.createProject()
  api1 = await stack.start("all")
  api2 = await stack.start("api")
})
afterAll(async () => {
  await stack?.stop()
})

const track = (api: Service, email: string) =>
  request(api.url, "POST", "/v1/track", { key: project.publicKey, body: { email, event: "seen" } })

const eventContact = async (eventId: string) =>
  eventually(async () => {
    const [row] = await stack.query<{ contact_id: string }>("SELECT contact_id FROM events WHERE id = $1", [eventId])
    expect(row).toBeDefined()
    return row!.contact_id
  })

describe("contact id cache", () => {
  it("forgets a renamed contact's old email in every api process", async () => {
    const first = await track(api2, "old@example.com")
    expect(first.status).toBe(200)
    const renamedId = first.json.data.contact
    expect(await eventContact(first.json.data.event)).toBe(renamedId)

    const renamed = await request(api1.url, "PATCH", `/contacts/${renamedId}`, {
      key: project.secretKey,
      body: { email: "new@example.com" }
    })
    expect(renamed.status).toBe(200)

    await eventually(async () => {
      const again = await track(api2, "old@example.com")
      expect(again.status).toBe(200)
      // old@ is a new contact now: the answer and the stored event name the same, new contact.
      expect(again.json.data.contact).not.toBe(renamedId)
      expect(await eventContact(again.json.data.event)).toBe(again.json.data.contact)
    }, 5_000)
  })

  it("forgets a deleted contact in every api process", async () => {
    const first = await track(api2, "gone@example.com")
    const id = first.json.data.contact
    await eventContact(first.json.data.event)
    expect((await request(api1.url, "DELETE", `/contacts/${id}`, { key: project.secretKey })).status).toBe(204)
    // A track racing the invalidation may still name the old id; the actor then re-creates the contact
    // under it, so the answer and the stored event agree either way. Once the invalidation is in, the
    // email resolves afresh: against the database, whatever contact (if any) holds it there.
    await eventually(async () => {
      const again = await track(api2, "gone@example.com")
      const stored = await eventContact(again.json.data.event)
      expect(stored).toBe(again.json.data.contact)
      const [holder] = await stack.query<{ id: string }>("SELECT id FROM contacts WHERE project_id = $1 AND email = 'gone@example.com'", [
        project.id
      ])
      expect(holder?.id).toBe(again.json.data.contact)
    }, 5_000)
  })
})
