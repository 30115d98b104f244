/**
 * The Templates and Campaigns repositories at the layer level, against a real migrated Postgres of
 * their own (no service processes, no NATS): paged, searchable lists that stay inside their project,
 * and the campaign state machine (DRAFT → SCHEDULED → SENDING, CANCELLED), whose start commits the
 * first fan-out command to the project's owner lane with it (read back from the outbox).
 */
import { assert, describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../src/config.ts"
import { CampaignNotSendable, InvalidCampaignState } from "../../src/domain/errors.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import type { CampaignInput } from "../../src/store/campaignRows.ts"
import { Campaigns } from "../../src/store/Campaigns.ts"
import { PersistenceError } from "../../src/store/PersistenceError.ts"
import { type TemplateInput, Templates } from "../../src/store/Templates.ts"
import { OWNER_LANE } from "../../src/stream/lanes.ts"
import { Outbox } from "../../src/stream/Outbox.ts"
import { insertProject, OutboxWithoutNats, outboxOf, TestDatabase } from "../support/database.ts"

const Repositories = Layer.mergeAll(Templates.layer, Campaigns.layer).pipe(
  Layer.provideMerge(OutboxWithoutNats),
  Layer.provideMerge(AppConfig.layer),
  Layer.provideMerge(TestDatabase)
)

const content = {
  description: null,
  subject: 'Hello {{ firstName ?? "there" }}',
  body: "<p>Hi</p>",
  from: "news@mail.example.com",
  fromName: "News",
  replyTo: null
} as const

const template = (name: string, type: TemplateInput["type"] = "MARKETING"): TemplateInput => ({ ...content, name, type })

const campaign = (name: string, audience: Partial<CampaignInput> = {}): CampaignInput => ({
  ...content,
  name,
  type: "MARKETING",
  audienceType: "ALL",
  segmentId: null,
  audienceCondition: null,
  ...audience
})

const page = { page: 1, pageSize: 10, search: undefined, sort: "name", direction: "asc" } as const

/** A subscribed contact with `data.plan`: a campaign nobody would receive is not sent (issue 34). */
const insertReader = (project: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
        VALUES (${uuidv7()}, ${project}, ${`reader-${uuidv7()}@example.com`}, true, '{"plan":"pro"}'::jsonb, now(), now())`)

const proReaders = { logic: "AND" as const, groups: [{ filters: [{ field: "data.plan", operator: "equals" as const, value: "pro" }] }] }

layer(Repositories, { timeout: 60_000, excludeTestServices: true })("templates and campaigns", (it) => {
  describe("Templates", () => {
    it.effect("creates, reads, updates and removes a template inside its project only", () =>
      Effect.gen(function*() {
        const templates = yield* Templates
        const [project, other] = [yield* insertProject, yield* insertProject]
        const created = yield* templates.create(project, template("Welcome", "TRANSACTIONAL"))
        expect(created).toMatchObject({ ...template("Welcome", "TRANSACTIONAL"), projectId: project })
        expect(created.createdAt).toBe(created.updatedAt)
        expect(yield* templates.get(project, created.id)).toEqual(created)

        expect(yield* templates.get(other, created.id)).toBeUndefined()
        expect(yield* templates.update(other, created.id, template("Theirs"))).toBeUndefined()
        expect(yield* templates.remove(other, created.id)).toBe(false)

        const updated = yield* templates.update(project, created.id, {
          ...template("Welcome back", "TRANSACTIONAL"),
          replyTo: "help@example.com"
        })
        expect(updated).toMatchObject({ id: created.id, name: "Welcome back", replyTo: "help@example.com", createdAt: created.createdAt })
        expect(yield* templates.remove(project, created.id)).toBe(true)
        expect(yield* templates.get(project, created.id)).toBeUndefined()
      }))

    it.effect("decodes its rows with their schema: a row that does not fit is a PersistenceError", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const templates = yield* Templates
        const project = yield* insertProject
        const created = yield* templates.create(project, template("Odd", "TRANSACTIONAL"))
        const [row] = yield* sql<{ created_at: Date }>`SELECT created_at FROM templates WHERE id = ${created.id}`
        expect(created.createdAt).toBe(row!.created_at.toISOString())
        yield* sql`UPDATE templates SET type = 'FAX' WHERE id = ${created.id}`
        const error = yield* Effect.flip(templates.get(project, created.id))
        assert.instanceOf(error, PersistenceError)
        expect(error.message).toContain(`["type"]`)
      }))

    it.effect("lists a page sorted and filtered (type, a search over name, description and subject) with the total", () =>
      Effect.gen(function*() {
        const templates = yield* Templates
        const [project, other] = [yield* insertProject, yield* insertProject]
        for (const name of ["beta", "Alpha", "gamma"]) yield* templates.create(project, template(name))
        yield* templates.create(project, { ...template("receipt", "TRANSACTIONAL"), subject: "Your 100% receipt" })
        yield* templates.create(other, template("alpha 2"))

        const names = (
          result: { readonly data: ReadonlyArray<{ readonly name: string }>; readonly total: number }
        ) => [result.data.map((row) => row.name), result.total]
        expect(names(yield* templates.list(project, { ...page, type: undefined }))).toEqual([["Alpha", "beta", "gamma", "receipt"], 4])
        expect(names(yield* templates.list(project, { ...page, type: "MARKETING", pageSize: 2, page: 2 }))).toEqual([["gamma"], 3])
        expect(names(yield* templates.list(project, { ...page, type: undefined, direction: "desc", pageSize: 1 }))).toEqual([
          ["receipt"],
          4
        ])
        expect(names(yield* templates.list(project, { ...page, type: undefined, search: "ALPHA" }))).toEqual([["Alpha"], 1])
        // The search is text, not a pattern: `%` matches itself only.
        expect(names(yield* templates.list(project, { ...page, type: undefined, search: "100%" }))).toEqual([["receipt"], 1])
        expect(names(yield* templates.list(project, { ...page, type: undefined, search: "%" }))).toEqual([["receipt"], 1])
      }))
  })

  describe("Campaigns", () => {
    it.effect("a draft is scheduled, then sent now: SENDING commits one campaignStep command on the owner lane", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const outbox = yield* Outbox
        const campaigns = yield* Campaigns
        const [project, other] = [yield* insertProject, yield* insertProject]
        yield* insertReader(project)
        const draft = yield* campaigns.create(project, campaign("Launch"))
        expect(draft).toMatchObject({ name: "Launch", status: "DRAFT", scheduledFor: null, totalRecipients: 0, billingHold: null })
        const [row] = yield* sql<{ partition: number }>`SELECT partition FROM campaigns WHERE id = ${draft.id}`
        expect(row!.partition).toBe(outbox.lanes.partitionOf(project, OWNER_LANE))
        expect(yield* campaigns.send(other, draft.id, undefined)).toBeUndefined()

        const replaced = yield* campaigns.replace(
          project,
          draft.id,
          campaign("Launch!", { audienceType: "FILTERED", audienceCondition: proReaders })
        )
        expect(replaced).toMatchObject({ id: draft.id, name: "Launch!", audienceType: "FILTERED", status: "DRAFT" })

        const later = new Date(Date.now() + 86_400_000)
        expect(yield* campaigns.send(project, draft.id, later)).toMatchObject({ status: "SCHEDULED", scheduledFor: later.toISOString() })
        expect(yield* outboxOf(project)).toEqual([])

        const sending = yield* campaigns.send(project, draft.id, undefined)
        expect(sending).toMatchObject({ status: "SENDING", scheduledFor: null })
        // What its status no longer allows fails typed (the 409, or the send's 400), with the status.
        const edit = yield* Effect.flip(campaigns.replace(project, draft.id, campaign("Again")))
        assert.instanceOf(edit, InvalidCampaignState)
        expect([edit.message, edit.details]).toEqual(["A SENDING campaign cannot be edited", { status: "SENDING" }])
        assert.instanceOf(yield* Effect.flip(campaigns.remove(project, draft.id)), InvalidCampaignState)
        const resend = yield* Effect.flip(campaigns.send(project, draft.id, undefined))
        assert.instanceOf(resend, CampaignNotSendable)
        expect([CampaignNotSendable.status, resend.message]).toEqual([400, "A SENDING campaign cannot be sent"])
        const messages = yield* outboxOf(project)
        expect(messages.map((message) => [message.subject, message.payload["type"], message.payload["campaignId"]])).toEqual([
          [outbox.subject(project, OWNER_LANE, "command"), "campaignStep", draft.id]
        ])
        expect(yield* campaigns.stats(project, draft.id)).toMatchObject({
          status: "SENDING",
          resolved: false,
          queued: false,
          sent: 0,
          pending: 0,
          skipped: { unsubscribed: 0, suppressed: 0, deleted: 0 },
          rates: { delivery: 0, open: 0, click: 0, bounce: 0 }
        })
        expect((yield* campaigns.all(project)).map((found) => found.id)).toEqual([draft.id])
        expect(yield* campaigns.all(other)).toEqual([])
      }))

    it.effect("scheduled campaigns of the given partitions start when due; one cancelled (a draft again) is not started", () =>
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const campaigns = yield* Campaigns
        const project = yield* insertProject
        yield* insertReader(project)
        const partition = outbox.lanes.partitionOf(project, OWNER_LANE)
        const soon = new Date(Date.now() + 60_000)
        const [due, cancelled] = [
          yield* campaigns.create(project, campaign("due")),
          yield* campaigns.create(project, campaign("cancelled"))
        ]
        for (const { id } of [due, cancelled]) yield* campaigns.send(project, id, soon)
        // Cancelling a SCHEDULED campaign makes it a draft again, unscheduled (issue 34, as the reference does).
        expect(yield* campaigns.cancel(project, cancelled.id)).toMatchObject({ status: "DRAFT", scheduledFor: null })

        const afterwards = new Date(soon.getTime() + 1_000)
        expect(yield* campaigns.startDue([partition + 1], afterwards)).toBe(0) // another worker's partition
        expect(yield* campaigns.startDue([partition], new Date(soon.getTime() - 1_000))).toBe(0) // not yet
        expect(yield* campaigns.startDue([partition], afterwards)).toBe(1)
        expect((yield* campaigns.get(project, due.id))?.status).toBe("SENDING")
        expect((yield* campaigns.get(project, cancelled.id))?.status).toBe("DRAFT")
        expect((yield* outboxOf(project)).map((message) => message.payload["campaignId"])).toEqual([due.id])

        const listed = yield* campaigns.list(project, { ...page, status: "DRAFT" })
        expect([listed.data.map((found) => found.name), listed.total]).toEqual([["cancelled"], 1])
      }))

    it.effect("finds the active campaigns that use a segment, as their audience or inside their condition", () =>
      Effect.gen(function*() {
        const campaigns = yield* Campaigns
        const project = yield* insertProject
        const segment = uuidv7()
        const condition = {
          logic: "AND" as const,
          groups: [{ filters: [{ field: "segment", operator: "memberOfSegment" as const, value: segment }] }]
        }
        const bySegment = yield* campaigns.create(project, campaign("by segment", { audienceType: "SEGMENT", segmentId: segment }))
        const byCondition = yield* campaigns.create(
          project,
          campaign("by condition", { audienceType: "FILTERED", audienceCondition: condition })
        )
        const draft = yield* campaigns.create(project, campaign("draft", { audienceType: "SEGMENT", segmentId: segment }))
        yield* campaigns.create(project, campaign("everyone"))
        // Scheduled as a send would leave them (the segment has no members: send itself would refuse them).
        const sql = yield* SqlClient.SqlClient
        for (const { id } of [bySegment, byCondition]) {
          yield* sql`UPDATE campaigns SET status = 'SCHEDULED', scheduled_for = now() + interval '1 day' WHERE id = ${id}`
        }

        const active = yield* campaigns.activeUsingSegment(project, segment)
        expect(active.map((found) => found.name).sort()).toEqual(["by condition", "by segment"])
        expect(active.some((found) => found.id === draft.id)).toBe(false)
        expect(yield* campaigns.activeUsingSegment(project, uuidv7())).toEqual([])
      }))

    it.effect("decodes its rows with their schema: a row that does not fit is a PersistenceError", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const campaigns = yield* Campaigns
        const project = yield* insertProject
        const created = yield* campaigns.create(project, campaign("Odd"))
        const [row] = yield* sql<{ created_at: Date }>`SELECT created_at FROM campaigns WHERE id = ${created.id}`
        expect(created.createdAt).toBe(row!.created_at.toISOString())
        expect(created.scheduledFor).toBeNull()
        yield* sql`UPDATE campaigns SET audience_condition = '42'::jsonb WHERE id = ${created.id}`
        const error = yield* Effect.flip(campaigns.get(project, created.id))
        assert.instanceOf(error, PersistenceError)
        expect(error.message).toContain(`["audience_condition"]`)
        assert.instanceOf(yield* Effect.flip(campaigns.list(project, { ...page, status: undefined })), PersistenceError)
      }))
  })
})
