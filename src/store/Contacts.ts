/**
 * The contacts aggregate in Postgres. Every write commits, in the same statement, an outbox row
 * describing the change (published to the project's partition of stream IN by the OutboxRelay), and
 * records the inferred type of any custom-data key seen for the first time.
 */
import { Clock, Context, Data, Effect, Layer } from "effect"
import { SqlClient, type SqlError, type Statement } from "effect/sql"
import { type DataPatch, type FieldType, inferFieldTypes, MAX_CONTACT_DATA_BYTES } from "../domain/customData.ts"
import { DuplicateEmail, InvalidCursor } from "../domain/errors.ts"
import { isUuid, uuidv7 } from "../domain/ids.ts"
import { decodeCursor, encodeCursor } from "./cursor.ts"
import { Outbox } from "../stream/Outbox.ts"
import type { Condition } from "../domain/conditions/types.ts"
import { pgArray } from "../lib/pgArray.ts"
import { iso } from "./columns.ts"
import { segmentMembersSql } from "./conditionSql.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

export interface Contact {
  readonly id: string
  readonly email: string
  readonly subscribed: boolean
  readonly snoozedUntil: string | null
  readonly data: Record<string, unknown>
  readonly createdAt: string
  readonly updatedAt: string
}

export interface UpsertInput {
  readonly projectId: string
  readonly email: string
  /** Explicit value from the request; undefined keeps an existing contact's state. */
  readonly subscribed: boolean | undefined
  /** State of a new contact when `subscribed` is not given (differs per operation). */
  readonly subscribedByDefault: boolean
  readonly patch: DataPatch
  /** Which operation wrote (`api.contacts`, `api.track`, ...), carried on the change message. */
  readonly source: string
  /**
   * For a new contact, the state its creation is compared with to decide whether it subscribed or
   * unsubscribed (/v1/send: false, so an explicit opt-in emits contact.subscribed). Undefined: creating
   * a contact is not a subscription change.
   */
  readonly newContactBaseline?: boolean | undefined
  /** Further messages committed with the write (e.g. the tracked event); `contactId` and `email` are added. */
}

export interface UpsertResult {
  readonly contact: Contact
  readonly isNew: boolean
  /** Subscription state before this write (undefined for a new contact). */
  readonly previousSubscribed: boolean | undefined
}

/** Several contacts upserted with the same patch and subscription (one /v1/send request's recipients). */
export interface UpsertManyInput extends Omit<UpsertInput, "email"> {
  /** Normalized addresses, each once. */
  readonly emails: ReadonlyArray<string>
}

/** One address of an `upsertMany`: its contact, or the contact its patch would grow past the data limit (nothing written). */
export type UpsertManyResult =
  | { readonly email: string; readonly upserted: UpsertResult; readonly tooLarge?: undefined }
  | { readonly email: string; readonly upserted?: undefined; readonly tooLarge: ContactDataTooLarge }

export interface UpdateInput {
  readonly email?: string | undefined
  readonly subscribed?: boolean | undefined
  readonly patch: DataPatch
  /** Who made the change (the contact.updated message's `source`): `api.contacts` unless said. */
  readonly source?: string | undefined
}

export type ListSort = "createdAt" | "email"

export interface ListQuery {
  readonly limit: number
  readonly cursor: string | undefined
  readonly search: string | undefined
  readonly subscribed: boolean | undefined
  /** Only the segment's current members (the segment already found in the project). */
  readonly segment?: { readonly id: string; readonly type: string; readonly condition: Condition | null } | undefined
  /** Only contacts with this custom field; with `equals`, whose value reads as that text (`pro`, `42`, `true`). */
  readonly data?: { readonly path: ReadonlyArray<string>; readonly equals: string | undefined } | undefined
  readonly sort: ListSort
  readonly dir: "asc" | "desc"
}

export interface ListPage {
  readonly data: ReadonlyArray<Contact>
  readonly cursor: string | null
  readonly hasMore: boolean
  readonly total: number
}

export interface FieldDescriptor {
  readonly field: string
  readonly type: string
  readonly isCustom: boolean
  readonly coverage: number
}

/** The write would grow the contact's custom data past MAX_CONTACT_DATA_BYTES; nothing was written. */
export class ContactDataTooLarge extends Data.TaggedError("ContactDataTooLarge")<{ readonly contactId: string }> {
  readonly limitBytes = MAX_CONTACT_DATA_BYTES
}

