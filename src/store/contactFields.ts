/**
 * The contacts' fields: the standard ones and the custom-data keys recorded as writes first saw them,
 * how much of the project each covers, the distinct values one holds, and removing one from every contact.
 */
import { Clock, Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { FieldType } from "../domain/customData.ts"
import { pgArray } from "../lib/pgArray.ts"
import { Outbox } from "../stream/Outbox.ts"
import { CountRow, decodeRows } from "./columns.ts"
import { escapeLike } from "./pagedList.ts"
import { mapSqlError } from "./PersistenceError.ts"

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

const CustomFieldRow = Schema.Struct({ key: Schema.String, type: Schema.String, covered: Schema.Number })

/** A distinct value of a field (any JSON value), with how many there are. */
const ValueRow = Schema.Struct({ v: Schema.Unknown, total: Schema.Number })

const counts = decodeRows(CountRow)

/** The field methods of the Contacts repository. */
export const makeContactFields = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const outbox = yield* Outbox

  const fields = Effect.fn("Contacts.fields")(function*(projectId: string) {
    const [totals] = yield* counts(sql`SELECT count(*)::int AS n FROM contacts WHERE project_id = ${projectId}`)
    const total = totals?.n ?? 0
    const custom = yield* decodeRows(CustomFieldRow)(sql`
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
      ORDER BY f.key`)
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
        : sql`data #> ${pgArray(customFieldPath(field)!)}::text[]`
      const rows = yield* decodeRows(ValueRow)(sql`
        WITH vals AS (
          SELECT DISTINCT ${value} AS v FROM contacts WHERE project_id = ${projectId}
        )
        SELECT v, count(*) OVER ()::int AS total FROM vals WHERE v IS NOT NULL AND v <> 'null'::jsonb
        ORDER BY v LIMIT ${pageSize} OFFSET ${offset}`)
      let total = rows[0]?.total ?? 0
      if (rows.length === 0 && offset > 0) {
        const [count] = yield* counts(sql`
          SELECT count(DISTINCT ${value})::int AS n FROM contacts
          WHERE project_id = ${projectId} AND ${value} IS NOT NULL AND ${value} <> 'null'::jsonb`)
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
    const pgPath = pgArray(path)
    const now = new Date(yield* Clock.currentTimeMillis).toISOString()
    return yield* sql.withTransaction(Effect.gen(function*() {
      const updated = yield* counts(sql`
        WITH changed AS (
          UPDATE contacts SET data = data #- ${pgPath}::text[], updated_at = ${now}::timestamptz
          WHERE project_id = ${projectId} AND data #> ${pgPath}::text[] IS NOT NULL
          RETURNING id
        )
        SELECT count(*)::int AS n FROM changed`)
      yield* sql`DELETE FROM contact_fields
                 WHERE project_id = ${projectId} AND (key = ${key} OR key LIKE ${`${escapeLike(key)}.%`})`
      // One message for the whole project rather than one per contact: consumers re-read as needed.
      yield* outbox.append([{ kind: "contact", type: "contact.field_deleted", projectId, field, at: now }])
      return updated[0]?.n ?? 0
    }))
  }, mapSqlError)

  return { fields, fieldExists, fieldValues, deleteField }
})
