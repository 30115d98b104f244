/**
 * Repositories at the layer level, against a real migrated Postgres of their own (no service
 * processes): what they answer, the typed errors they fail with instead of sentinel values
 * (DomainExists, InvalidCursor), and that every read stays inside its project.
 */
import { assert, describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { AppConfig } from "../../src/config.ts"
import { DomainExists, InvalidCursor } from "../../src/domain/errors.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { Dns } from "../../src/lib/dns.ts"
import { AccountTokens, TOKEN_TTL_HOURS } from "../../src/store/AccountTokens.ts"
import { Activity } from "../../src/store/Activity.ts"
import { Analytics } from "../../src/store/Analytics.ts"
import { Domains } from "../../src/store/Domains.ts"
import { Events } from "../../src/store/Events.ts"
import { PersistenceError } from "../../src/store/PersistenceError.ts"
import { TestDatabase } from "../support/database.ts"

const Repositories = Layer.mergeAll(
  AccountTokens.layer,
  Domains.layer,
  Events.layer,
  Activity.layer.pipe(Layer.provide(Analytics.layer))
).pipe(
  Layer.provide(Layer.effect(Dns, Dns.make())),
  Layer.provide(AppConfig.layer),
  Layer.provideMerge(TestDatabase)
)

/** A project row, as `project create` leaves it (keys are hashes; these tests never authenticate). */
const newProject = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const id = uuidv7()
  yield* sql`INSERT INTO projects (id, name, public_key_hash, secret_key_hash)
             VALUES (${id}, 'test', ${Buffer.from(uuidv7())}, ${Buffer.from(uuidv7())})`
  return id
})

layer(Repositories, { timeout: 60_000, excludeTestServices: true })("repositories", (it) => {
  describe("Domains", () => {
    it.effect("creates a domain once per project; a second create fails with DomainExists", () =>
      Effect.gen(function*() {
        const domains = yield* Domains
        const [project, other] = [yield* newProject, yield* newProject]
        const created = yield* domains.create(project, "mail.example.com")
        expect(created).toMatchObject({ domain: "mail.example.com", verified: false, status: "PENDING" })
        expect(created.records.map((record) => record.purpose).sort()).toEqual(["DKIM", "DMARC", "SPF"])

        const again = yield* Effect.flip(domains.create(project, "mail.example.com"))
        assert.instanceOf(again, DomainExists)
        expect(again.message).toBe("The domain mail.example.com is already added to this project")
        expect([DomainExists.status, DomainExists.code]).toEqual([409, "DOMAIN_EXISTS"])

        // Another project may add the same name; neither sees the other's.
        const theirs = yield* domains.create(other, "mail.example.com")
        expect((yield* domains.list(project)).map((domain) => domain.id)).toEqual([created.id])
        expect(yield* domains.get(project, theirs.id)).toBeUndefined()
        expect(yield* domains.remove(project, theirs.id)).toBe(false)
        expect(yield* domains.get(other, theirs.id)).toEqual(theirs)
        expect(yield* domains.remove(other, theirs.id)).toBe(true)
        expect(yield* domains.signingKey(project, "mail.example.com")).toBeUndefined() // not verified yet
      }))

    it.effect("decodes rows with their schema: timestamps as ISO strings; a row that does not fit is a PersistenceError", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const domains = yield* Domains
        const project = yield* newProject
        const created = yield* domains.create(project, "rows.example.com")
        const [row] = yield* sql<{ created_at: Date }>`SELECT created_at FROM domains WHERE id = ${created.id}`
        expect(created.createdAt).toBe(row!.created_at.toISOString())
        expect(created.lastCheckedAt).toBeNull()

        yield* sql`UPDATE domains SET records = '[{"purpose":"MX"}]'::jsonb WHERE id = ${created.id}`
        const error = yield* Effect.flip(domains.list(project))
        assert.instanceOf(error, PersistenceError)
        expect(error.message).toContain("purpose")
      }))
  })

  describe("Events", () => {
    it.effect("pages newest first with cursors; a cursor it did not return fails with InvalidCursor", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const events = yield* Events
        const [project, other] = [yield* newProject, yield* newProject]
        const contact = uuidv7()
        const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 12, minute)).toISOString()
        for (const [projectId, name, minute] of [[project, "a", 1], [project, "b", 2], [project, "a", 3], [other, "a", 4]] as const) {
          yield* sql`INSERT INTO events (id, project_id, contact_id, name, created_at)
                     VALUES (${uuidv7()}, ${projectId}, ${contact}, ${name}, ${at(minute)}::timestamptz)`
        }
        const query = { limit: 2, cursor: undefined, name: undefined, contactId: undefined }
        const first = yield* events.list(project, query)
        expect(first.data.map((event) => event.name)).toEqual(["a", "b"])
        expect(first.hasMore).toBe(true)
        const second = yield* events.list(project, { ...query, cursor: first.cursor! })
        expect(second.data.map((event) => event.name)).toEqual(["a"])
        expect(second.hasMore).toBe(false)
        expect((yield* events.list(project, { ...query, name: "b" })).data).toHaveLength(1)

        for (const forged of ["nope", Buffer.from(JSON.stringify(["x", "y"])).toString("base64url")]) {
          const error = yield* Effect.flip(events.list(project, { ...query, cursor: forged }))
          assert.instanceOf(error, InvalidCursor)
        }
      }))
  })

  describe("Activity", () => {
    it.effect("a feed cursor it did not return fails with InvalidCursor", () =>
      Effect.gen(function*() {
        const activity = yield* Activity
        const project = yield* newProject
        const query = {
          limit: 10,
          cursor: "forged",
          types: undefined,
          contactId: undefined,
          campaignId: undefined,
          workflowId: undefined,
          from: undefined,
          to: undefined,
          search: undefined
        }
        const error = yield* Effect.flip(activity.feed(project, query as never))
        assert.instanceOf(error, InvalidCursor)
        expect((yield* activity.feed(project, { ...query, cursor: undefined } as never)).data).toEqual([])
      }))
  })

  describe("AccountTokens", () => {
    it.effect("a token expires its purpose's TTL after the Clock's time (TestClock here), and is used once", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const tokens = yield* AccountTokens
        const project = yield* newProject
        const issuedAt = Date.UTC(2099, 0, 1) // later than Postgres' now(), so the token is still valid
        yield* TestClock.setTime(issuedAt)
        const grant = { userId: null, email: "new@example.com", projectId: project, role: "MEMBER" as const }
        const token = yield* tokens.issue("invitation", grant)
        const [row] = yield* sql<{ expires_at: Date }>`SELECT expires_at FROM account_tokens WHERE project_id = ${project}`
        expect(row!.expires_at.getTime()).toBe(issuedAt + TOKEN_TTL_HOURS.invitation * 3_600_000)

        expect(yield* tokens.peek("invitation", token)).toEqual(grant)
        expect(yield* tokens.consume("reset_password", token)).toBeUndefined() // another purpose
        expect(yield* tokens.consume("invitation", token)).toEqual(grant)
        expect(yield* tokens.consume("invitation", token)).toBeUndefined()
      }).pipe(Effect.provide(TestClock.layer())))
  })
})