interface ContactRow {
  readonly id: string
  readonly email: string
  readonly subscribed: boolean
  readonly snoozed_until: Date | string | null
  readonly data: Record<string, unknown> | string
  readonly created_at: Date | string
  readonly updated_at: Date | string
}

export const toContact = (row: ContactRow): Contact => ({
  id: row.id,
  email: row.email,
  subscribed: row.subscribed,
  snoozedUntil: row.snoozed_until === null ? null : iso(row.snoozed_until),
  data: typeof row.data === "string" ? JSON.parse(row.data) : row.data,
  createdAt: iso(row.created_at),
  updatedAt: iso(row.updated_at)
})

const STANDARD_FIELDS: ReadonlyArray<readonly [string, FieldType]> = [
  ["email", "string"],
  ["subscribed", "boolean"],
  ["createdAt", "date"],
  ["updatedAt", "date"]
]

const STANDARD_COLUMNS: Record<string, string> = {
  email: "email",
  subscribed: "subscribed",
  createdAt: "created_at",
  updatedAt: "updated_at"
}

export const isStandardField = (field: string): boolean => Object.hasOwn(STANDARD_COLUMNS, field)

/** `data.profile.tier` → `["profile", "tier"]`; undefined when the name is not a custom field. */
export const customFieldPath = (field: string): Array<string> | undefined => {
  if (!field.startsWith("data.")) return undefined
  const path = field.slice(5).split(".")
  return path.every((part) => part.length > 0) ? path : undefined
}

/** The fields a direct write pins (see migrations/0003_contact_pins.sql). */
const pinsOf = (patch: DataPatch, subscribed: boolean | undefined, at: number): string => {
  const pins: Record<string, number> = {}
  if (subscribed !== undefined) pins["subscribed"] = at
  for (const key of [...Object.keys(patch.set), ...patch.remove]) pins[`data.${key}`] = at
  return JSON.stringify(pins)
}

/** What our own cursors carry: `Date#toISOString()` output. */
export const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

export const escapeLike = (text: string) => text.replace(/[\\%_]/g, (char) => `\\${char}`)

export interface ContactMemberships {
  readonly segments: ReadonlyArray<{ readonly id: string; readonly name: string; readonly enteredAt: string }>
  readonly executions: ReadonlyArray<{
    readonly id: string
    readonly workflow: { readonly id: string; readonly name: string }
    readonly status: string
    readonly startedAt: string
    readonly finishedAt: string | null
  }>
}

