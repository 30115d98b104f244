/**
 * Writing contacts. Every write commits, in the same statement, an outbox row describing the change
 * (published to the project's partition of stream IN by the OutboxRelay), and records the inferred type
 * of any custom-data key seen for the first time. A direct write pins the fields it sets
 * (migrations/0003_contact_pins.sql).
 */
import { Clock, Effect, Schema } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { type DataPatch, inferFieldTypes, MAX_CONTACT_DATA_BYTES } from "../domain/customData.ts"
import { DuplicateEmail } from "../domain/errors.ts"
import { uuidv7 } from "../domain/ids.ts"
import { Outbox } from "../stream/Outbox.ts"
import {
  ContactDataTooLarge,
  ContactRow,
  toContact,
  type UpdateInput,
  type UpsertInput,
  type UpsertManyInput,
  type UpsertManyResult
} from "./contactRecords.ts"
import { decodeRows, IdRow } from "./columns.ts"
import { mapSqlError } from "./PersistenceError.ts"

/** The contact's data would outgrow the limit: nothing was written (its other columns are NULL). */
const TooLargeRow = Schema.Struct({ id: Schema.String, too_large: Schema.Literal(true) })

/** A contact written by an upsert: the row as it is now, and whether it was new or how it was before. */
const UpsertedRow = Schema.Struct({
  ...ContactRow.fields,
  inserted: Schema.Boolean,
  previous_subscribed: Schema.NullOr(Schema.Boolean),
  too_large: Schema.Literal(false)
})

/** What upsertManyOnce answers per address (decoded per engine write: a dozen plain fields). */
const decodeUpserts = decodeRows(Schema.Union([UpsertedRow, Schema.Struct({ ...TooLargeRow.fields, email: Schema.String })]))

const UpdatedRow = Schema.Struct({ ...ContactRow.fields, too_large: Schema.Literal(false) })
const decodeUpdates = decodeRows(Schema.Union([UpdatedRow, TooLargeRow]))
const decodeIds = decodeRows(IdRow)

/** The fields a direct write pins. */
const pinsOf = (patch: DataPatch, subscribed: boolean | undefined, at: number): string => {
  const pins: Record<string, number> = {}
  if (subscribed !== undefined) pins["subscribed"] = at
  for (const key of [...Object.keys(patch.set), ...patch.remove]) pins[`data.${key}`] = at
  return JSON.stringify(pins)
}

const fieldTypesJson = (patch: DataPatch) => JSON.stringify(inferFieldTypes(patch.set))

/** The writing methods of the Contacts repository. */
export const makeContactUpserts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const clock = yield* Clock.Clock
  const outbox = yield* Outbox

  /** The `patched` row keeps within the contact data limit (or does not grow). */
  const withinDataLimit = sql.literal(
    `(octet_length(patched.data::text) <= ${MAX_CONTACT_DATA_BYTES} OR octet_length(patched.data::text) <= patched.before)`
  )

  /**
   * One statement: the existing rows locked in id order (as every locker locks, reading their previous
   * state), updated, the missing ones inserted in address order (two requests creating the same contacts
   * wait for each other in one order), inferred field types recorded, and a change message per contact
   * committed to the outbox in the order given. Two writers inserting the same new email race on the
   * unique index: the loser's insert does nothing, its address is absent from the answer, and the caller
   * runs it again, now finding the row.
   */
  const upsertManyOnce = (input: UpsertManyInput, emails: ReadonlyArray<string>) => {
    const nowMs = clock.currentTimeMillisUnsafe()
    const now = new Date(nowMs).toISOString()
    const pins = pinsOf(input.patch, input.subscribed, nowMs)
    const set = JSON.stringify(input.patch.set)
    const remove = JSON.stringify(input.patch.remove)
    const rows = JSON.stringify(emails.map((email, n) => ({ email, n, id: uuidv7(), out: uuidv7() })))
    return decodeUpserts(sql`
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
      WHERE NOT EXISTS (SELECT 1 FROM upd WHERE upd.id = patched.id)`)
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

  /** A single address through `upsertMany`, so one statement holds the logic; an oversized patch fails. */
  const upsert = Effect.fn("Contacts.upsert")(function*(input: UpsertInput) {
    const { email, ...common } = input
    const result = (yield* upsertMany({ ...common, emails: [email] }))[0]!
    if (result.tooLarge !== undefined) return yield* result.tooLarge
    return result.upserted
  })

  const update = Effect.fn("Contacts.update")(function*(projectId: string, id: string, input: UpdateInput) {
    const nowMs = clock.currentTimeMillisUnsafe()
    const now = new Date(nowMs).toISOString()
    const pins = pinsOf(input.patch, input.subscribed, nowMs)
    const rows = yield* decodeUpdates(sql`
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
      WHERE NOT EXISTS (SELECT 1 FROM up)`).pipe(
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
    const rows = yield* decodeIds(sql`
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
      SELECT id FROM gone`)
    return rows.length > 0
  }, mapSqlError)

  return { upsert, upsertMany, update, remove }
})
