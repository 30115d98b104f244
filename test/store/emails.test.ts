/**
 * The Emails repository at the layer level, against a real migrated Postgres of its own (no service
 * processes, no NATS): queued mail read back without its content, by id inside its project and by
 * Message-ID; engagement that stamps its time once, moves the status only forward, counts a campaign's
 * email once per kind and emits its email.* event (every click, a repeated open collapsed).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../src/config.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { Emails, insertQueuedEmails, type NewEmail } from "../../src/store/Emails.ts"
import { insertProject, OutboxWithoutNats, outboxOf, TestDatabase } from "../support/database.ts"

const Repositories = Emails.layer.pipe(
  Layer.provideMerge(OutboxWithoutNats),
  Layer.provideMerge(AppConfig.layer),
  Layer.provideMerge(TestDatabase)
)

const newEmail = (projectId: string, overrides: Partial<NewEmail> = {}): NewEmail => {
  const id = uuidv7()
  return {
    id,
    projectId,
    contactId: null,
    to: "reader@example.org",
    toName: null,
    from: "news@mail.example.com",
    fromName: "News",
    replyTo: null,
    subject: "Hello",
    html: "<p>Hi</p>",
    headers: { "X-Test": "1" },
    attachments: [],
    type: "TRANSACTIONAL",
    templateId: null,
    campaignId: null,
    workflowId: null,
    messageId: `${id}@mail.example.com`,
    ...overrides
  }
}

const queue = (projectId: string, emails: ReadonlyArray<NewEmail>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* insertQueuedEmails(sql, projectId, 0, emails)
  })

/** The email.* events emitted about a project (their feedback messages into IN), in order. */
const emitted = (projectId: string) =>
  Effect.map(
    outboxOf(projectId),
    (rows) => rows.filter((row) => row.payload.kind === "event").map((row) => [row.payload.name, row.payload.data] as const)
  )

layer(Repositories, { timeout: 60_000, excludeTestServices: true })("Emails", (it) => {
  describe("reads", () => {
    it.effect("reads queued mail without its content, inside its project, by id and by Message-ID", () =>
      Effect.gen(function*() {
        const emails = yield* Emails
        const [project, other] = [yield* insertProject, yield* insertProject]
        const email = newEmail(project)
        yield* queue(project, [email])
        const record = yield* emails.get(project, email.id)
        expect(record).toMatchObject({
          id: email.id,
          projectId: project,
          to: "reader@example.org",
          subject: "Hello",
          status: "PENDING",
          attempts: 0,
          sentAt: null,
          openedAt: null
        })
        expect(record).not.toHaveProperty("html")
        expect(record!.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        expect(yield* emails.get(other, email.id)).toBeUndefined()
        expect(yield* emails.byId(email.id)).toEqual(record)
        expect(yield* emails.byId("not-a-uuid")).toBeUndefined()
        expect(yield* emails.byMessageId(`<${email.messageId}>`)).toEqual(record)
        expect(yield* emails.byMessageId(email.messageId, project)).toEqual(record)
        expect(yield* emails.byMessageId(email.messageId, other)).toBeUndefined()
      }))
  })

  describe("engagement", () => {
    it.effect("stamps once, moves the status only forward, counts a campaign's email once per kind, emits every click", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const emails = yield* Emails
        const project = yield* insertProject
        const contact = uuidv7()
        yield* sql`INSERT INTO contacts (id, project_id, email, subscribed, created_at, updated_at)
                   VALUES (${contact}, ${project}, 'reader@example.org', true, now(), now())`
        const campaign = uuidv7()
        yield* sql`INSERT INTO campaigns (id, project_id, partition, name, subject, body, from_email, type, audience_type, status,
                                          created_at, updated_at)
                   VALUES (${campaign}, ${project}, 0, 'c', 's', 'b', 'news@mail.example.com', 'MARKETING', 'ALL', 'SENDING', now(), now())`
        const email = newEmail(project, { contactId: contact, campaignId: campaign, type: "MARKETING" })
        yield* queue(project, [email])
        yield* sql`UPDATE emails SET status = 'SENT', sent_at = now() WHERE id = ${email.id}`
        const record = (yield* emails.get(project, email.id))!

        const click = yield* emails.engage(record, "click", { url: "https://example.org" })
        expect(click).toMatchObject({ first: true, recorded: true, email: { status: "CLICKED" } })
        expect(click!.email.clickedAt).not.toBeNull()
        const again = yield* emails.engage(record, "click", { url: "https://example.org/2" })
        expect(again).toMatchObject({ first: false, recorded: true })
        expect(again!.email.clickedAt).toBe(click!.email.clickedAt)

        // An open after the click: stamped, but the status stays CLICKED; a repeated open emits nothing.
        const open = yield* emails.engage(record, "open")
        expect(open).toMatchObject({ first: true, recorded: true, email: { status: "CLICKED" } })
        expect(open!.email.openedAt).not.toBeNull()
        expect(yield* emails.engage(record, "open")).toMatchObject({ first: false, recorded: false })

        const [counts] = yield* sql<{ clicked_count: number; opened_count: number }>`
          SELECT clicked_count, opened_count FROM campaigns WHERE id = ${campaign}`
        expect(counts).toEqual({ clicked_count: 1, opened_count: 1 })

        const events = yield* emitted(project)
        expect(events.map(([name]) => name)).toEqual(["email.click", "email.click", "email.open"])
        expect(events[0]![1]).toMatchObject({
          emailId: email.id,
          subject: "Hello",
          campaignId: campaign,
          url: "https://example.org",
          isFirstClick: true
        })
        expect(events[1]![1]).toMatchObject({ isFirstClick: false })

        expect(yield* emails.engage({ ...record, id: uuidv7() }, "open")).toBeUndefined()
      }))

    it.effect("mail to no contact is stamped without an event", () =>
      Effect.gen(function*() {
        const emails = yield* Emails
        const project = yield* insertProject
        const email = newEmail(project)
        yield* queue(project, [email])
        const delivered = yield* emails.engage((yield* emails.get(project, email.id))!, "delivery")
        expect(delivered).toMatchObject({ first: true, recorded: true, email: { status: "DELIVERED" } })
        expect(yield* emitted(project)).toEqual([])
      }))
  })
})