export class Contacts extends Context.Service<Contacts, {
  readonly upsert: (input: UpsertInput) => Effect.Effect<UpsertResult, PersistenceError | ContactDataTooLarge>
  /**
   * `upsert` for several addresses at once, in one statement (one per retry of lost insert races): the
   * same patch and subscription for each, a change message each, results in the order of `emails`.
   */
  readonly upsertMany: (input: UpsertManyInput) => Effect.Effect<ReadonlyArray<UpsertManyResult>, PersistenceError>
  readonly get: (projectId: string, id: string) => Effect.Effect<Contact | undefined, PersistenceError>
  /** A contact found by id alone, for links that carry only the (signed) id; callers verify the signature. */
  readonly locate: (id: string) => Effect.Effect<{ readonly projectId: string; readonly contact: Contact } | undefined, PersistenceError>
  readonly update: (
    projectId: string,
    id: string,
    input: UpdateInput
  ) => Effect.Effect<Contact | undefined, DuplicateEmail | PersistenceError | ContactDataTooLarge>
  readonly remove: (projectId: string, id: string) => Effect.Effect<boolean, PersistenceError>
  readonly list: (projectId: string, query: ListQuery) => Effect.Effect<ListPage, InvalidCursor | PersistenceError>
  readonly lookup: (
    projectId: string,
    emails: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<Contact>, PersistenceError>
  readonly fields: (projectId: string) => Effect.Effect<ReadonlyArray<FieldDescriptor>, PersistenceError>
  readonly fieldExists: (projectId: string, field: string) => Effect.Effect<boolean, PersistenceError>
  readonly fieldValues: (
    projectId: string,
    field: string,
    page: number,
    pageSize: number
  ) => Effect.Effect<{ readonly values: ReadonlyArray<unknown>; readonly total: number }, PersistenceError>
  readonly deleteField: (projectId: string, field: string) => Effect.Effect<number, PersistenceError>
  /** The segments a contact is in now and its workflow executions (newest first, at most 100). */
  readonly memberships: (projectId: string, id: string) => Effect.Effect<ContactMemberships, PersistenceError>
}>()("app/store/Contacts") {
  static readonly layer = Layer.effect(
    Contacts,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* Clock.Clock
      const outbox = yield* Outbox

      const fieldTypesJson = (patch: DataPatch) => JSON.stringify(inferFieldTypes(patch.set))
      /** The `patched` row keeps within the contact data limit (or does not grow). */
      const withinDataLimit = sql.literal(
        `(octet_length(patched.data::text) <= ${MAX_CONTACT_DATA_BYTES} OR octet_length(patched.data::text) <= patched.before)`
      )

      /**
       * One statement: lock the existing row (reading its previous state), update it or insert a new
       * one, record inferred field types, and commit the change message(s) to the outbox. Two writers
       * inserting the same new email race on the unique index; the loser's insert does nothing and it
       * simply runs again, now finding the row.
       */
      const upsertOnce = (input: UpsertInput) => {
        const nowMs = clock.currentTimeMillisUnsafe()
        const now = new Date(nowMs).toISOString()
        const pins = pinsOf(input.patch, input.subscribed, nowMs)
        const set = JSON.stringify(input.patch.set)
        const remove = JSON.stringify(input.patch.remove)
        return sql<ContactRow & { inserted: boolean; previous_subscribed: boolean | null; too_large: boolean }>`
          WITH old AS (
            SELECT id, subscribed, data FROM contacts
            WHERE project_id = ${input.projectId} AND email = ${input.email}
            FOR UPDATE
          ), patched AS (
            SELECT old.id, old.subscribed,
                   (old.data - ARRAY(SELECT jsonb_array_elements_text(${remove}::jsonb))) || ${set}::jsonb AS data,
                   octet_length(old.data::text) AS before
            FROM old
          ), upd AS (
            UPDATE contacts c SET
              subscribed = COALESCE(${input.subscribed ?? null}::boolean, c.subscribed),
              data = patched.data,
              pinned_at = c.pinned_at || ${pins}::jsonb,
              updated_at = ${now}::timestamptz
            FROM patched WHERE c.id = patched.id AND ${withinDataLimit}
            RETURNING c.id, c.email, c.subscribed, c.snoozed_until, c.data, c.created_at, c.updated_at,
                      false AS inserted, patched.subscribed AS previous_subscribed
          ), ins AS (
            INSERT INTO contacts (id, project_id, email, subscribed, data, pinned_at, created_at, updated_at)
            SELECT ${uuidv7()}, ${input.projectId}, ${input.email}, ${input.subscribed ?? input.subscribedByDefault},
                   ${set}::jsonb, ${pins}::jsonb, ${now}::timestamptz, ${now}::timestamptz
            WHERE NOT EXISTS (SELECT 1 FROM old)
            ON CONFLICT (project_id, email) DO NOTHING
            RETURNING id, email, subscribed, snoozed_until, data, created_at, updated_at,
                      true AS inserted, NULL::boolean AS previous_subscribed
          ), up AS (
            SELECT id, email, subscribed, snoozed_until, data, created_at, updated_at, inserted, previous_subscribed FROM upd
            UNION ALL
            SELECT id, email, subscribed, snoozed_until, data, created_at, updated_at, inserted, previous_subscribed FROM ins
          ), fields AS (
            INSERT INTO contact_fields (project_id, key, type)
            SELECT ${input.projectId}, f->>0, f->>1 FROM jsonb_array_elements(${fieldTypesJson(input.patch)}::jsonb) f
            WHERE EXISTS (SELECT 1 FROM up)
            ON CONFLICT DO NOTHING
          ), change AS (
            INSERT INTO outbox (id, subject, payload)
            SELECT ${uuidv7()}::uuid, ${outbox.contactSubjectSql(input.projectId, "up.id", "contact")}, jsonb_build_object(
                'kind', 'contact',
                'type', CASE WHEN up.inserted THEN 'contact.created' ELSE 'contact.updated' END,
                'projectId', ${input.projectId}::text,
                'contactId', up.id,
                'source', ${input.source}::text,
                'at', ${now}::text,
                'previousSubscribed', COALESCE(up.previous_subscribed, ${input.newContactBaseline ?? null}::boolean),
                'setKeys', ${JSON.stringify(Object.keys(input.patch.set))}::jsonb,
                'removedKeys', ${remove}::jsonb,
                'contact', jsonb_build_object('id', up.id, 'email', up.email, 'subscribed', up.subscribed,
                                              'createdAt', up.created_at, 'updatedAt', up.updated_at)
              )
            FROM up
          )
          SELECT id, email, subscribed, snoozed_until, data, created_at, updated_at, inserted, previous_subscribed,
                 false AS too_large
          FROM up
          UNION ALL
          -- The contact exists but the change would grow its data past the limit: nothing was written.
          SELECT patched.id, NULL, NULL, NULL, NULL, NULL, NULL, false, NULL, true FROM patched
          WHERE NOT EXISTS (SELECT 1 FROM upd)`
      }

      const upsert = Effect.fn("Contacts.upsert")(function*(input: UpsertInput) {
        for (let attempt = 1;; attempt++) {
          const [row] = yield* upsertOnce(input)
          if (row?.too_large) return yield* new ContactDataTooLarge({ contactId: row.id })
          if (row) {
            return {
              contact: toContact(row),
              isNew: row.inserted,
              previousSubscribed: row.previous_subscribed ?? undefined
            }
          }
          if (attempt >= 5) return yield* Effect.die(new Error(`upsert of ${input.email} kept losing races`))
        }
      }, mapSqlError)

      /**
       * `upsertOnce` set-wise: the existing rows locked in id order (as every locker locks), updated, the
       * missing ones inserted in address order (two requests creating the same contacts wait for each
       * other in one order), a change message per contact in the order given. An address whose insert
       * lost a race to another writer is absent from the answer (the caller runs it again).
       */
      const upsertManyOnce = (input: UpsertManyInput, emails: ReadonlyArray<string>) => {
        const nowMs = clock.currentTimeMillisUnsafe()
        const now = new Date(nowMs).toISOString()
        const pins = pinsOf(input.patch, input.subscribed, nowMs)
        const set = JSON.stringify(input.patch.set)
        const remove = JSON.stringify(input.patch.remove)
        const rows = JSON.stringify(emails.map((email, n) => ({ email, n, id: uuidv7(), out: uuidv7() })))
        return sql<
          ContactRow & { n: number; inserted: boolean; previous_subscribed: boolean | null; too_large: boolean }
        >`
          WITH input AS (
            SELECT x.email, x.n, x.id, x.out FROM jsonb_to_recordset(${rows}::jsonb) AS x(email text, n int, id uuid, out uuid)
          ), old AS (
            SELECT id, email, subscribed, data FROM contacts
            WHERE project_id = ${input.projectId} AND email IN (SELECT email FROM input)
            ORDER BY id
            FOR UPDATE
          ), patched AS (
            SELECT old.id, old.subscribed,
                   (old.data - ARRAY(SELECT jsonb_array_elements_text(${remove}::jsonb))) || ${set}::jsonb AS data,
                   octet_length(old.data::text) AS before
            FROM old
          ), upd AS (
            UPDATE contacts c SET
              subscribed = COALESCE(${input.subscribed ?? null}::boolean, c.subscribed),
              data = patched.data,
              pinned_at = c.pinned_at || ${pins}::jsonb,
              updated_at = ${now}::timestamptz
            FROM patched WHERE c.id = patched.id AND ${withinDataLimit}
            RETURNING c.id, c.email, c.subscribed, c.snoozed_until, c.data, c.created_at, c.updated_at,
                      false AS inserted, patched.subscribed AS previous_subscribed
          ), ins AS (
            INSERT INTO contacts (id, project_id, email, subscribed, data, pinned_at, created_at, updated_at)
            SELECT input.id, ${input.projectId}, input.email, ${input.subscribed ?? input.subscribedByDefault},
                   ${set}::jsonb, ${pins}::jsonb, ${now}::timestamptz, ${now}::timestamptz
            FROM input WHERE NOT EXISTS (SELECT 1 FROM old WHERE old.email = input.email)
            ORDER BY input.email
            ON CONFLICT (project_id, email) DO NOTHING
            RETURNING id, email, subscribed, snoozed_until, data, created_at, updated_at,
                      true AS inserted, NULL::boolean AS previous_subscribed
          ), up AS (
            SELECT u.id, u.email, u.subscribed, u.snoozed_until, u.data, u.created_at, u.updated_at, u.inserted,
                   u.previous_subscribed, input.n, input.out
            FROM (SELECT * FROM upd UNION ALL SELECT * FROM ins) u JOIN input ON input.email = u.email
          ), fields AS (
            INSERT INTO contact_fields (project_id, key, type)
            SELECT ${input.projectId}, f->>0, f->>1 FROM jsonb_array_elements(${fieldTypesJson(input.patch)}::jsonb) f
            WHERE EXISTS (SELECT 1 FROM up)
            ON CONFLICT DO NOTHING
          ), change AS (
            INSERT INTO outbox (id, subject, payload)
            SELECT up.out, ${outbox.contactSubjectSql(input.projectId, "up.id", "contact")}, jsonb_build_object(
                'kind', 'contact',
                'type', CASE WHEN up.inserted THEN 'contact.created' ELSE 'contact.updated' END,
                'projectId', ${input.projectId}::text,
                'contactId', up.id,
                'source', ${input.source}::text,
                'at', ${now}::text,
                'previousSubscribed', COALESCE(up.previous_subscribed, ${input.newContactBaseline ?? null}::boolean),
                'setKeys', ${JSON.stringify(Object.keys(input.patch.set))}::jsonb,
                'removedKeys', ${remove}::jsonb,
                'contact', jsonb_build_object('id', up.id, 'email', up.email, 'subscribed', up.subscribed,
                                              'createdAt', up.created_at, 'updatedAt', up.updated_at)
              )
            FROM up
            ORDER BY up.n
          )
          SELECT id, email, subscribed, snoozed_until, data, created_at, updated_at, n, inserted, previous_subscribed,
                 false AS too_large
          FROM up
          UNION ALL
          -- The contact exists but the change would grow its data past the limit: nothing was written.
          SELECT patched.id, old.email, NULL, NULL, NULL, NULL, NULL, NULL, false, NULL, true
          FROM patched JOIN old ON old.id = patched.id
          WHERE NOT EXISTS (SELECT 1 FROM upd WHERE upd.id = patched.id)`
      }

      const upsertMany = Effect.fn("Contacts.upsertMany")(function*(input: UpsertManyInput) {
        const answered = new Map<string, UpsertManyResult>()
        let left: ReadonlyArray<string> = input.emails
        for (let attempt = 1; left.length > 0; attempt++) {
          if (attempt > 5) return yield* Effect.die(new Error(`upsert of ${left[0]} kept losing races`))
          for (const row of yield* upsertManyOnce(input, left)) {
            answered.set(
              row.email,
              row.too_large
                ? { email: row.email, tooLarge: new ContactDataTooLarge({ contactId: row.id }) }
                : {
                  email: row.email,
                  upserted: { contact: toContact(row), isNew: row.inserted, previousSubscribed: row.previous_subscribed ?? undefined }
                }
            )
          }
          left = left.filter((email) => !answered.has(email))
        }
        return input.emails.map((email) => answered.get(email)!)
      }, mapSqlError)

      const get = Effect.fn("Contacts.get")(function*(projectId: string, id: string) {
        const rows = yield* sql<ContactRow>`
          SELECT id, email, subscribed, snoozed_until, data, created_at, updated_at
          FROM contacts WHERE project_id = ${projectId} AND id = ${id}`
        return rows[0] ? toContact(rows[0]) : undefined
      }, mapSqlError)

      const locate = Effect.fn("Contacts.locate")(function*(id: string) {
        if (!isUuid(id)) return undefined
        const rows = yield* sql<ContactRow & { project_id: string }>`
          SELECT id, project_id, email, subscribed, snoozed_until, data, created_at, updated_at
          FROM contacts WHERE id = ${id}`
        return rows[0] ? { projectId: rows[0].project_id, contact: toContact(rows[0]) } : undefined
      }, mapSqlError)

      const update = Effect.fn("Contacts.update")(function*(projectId: string, id: string, input: UpdateInput) {
        const nowMs = clock.currentTimeMillisUnsafe()
        const now = new Date(nowMs).toISOString()
        const pins = pinsOf(input.patch, input.subscribed, nowMs)
        const rows = yield* sql<ContactRow & { previous_subscribed: boolean; too_large: boolean }>`
          WITH patched AS (
            SELECT id, subscribed, email,
                   (data - ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(input.patch.remove)}::jsonb)))
                     || ${JSON.stringify(input.patch.set)}::jsonb AS data,
                   octet_length(data::text) AS before
            FROM contacts WHERE project_id = ${projectId} AND id = ${id} FOR UPDATE
          ), up AS (
            UPDATE contacts c SET
              email = COALESCE(${input.email ?? null}::text, c.email),
              subscribed = COALESCE(${input.subscribed ?? null}::boolean, c.subscribed),
              data = patched.data,
              pinned_at = c.pinned_at || ${pins}::jsonb,
              updated_at = ${now}::timestamptz
            FROM patched
            WHERE c.id = patched.id AND ${withinDataLimit}
            RETURNING c.id, c.email, c.subscribed, c.snoozed_until, c.data, c.created_at, c.updated_at,
                      patched.subscribed AS previous_subscribed, patched.email AS previous_email
          ), fields AS (
            INSERT INTO contact_fields (project_id, key, type)
            SELECT ${projectId}, f->>0, f->>1 FROM jsonb_array_elements(${fieldTypesJson(input.patch)}::jsonb) f
            WHERE EXISTS (SELECT 1 FROM up)
            ON CONFLICT DO NOTHING
          ), change AS (
            INSERT INTO outbox (id, subject, payload)
            SELECT ${uuidv7()}, ${outbox.contactSubjectSql(projectId, "up.id", "contact")}, jsonb_build_object(
              'kind', 'contact',
              'type', 'contact.updated',
              'projectId', ${projectId}::text,
              'contactId', up.id,
              'source', ${input.source ?? "api.contacts"}::text,
              'at', ${now}::text,
              'previousSubscribed', up.previous_subscribed,
              'previousEmail', up.previous_email,
              'setKeys', ${JSON.stringify(Object.keys(input.patch.set))}::jsonb,
              'removedKeys', ${JSON.stringify(input.patch.remove)}::jsonb,
              'contact', jsonb_build_object('id', up.id, 'email', up.email, 'subscribed', up.subscribed,
                                            'createdAt', up.created_at, 'updatedAt', up.updated_at))
            FROM up
          )
          SELECT id, email, subscribed, snoozed_until, data, created_at, updated_at, previous_subscribed, previous_email,
                 false AS too_large
          FROM up
          UNION ALL
          SELECT patched.id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, true FROM patched
          WHERE NOT EXISTS (SELECT 1 FROM up)`.pipe(
          Effect.catchTag(
            "SqlError",
            (error): Effect.Effect<never, DuplicateEmail | SqlError.SqlError> =>
              error.reason._tag === "UniqueViolation" ? Effect.fail(DuplicateEmail.of()) : Effect.fail(error)
          )
        )
        if (rows[0]?.too_large) return yield* new ContactDataTooLarge({ contactId: rows[0].id })
        return rows[0] ? toContact(rows[0]) : undefined
      }, mapSqlError)

      const remove = Effect.fn("Contacts.remove")(function*(projectId: string, id: string) {
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        const rows = yield* sql<{ id: string }>`
          WITH gone AS (
            DELETE FROM contacts WHERE project_id = ${projectId} AND id = ${id}
            RETURNING id, email, subscribed
          ), change AS (
            INSERT INTO outbox (id, subject, payload)
            SELECT ${uuidv7()}, ${outbox.contactSubjectSql(projectId, "gone.id", "contact")}, jsonb_build_object(
              'kind', 'contact', 'type', 'contact.deleted', 'projectId', ${projectId}::text,
              'contactId', gone.id, 'source', 'api.contacts', 'at', ${now}::text,
              'contact', jsonb_build_object('id', gone.id, 'email', gone.email, 'subscribed', gone.subscribed))
            FROM gone
          )
          SELECT id FROM gone`
        return rows.length > 0
      }, mapSqlError)

      const badCursor = InvalidCursor.of("cursor is not a cursor returned by this list (with this sort)")

      const list = Effect.fn("Contacts.list")(function*(projectId: string, query: ListQuery) {
        const conditions: Array<Statement.Fragment> = [sql`project_id = ${projectId}`]
        if (query.search) conditions.push(sql`email LIKE ${`%${escapeLike(query.search.toLowerCase())}%`}`)
        if (query.subscribed !== undefined) conditions.push(sql`subscribed = ${query.subscribed}`)
        if (query.segment) conditions.push(segmentMembersSql(sql, query.segment, yield* Clock.currentTimeMillis))
        if (query.data) {
          const value = sql`(c.data #> ${pgArray(query.data.path)}::text[])`
          conditions.push(
            query.data.equals === undefined
              ? sql`${value} IS NOT NULL AND ${value} <> 'null'::jsonb`
              : sql`${value} #>> '{}' = ${query.data.equals}`
          )
        }
        const filters = [...conditions]
        const after = query.dir === "asc" ? ">" : "<"
        if (query.cursor !== undefined) {
          if (query.sort === "email") {
            const values = decodeCursor(query.cursor, 1)
            if (!values) return yield* badCursor
            conditions.push(sql`email ${sql.literal(after)} ${values[0]!}`)
          } else {
            const values = decodeCursor(query.cursor, 2)
            if (!values || !ISO_INSTANT.test(values[0]!) || !isUuid(values[1]!)) return yield* badCursor
            conditions.push(sql`(created_at, id) ${sql.literal(after)} (${values[0]!}::timestamptz, ${values[1]!}::uuid)`)
          }
        }
        const direction = query.dir === "asc" ? "ASC" : "DESC"
        const orderBy = query.sort === "email"
          ? sql.literal(`email ${direction}`)
          : sql.literal(`created_at ${direction}, id ${direction}`)
        // The page and (on the first page) the total, on two connections at once: the count is the slow one.
        const [rows, total] = yield* Effect.all([
          sql<ContactRow>`
            SELECT id, email, subscribed, snoozed_until, data, created_at, updated_at
            FROM contacts c WHERE ${sql.and(conditions)} ORDER BY ${orderBy} LIMIT ${query.limit + 1}`,
          query.cursor === undefined
            ? Effect.map(
              sql<{ n: number }>`SELECT count(*)::int AS n FROM contacts c WHERE ${sql.and(filters)}`,
              ([count]) => count?.n ?? 0
            )
            : Effect.succeed(0)
        ], { concurrency: 2 })
        const hasMore = rows.length > query.limit
        const data = rows.slice(0, query.limit).map(toContact)
        const last = data[data.length - 1]
        return {
          data,
          hasMore,
          cursor: hasMore && last
            ? encodeCursor(query.sort === "email" ? [last.email] : [last.createdAt, last.id])
            : null,
          total
        }
      }, mapSqlError)

      const lookup = Effect.fn("Contacts.lookup")(function*(projectId: string, emails: ReadonlyArray<string>) {
        if (emails.length === 0) return []
        const rows = yield* sql<ContactRow>`
          SELECT id, email, subscribed, snoozed_until, data, created_at, updated_at FROM contacts
          WHERE project_id = ${projectId} AND email IN ${sql.in(emails)}`
        return rows.map(toContact)
      }, mapSqlError)

      const fields = Effect.fn("Contacts.fields")(function*(projectId: string) {
        const [totals] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM contacts WHERE project_id = ${projectId}`
        const total = totals?.n ?? 0
        const custom = yield* sql<{ key: string; type: string; covered: number }>`
          WITH top AS (
            SELECT k AS key, count(*)::int AS covered
            FROM contacts c, jsonb_object_keys(c.data) k
            WHERE c.project_id = ${projectId}
            GROUP BY k
          )
          SELECT f.key, f.type,
                 CASE WHEN position('.' in f.key) = 0 THEN COALESCE(top.covered, 0)
                      ELSE (SELECT count(*)::int FROM contacts c
                            WHERE c.project_id = ${projectId} AND c.data #> string_to_array(f.key, '.') IS NOT NULL)
                 END AS covered
          FROM contact_fields f LEFT JOIN top ON top.key = f.key
          WHERE f.project_id = ${projectId}
          ORDER BY f.key`
        const coverage = (covered: number) => (total === 0 ? 0 : Math.round((covered / total) * 10_000) / 10_000)
        return [
          // Every contact has them, so they cover the project even before it has contacts (as the reference reports them).
          ...STANDARD_FIELDS.map(([field, type]) => ({ field, type, isCustom: false, coverage: 1 })),
          ...custom.map((row) => ({
            field: `data.${row.key}`,
            type: row.type,
            isCustom: true,
            coverage: coverage(row.covered)
          }))
        ]
      }, mapSqlError)

      const fieldExists = Effect.fn("Contacts.fieldExists")(function*(projectId: string, field: string) {
        if (isStandardField(field)) return true
        const path = customFieldPath(field)
        if (!path) return false
        const rows = yield* sql`SELECT 1 FROM contact_fields WHERE project_id = ${projectId} AND key = ${path.join(".")}`
        return rows.length > 0
      }, mapSqlError)

      const fieldValues = Effect.fn("Contacts.fieldValues")(
        function*(projectId: string, field: string, page: number, pageSize: number) {
          const offset = (page - 1) * pageSize
          const value = isStandardField(field)
            ? sql.literal(`to_jsonb(${STANDARD_COLUMNS[field]})`)
            : sql`data #> ${`{${customFieldPath(field)!.map((p) => `"${p.replace(/["\\]/g, "\\$&")}"`).join(",")}}`}::text[]`
          const rows = yield* sql<{ v: unknown; total: number }>`
            WITH vals AS (
              SELECT DISTINCT ${value} AS v FROM contacts WHERE project_id = ${projectId}
            )
            SELECT v, count(*) OVER ()::int AS total FROM vals WHERE v IS NOT NULL AND v <> 'null'::jsonb
            ORDER BY v LIMIT ${pageSize} OFFSET ${offset}`
          let total = rows[0]?.total ?? 0
          if (rows.length === 0 && offset > 0) {
            const [count] = yield* sql<{ n: number }>`
              SELECT count(DISTINCT ${value})::int AS n FROM contacts
              WHERE project_id = ${projectId} AND ${value} IS NOT NULL AND ${value} <> 'null'::jsonb`
            total = count?.n ?? 0
          }
          return {
            values: rows.map((row) => row.v),
            total
          }
        },
        mapSqlError
      )

      const deleteField = Effect.fn("Contacts.deleteField")(function*(projectId: string, field: string) {
        const path = customFieldPath(field)!
        const key = path.join(".")
        const pgPath = `{${path.map((p) => `"${p.replace(/["\\]/g, "\\$&")}"`).join(",")}}`
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        return yield* sql.withTransaction(Effect.gen(function*() {
          const updated = yield* sql<{ n: number }>`
            WITH changed AS (
              UPDATE contacts SET data = data #- ${pgPath}::text[], updated_at = ${now}::timestamptz
              WHERE project_id = ${projectId} AND data #> ${pgPath}::text[] IS NOT NULL
              RETURNING id
            )
            SELECT count(*)::int AS n FROM changed`
          yield* sql`DELETE FROM contact_fields
                     WHERE project_id = ${projectId} AND (key = ${key} OR key LIKE ${`${escapeLike(key)}.%`})`
          // One message for the whole project rather than one per contact: consumers re-read as needed.
          yield* outbox.append([{ kind: "contact", type: "contact.field_deleted", projectId, field, at: now }])
          return updated[0]?.n ?? 0
        }))
      }, mapSqlError)

