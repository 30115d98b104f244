/**
 * The Contacts, Segments and ContactJobs repositories at the layer level, against a real migrated
 * Postgres of their own (no service processes, no NATS): every write commits its stream message with it
 * (read back from the outbox, routed as the TypeScript side routes it), the typed errors they fail with
 * (DuplicateEmail, InvalidCursor, ContactDataTooLarge), that reads stay inside their project, that a
 * dynamic segment's members are its condition now while a static one's are its stored list, and that a
 * queued job commits its first steps (an import's first ranges, a bulk job's rows per lane) with it.
 */
import { assert, describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../src/config.ts"
import type { Condition } from "../../src/domain/conditions/types.ts"
import { type DataPatch, MAX_CONTACT_DATA_BYTES } from "../../src/domain/customData.ts"
import { DuplicateEmail, InvalidCursor } from "../../src/domain/errors.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import type { ImportPlan } from "../../src/domain/imports/plan.ts"
import { ContactJobs, IMPORT_READ_AHEAD } from "../../src/store/ContactJobs.ts"
import { ContactDataTooLarge, Contacts, type ListQuery } from "../../src/store/Contacts.ts"
import { Segments } from "../../src/store/Segments.ts"
import { Outbox } from "../../src/stream/Outbox.ts"
import { insertProject, OutboxWithoutNats, outboxOf, TestDatabase } from "../support/database.ts"

const Repositories = Layer.mergeAll(Contacts.layer, Segments.layer, ContactJobs.layer).pipe(
  Layer.provideMerge(OutboxWithoutNats),
  Layer.provideMerge(AppConfig.layer),
  Layer.provideMerge(TestDatabase)
)

const patch = (set: Record<string, unknown> = {}, remove: ReadonlyArray<string> = []): DataPatch => ({ set, remove, transient: {} })

/** Upserts a contact, a couple of milliseconds after the previous one (so "newest first" is one order). */
const upsert = (projectId: string, email: string, set: Record<string, unknown> = {}, subscribed?: boolean) =>
  Effect.gen(function*() {
    const contacts = yield* Contacts
    yield* Effect.sleep("2 millis")
    return yield* contacts.upsert({ projectId, email, subscribed, subscribedByDefault: true, patch: patch(set), source: "api.contacts" })
  })

const byPlan = (plan: string): Condition => ({
  logic: "AND",
  groups: [{ filters: [{ field: "data.plan", operator: "equals", value: plan }] }]
})

const firstPage: ListQuery = { limit: 2, cursor: undefined, search: undefined, subscribed: undefined, sort: "createdAt", dir: "desc" }

layer(Repositories, { timeout: 60_000, excludeTestServices: true })("contacts and segments", (it) => {
  describe("Contacts", () => {
    it.effect("upserts by email: created, then updated; each write commits one contact message on the contact's lane", () =>
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const project = yield* insertProject
        const created = yield* upsert(project, "ada@example.com", { plan: "free", visits: 1 })
        expect(created).toMatchObject({
          isNew: true,
          previousSubscribed: undefined,
          contact: { email: "ada@example.com", subscribed: true }
        })
        const updated = yield* upsert(project, "ada@example.com", { plan: "pro" }, false)
        expect(updated).toMatchObject({
          isNew: false,
          previousSubscribed: true,
          contact: { subscribed: false, data: { plan: "pro", visits: 1 } }
        })
        expect(updated.contact.id).toBe(created.contact.id)

        const messages = yield* outboxOf(project)
        // The SQL routing of a contact's messages (contactSubjectSql) is the TypeScript one (subject, laneOf).
        const subject = outbox.subject(project, outbox.lanes.laneOf(created.contact.id), "contact")
        expect(messages.map((row) => [row.subject, row.payload["type"], row.payload["source"]])).toEqual([
          [subject, "contact.created", "api.contacts"],
          [subject, "contact.updated", "api.contacts"]
        ])
        expect(messages[1]!.payload).toMatchObject({ contactId: created.contact.id, previousSubscribed: true, setKeys: ["plan"] })

        // The inferred type of every data key seen, and how much of the project has it.
        const fields = yield* (yield* Contacts).fields(project)
        expect(fields.filter((field) => field.isCustom)).toEqual([
          { field: "data.plan", type: "string", isCustom: true, coverage: 1 },
          { field: "data.visits", type: "number", isCustom: true, coverage: 1 }
        ])
      }))

    it.effect("a write past the contact data limit fails with ContactDataTooLarge and writes nothing", () =>
      Effect.gen(function*() {
        const contacts = yield* Contacts
        const project = yield* insertProject
        const { contact } = yield* upsert(project, "big@example.com", { note: "small" })
        const before = (yield* outboxOf(project)).length
        const error = yield* Effect.flip(upsert(project, "big@example.com", { note: "x".repeat(MAX_CONTACT_DATA_BYTES) }))
        assert.instanceOf(error, ContactDataTooLarge)
        expect(error.contactId).toBe(contact.id)
        expect((yield* contacts.get(project, contact.id))?.data).toEqual({ note: "small" })
        expect(yield* outboxOf(project)).toHaveLength(before)
      }))

    it.effect("writers creating the same new contacts at once: one creates each, the others update it (a lost insert runs again)", () =>
      Effect.gen(function*() {
        const contacts = yield* Contacts
        const project = yield* insertProject
        const write = (email: string) =>
          contacts.upsert({
            projectId: project,
            email,
            subscribed: undefined,
            subscribedByDefault: true,
            patch: patch({ n: 1 }),
            source: "api.contacts"
          })
        const singles = yield* Effect.all(Array.from({ length: 8 }, () => write("race@example.com")), { concurrency: "unbounded" })
        expect(singles.filter((result) => result.isNew)).toHaveLength(1)
        expect(new Set(singles.map((result) => result.contact.id)).size).toBe(1)

        // Several addresses per statement, in opposite orders: each address created once, every answer in the order asked.
        const emails = ["a@example.com", "b@example.com", "c@example.com"]
        const batches = yield* Effect.all(
          Array.from({ length: 6 }, (_, n) => (n % 2 === 0 ? emails : [...emails].reverse())).map((list) =>
            contacts.upsertMany({
              projectId: project,
              emails: list,
              subscribed: undefined,
              subscribedByDefault: true,
              patch: patch(),
              source: "api.send"
            })
              .pipe(Effect.tap((results) => Effect.sync(() => expect(results.map((result) => result.email)).toEqual(list))))
          ),
          { concurrency: "unbounded" }
        )
        for (const email of emails) {
          const answers = batches.flat().filter((result) => result.email === email)
          expect(answers.filter((result) => result.upserted?.isNew)).toHaveLength(1)
          expect(new Set(answers.map((result) => result.upserted?.contact.id)).size).toBe(1)
        }

        const types = (yield* outboxOf(project)).map((row) => row.payload["type"])
        expect(types.filter((type) => type === "contact.created")).toHaveLength(4)
        expect(types.filter((type) => type === "contact.updated")).toHaveLength(7 + 3 * 5)
      }))

    it.effect("update: another contact's email fails with DuplicateEmail; another project's contact is not found", () =>
      Effect.gen(function*() {
        const contacts = yield* Contacts
        const [project, other] = [yield* insertProject, yield* insertProject]
        const ada = (yield* upsert(project, "ada@example.com")).contact
        yield* upsert(project, "grace@example.com")
        const error = yield* Effect.flip(contacts.update(project, ada.id, { email: "grace@example.com", patch: patch() }))
        assert.instanceOf(error, DuplicateEmail)
        expect(yield* contacts.update(other, ada.id, { subscribed: false, patch: patch() })).toBeUndefined()

        const renamed = yield* contacts.update(project, ada.id, { email: "ada@example.org", patch: patch({ tier: 2 }) })
        expect(renamed).toMatchObject({ email: "ada@example.org", data: { tier: 2 } })
        const last = (yield* outboxOf(project)).at(-1)!
        expect(last.payload).toMatchObject({ type: "contact.updated", previousEmail: "ada@example.com", setKeys: ["tier"] })
        expect(yield* contacts.lookup(project, ["ada@example.org", "nobody@example.org"])).toEqual([renamed])
        expect(yield* contacts.locate(ada.id)).toEqual({ projectId: project, contact: renamed })
      }))

    it.effect("lists newest first with cursors, or by email; a cursor it did not return fails with InvalidCursor", () =>
      Effect.gen(function*() {
        const contacts = yield* Contacts
        const [project, other] = [yield* insertProject, yield* insertProject]
        for (const email of ["c@example.com", "a@example.com", "b@example.com"])
          yield* upsert(project, email, {}, email !== "b@example.com")
        yield* upsert(other, "d@example.com")

        const first = yield* contacts.list(project, firstPage)
        expect(first.data.map((contact) => contact.email)).toEqual(["b@example.com", "a@example.com"])
        expect([first.hasMore, first.total]).toEqual([true, 3])
        const second = yield* contacts.list(project, { ...firstPage, cursor: first.cursor! })
        expect(second.data.map((contact) => contact.email)).toEqual(["c@example.com"])
        expect([second.hasMore, second.cursor]).toEqual([false, null])

        const byEmail = yield* contacts.list(project, { ...firstPage, sort: "email", dir: "asc" })
        expect(byEmail.data.map((contact) => contact.email)).toEqual(["a@example.com", "b@example.com"])
        const rest = yield* contacts.list(project, { ...firstPage, sort: "email", dir: "asc", cursor: byEmail.cursor! })
        expect(rest.data.map((contact) => contact.email)).toEqual(["c@example.com"])
        expect((yield* contacts.list(project, { ...firstPage, subscribed: false })).data.map((contact) => contact.email)).toEqual([
          "b@example.com"
        ])
        expect((yield* contacts.list(project, { ...firstPage, search: "C@" })).data.map((contact) => contact.email)).toEqual([
          "c@example.com"
        ])

        // A createdAt cursor is not an email cursor, and a forged one is refused.
        for (const cursor of ["nope", first.cursor!]) {
          const error = yield* Effect.flip(contacts.list(project, { ...firstPage, sort: "email", cursor }))
          assert.instanceOf(error, InvalidCursor)
        }
      }))

    it.effect("removing a contact and deleting a data field commit their messages; another project's are left alone", () =>
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const contacts = yield* Contacts
        const [project, other] = [yield* insertProject, yield* insertProject]
        const ada = (yield* upsert(project, "ada@example.com", { plan: "pro", profile: { tier: 1 } })).contact
        const theirs = (yield* upsert(other, "ada@example.com", { plan: "pro" })).contact
        expect(yield* contacts.fieldExists(project, "data.profile")).toBe(true)
        expect(yield* contacts.fieldValues(project, "data.plan", 1, 10)).toEqual({ values: ["pro"], total: 1 })

        expect(yield* contacts.deleteField(project, "data.plan")).toBe(1)
        expect((yield* contacts.get(project, ada.id))?.data).toEqual({ profile: { tier: 1 } })
        expect(yield* contacts.fieldExists(project, "data.plan")).toBe(false)
        expect((yield* contacts.get(other, theirs.id))?.data).toEqual({ plan: "pro" })

        expect(yield* contacts.remove(other, ada.id)).toBe(false)
        expect(yield* contacts.remove(project, ada.id)).toBe(true)
        expect(yield* contacts.get(project, ada.id)).toBeUndefined()
        // The field's deletion is one message to every lane; the contact's, one to its lane.
        const types = (yield* outboxOf(project)).map((row) => row.payload["type"])
        expect(types.filter((type) => type === "contact.field_deleted")).toHaveLength(outbox.lanes.count)
        expect(types.at(-1)).toBe("contact.deleted")
      }))
  })

  describe("Segments", () => {
    it.effect("a dynamic segment's members are its condition now; changes tell the project's lanes (segmentsChanged)", () =>
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const segments = yield* Segments
        const [project, other] = [yield* insertProject, yield* insertProject]
        for (const [email, plan] of [["a@example.com", "pro"], ["b@example.com", "free"], ["c@example.com", "pro"]] as const) {
          yield* upsert(project, email, { plan })
        }
        yield* upsert(other, "d@example.com", { plan: "pro" })
        const before = (yield* outboxOf(project)).length

        const pro = yield* segments.create(project, {
          name: "Pro users",
          description: null,
          type: "DYNAMIC",
          condition: byPlan("pro"),
          trackMembership: false
        })
        expect(pro).toMatchObject({ name: "Pro users", type: "DYNAMIC", condition: byPlan("pro"), memberCount: 0, version: 1 })
        const members = yield* segments.contacts(pro, 1, 1)
        expect([members.data.map((contact) => contact.email), members.total]).toEqual([["c@example.com"], 2])
        expect((yield* segments.contacts(pro, 2, 1)).data.map((contact) => contact.email)).toEqual(["a@example.com"])
        expect(yield* segments.refreshCount(pro)).toMatchObject({ memberCount: 2 })

        const free = yield* segments.update(project, pro.id, { name: "Free users", condition: byPlan("free") })
        expect(free).toMatchObject({ name: "Free users", version: 2 })
        expect((yield* segments.contacts(free!, 1, 10)).data.map((contact) => contact.email)).toEqual(["b@example.com"])
        expect(yield* segments.get(other, pro.id)).toBeUndefined()
        expect(yield* segments.update(other, pro.id, { name: "theirs" })).toBeUndefined()
        expect(yield* segments.remove(other, pro.id)).toBe(false)
        expect(yield* segments.remove(project, pro.id)).toBe(true)
        expect(yield* segments.list(project)).toEqual([])

        // Three changes, each told to every lane of the project (each lane caches the definitions).
        const commands = (yield* outboxOf(project)).slice(before)
        expect(new Set(commands.map((row) => `${row.payload["kind"]} ${row.payload["type"]}`))).toEqual(
          new Set(["command segmentsChanged"])
        )
        expect(new Set(commands.map((row) => row.payload["commandId"])).size).toBe(3)
        expect(commands).toHaveLength(3 * outbox.lanes.count)
      }))

    it.effect("a static segment's members are its list: added by email (missing contacts created when asked), removed, counted", () =>
      Effect.gen(function*() {
        const segments = yield* Segments
        const project = yield* insertProject
        yield* upsert(project, "known@example.com")
        const vip = yield* segments.create(project, {
          name: "VIP list!",
          description: "hand-picked",
          type: "STATIC",
          condition: null,
          trackMembership: true
        })
        const before = (yield* outboxOf(project)).length // a static segment has nothing to compute: no command

        expect(yield* segments.addMembers(vip, ["known@example.com", "new@example.com"], { createMissing: false, subscribed: undefined }))
          .toEqual({ added: 1, created: 0, notFound: ["new@example.com"] })
        expect(yield* segments.addMembers(vip, ["known@example.com", "new@example.com"], { createMissing: true, subscribed: false }))
          .toEqual({ added: 1, created: 1, notFound: [] })
        const members = yield* segments.contacts(vip, 1, 10)
        expect(members.data.map((contact) => [contact.email, contact.subscribed])).toEqual([["new@example.com", false], [
          "known@example.com",
          true
        ]])
        expect((yield* segments.get(project, vip.id))?.memberCount).toBe(2)

        expect(yield* segments.removeMembers(vip, ["known@example.com", "nobody@example.com"])).toEqual({
          removed: 1,
          notFound: ["nobody@example.com"]
        })
        expect((yield* segments.contacts(vip, 1, 10)).data.map((contact) => contact.email)).toEqual(["new@example.com"])
        expect((yield* segments.get(project, vip.id))?.memberCount).toBe(1)

        // Tracked: entries and exits are events about the contact (stream OUT, and back to its lane), named by the slug.
        const names = (yield* outboxOf(project)).slice(before).flatMap((row) =>
          row.payload["kind"] === "event" ? [row.payload["name"]] : []
        )
        expect(names).toEqual(["segment.vip-list.entry", "segment.vip-list.entry", "segment.vip-list.exit"])
      }))

    it.effect("previews an audience without writing: how many match, how many a marketing campaign would reach, a sample", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const segments = yield* Segments
        const project = yield* insertProject
        yield* upsert(project, "a@example.com", { plan: "pro" })
        yield* upsert(project, "b@example.com", { plan: "pro" }, false)
        yield* upsert(project, "c@example.com", { plan: "pro" })
        yield* upsert(project, "d@example.com", { plan: "free" })
        yield* sql`INSERT INTO suppressions (project_id, email, reason) VALUES (${project}, 'c@example.com', 'bounce')`
        const before = (yield* outboxOf(project)).length

        const preview = yield* segments.preview(project, { condition: byPlan("pro") }, 2)
        expect([preview.total, preview.reachable]).toEqual([3, 1])
        expect(preview.sample.map((contact) => contact.email)).toEqual(["c@example.com", "b@example.com"])
        expect(yield* segments.preview(project, {}, 0)).toEqual({ total: 4, reachable: 2, sample: [] })
        expect(yield* outboxOf(project)).toHaveLength(before)
      }))

    it.effect("previews a condition relative to now at the Clock's instant (a TestClock), not the machine's", () =>
      Effect.gen(function*() {
        const segments = yield* Segments
        const project = yield* insertProject
        const created = yield* upsert(project, "recent@example.com")
        const createdAt = Date.parse(created.contact.createdAt)
        const withinAnHour: Condition = {
          logic: "AND",
          groups: [{ filters: [{ field: "createdAt", operator: "within", value: 1, unit: "hours" }] }]
        }
        const matchingAt = (instant: number) =>
          Effect.gen(function*() {
            yield* TestClock.setTime(instant)
            return (yield* segments.preview(project, { condition: withinAnHour }, 0)).total
          }).pipe(Effect.provide(TestClock.layer()))

        expect(yield* matchingAt(createdAt + 30 * 60_000)).toBe(1)
        expect(yield* matchingAt(createdAt + 2 * 3_600_000)).toBe(0)
        expect(yield* matchingAt(createdAt - 1)).toBe(1)
      }))
  })

  describe("ContactJobs", () => {
    /** A plan of `ranges` ranges of 10 rows each (the reader is not run here). */
    const planOf = (ranges: number): ImportPlan => ({
      delimiter: ",",
      email: 0,
      subscribed: null,
      data: [],
      defaultSubscribed: null,
      duplicates: {},
      ranges: Array.from(
        { length: ranges },
        (_, range) => ({ offset: range * 100, end: (range + 1) * 100, rows: 10, firstRow: 2 + range * 10 })
      )
    })

    it.effect("an upload is kept part by part and invisible until queued; queuing commits the first ranges' steps, each on its lane", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const outbox = yield* Outbox
        const jobs = yield* ContactJobs
        const project = yield* insertProject
        const jobId = yield* jobs.beginUpload(project)
        yield* jobs.appendPart(jobId, 0, Buffer.from("email\na@example.com\n"))
        yield* jobs.appendPart(jobId, 1, Buffer.from("b@example.com\n"))
        expect(yield* jobs.view(project, jobId, ["import"])).toBeUndefined() // upload incomplete
        const parts: Array<string> = []
        yield* Effect.promise(async () => {
          for await (const part of jobs.parts(jobId)) parts.push(Buffer.from(part).toString())
        })
        expect(parts.join("")).toBe("email\na@example.com\nb@example.com\n")

        yield* jobs.queueImport(project, jobId, 60, planOf(6), [{ row: 3, email: "bad", reason: "invalid email" }])
        const view = yield* jobs.view(project, jobId, ["import"])
        expect(view).toMatchObject({
          id: jobId,
          type: "import",
          status: "PENDING",
          progress: { processed: 0, total: 60 },
          startedAt: null,
          finishedAt: null
        })
        expect(view!.errors).toEqual([{ row: 3, email: "bad", reason: "invalid email" }])
        expect(yield* jobs.view(project, jobId, ["delete"])).toBeUndefined()
        const [ranges] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM contact_job_ranges WHERE job_id = ${jobId}`
        expect(ranges!.n).toBe(6)

        const steps = yield* outboxOf(project)
        expect(steps.map((row) => [row.subject, row.payload["type"], row.payload["jobId"], row.payload["range"]])).toEqual(
          Array.from({ length: IMPORT_READ_AHEAD }, (_, range) => [
            outbox.subject(project, range % outbox.lanes.count, "command"),
            "importStep",
            jobId,
            range
          ])
        )

        const refused = yield* jobs.beginUpload(project)
        yield* jobs.discard(refused)
        const [left] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM contact_jobs WHERE id = ${refused}`
        expect(left!.n).toBe(0)
      }))

    it.effect("a bulk job reports ids that are not the project's contacts at once and sends the others to their lanes", () =>
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const jobs = yield* ContactJobs
        const [project, other] = [yield* insertProject, yield* insertProject]
        const [ada, grace] = [(yield* upsert(project, "ada@example.com")).contact, (yield* upsert(project, "grace@example.com")).contact]
        const theirs = (yield* upsert(other, "eve@example.com")).contact
        const before = (yield* outboxOf(project)).length

        const ids = [ada.id, theirs.id, "not-a-uuid", grace.id.toUpperCase(), ada.id, uuidv7()]
        const jobId = yield* jobs.queueBulk(project, "unsubscribe", ids)
        const view = yield* jobs.view(project, jobId, ["subscribe", "unsubscribe", "delete"])
        expect(view).toMatchObject({ type: "unsubscribe", status: "RUNNING", progress: { processed: 4, total: 6, skipped: 4 } })
        expect(view!.errors.map((error) => [error.row, error.reason])).toEqual([
          [2, "contact not found"],
          [3, "contact not found"],
          [5, "duplicate contact id in the request"],
          [6, "contact not found"]
        ])
        expect(yield* jobs.view(other, jobId, ["unsubscribe"])).toBeUndefined()

        // One message per lane, carrying its contacts with their rows in the request.
        const messages = (yield* outboxOf(project)).slice(before)
        const rows = messages.flatMap((row) => {
          const payload = row.payload as {
            readonly lane: number
            readonly op: string
            readonly rows: ReadonlyArray<{ row: number; contactId: string }>
          }
          expect(row.subject).toBe(outbox.subject(project, payload.lane, "bulk"))
          expect(payload.op).toBe("unsubscribe")
          return payload.rows.map((entry) => [entry.row, entry.contactId, payload.lane])
        })
        expect(rows.sort((a, b) => (a[0] as number) - (b[0] as number))).toEqual([
          [1, ada.id, outbox.lanes.laneOf(ada.id)],
          [4, grace.id, outbox.lanes.laneOf(grace.id)]
        ])
        expect(new Set(messages.map((row) => row.payload["lane"])).size).toBe(messages.length)
        expect([...(yield* jobs.emailsOf(project, [ada.id, theirs.id, "x"]))]).toEqual(["ada@example.com"])
      }))
  })
})
