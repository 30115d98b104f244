/**
 * Contacts as CSV (csv-stringify), streamed page by page: each page is one keyset query over
 * (created_at, id), so memory stays flat however many contacts a project has. Columns: email,
 * subscribed, createdAt and one per top-level key of the exported contacts' data. Every cell is written
 * so that the importer reads it back as exactly what was exported (src/domain/imports: formulas escaped,
 * values and keys that would read as something else written as JSON literals), so an export imports
 * back to the same contacts and data.
 */
import { Effect, Option, Schema, Stream } from "effect"
import { SqlClient, type SqlError, type Statement } from "effect/sql"
import { stringify } from "csv-stringify/sync"
import { escapeFormula, valueCell } from "../domain/imports/cells.ts"
import { dataColumnHeader } from "../domain/imports/plan.ts"
import { decodeRows, JsonObject, Timestamp } from "../store/columns.ts"

const PAGE = 1_000

/** A contact as a page selects it. */
const Row = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  subscribed: Schema.Boolean,
  created_at: Timestamp,
  /** Full precision (microseconds), for the next page's key. */
  created_key: Schema.String,
  data: JsonObject
})
const pageRows = decodeRows(Row)
const keyRows = decodeRows(Schema.Struct({ key: Schema.String }))

export const exportContacts = Effect.fnUntraced(function*(projectId: string, members: Statement.Fragment | undefined) {
  const sql = yield* SqlClient.SqlClient
  const filter = members ?? sql`true`
  // The keys the contacts hold (contact_fields cannot tell a top-level `a.b` from the nested `a` → `b`).
  // The stream answers SqlError (what its handler renders); a contacts row that does not decode is a bug, a defect here.
  const keys = (yield* keyRows(sql`
    SELECT DISTINCT jsonb_object_keys(c.data) AS key FROM contacts c
    WHERE c.project_id = ${projectId} AND ${filter} ORDER BY key`).pipe(Effect.catchTag("SchemaError", Effect.die))).map((row) => row.key)
  const header = stringify([["email", "subscribed", "createdAt", ...keys.map(dataColumnHeader)]])

  const page = (after: readonly [string, string] | undefined) =>
    Effect.gen(function*() {
      const rows = yield* pageRows(sql`
        SELECT c.id, c.email, c.subscribed, c.created_at, c.created_at::text AS created_key, c.data FROM contacts c
        WHERE c.project_id = ${projectId} AND ${filter}
          ${after ? sql`AND (c.created_at, c.id) > (${after[0]}::timestamptz, ${after[1]}::uuid)` : sql``}
        ORDER BY c.created_at, c.id LIMIT ${PAGE}`).pipe(Effect.catchTag("SchemaError", Effect.die))
      const text = stringify(
        rows.map((row) => [
          escapeFormula(row.email),
          String(row.subscribed),
          row.created_at,
          ...keys.map((key) => valueCell(row.data[key]))
        ])
      )
      const last = rows[rows.length - 1]
      const next = rows.length === PAGE && last ? Option.some([last.created_key, last.id] as const) : Option.none()
      return [text === "" ? [] : [text], next] as const
    })

  return Stream.concat(
    Stream.make(header),
    Stream.paginate<readonly [string, string] | undefined, string, SqlError.SqlError>(undefined, page)
  ).pipe(Stream.encodeText)
})