      const memberships = Effect.fn("Contacts.memberships")(function*(projectId: string, id: string) {
        // Both through the contact's indexes: segment_memberships_contact, and workflow_executions_contact per workflow.
        const segments = yield* sql<{ id: string; name: string; entered_at: Date }>`
          SELECT s.id, s.name, m.entered_at FROM segment_memberships m
          JOIN segments s ON s.id = m.segment_id AND s.project_id = ${projectId}
          WHERE m.contact_id = ${id} AND m.exited_at IS NULL
          ORDER BY s.name, s.id`
        const executions = yield* sql<
          { id: string; workflow_id: string; name: string; status: string; started_at: Date; finished_at: Date | null }
        >`
          SELECT x.id, w.id AS workflow_id, w.name, x.status, x.started_at, x.finished_at
          FROM workflows w JOIN workflow_executions x ON x.workflow_id = w.id AND x.contact_id = ${id}
          WHERE w.project_id = ${projectId}
          ORDER BY x.started_at DESC, x.id DESC LIMIT 100`
        return {
          segments: segments.map((row) => ({ id: row.id, name: row.name, enteredAt: new Date(row.entered_at).toISOString() })),
          executions: executions.map((row) => ({
            id: row.id,
            workflow: { id: row.workflow_id, name: row.name },
            status: row.status,
            startedAt: new Date(row.started_at).toISOString(),
            finishedAt: row.finished_at === null ? null : new Date(row.finished_at).toISOString()
          }))
        }
      }, mapSqlError)

      return Contacts.of({
        upsert,
        upsertMany,
        get,
        locate,
        update,
        remove,
        list,
        lookup,
        fields,
        fieldExists,
        fieldValues,
        deleteField,
        memberships
      })
    })
  )
}
