/** Reads of stored events (written by project actors, see actors/applyBatch.ts). */
import { Context, Effect, Layer, Schema } from "effect"
import { InvalidCursor } from "../domain/errors.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"
import { SqlClient, SqlSchema } from "effect/sql"
import { CountRow, decodeRows, JsonObject, Timestamp } from "./columns.ts"
import { isUuid } from "../domain/ids.ts"
import { decodeCursor, encodeCursor, ISO_INSTANT } from "./cursor.ts"

export interface StoredEvent {
  readonly id: string
  readonly name: string
  readonly contactId: string
  readonly email: string | null
  readonly data: Record<string, unknown>
  readonly createdAt: string
}

export interface EventPage {
  readonly data: ReadonlyArray<StoredEvent>
  readonly cursor: string | null
  readonly hasMore: boolean
  readonly total: number
}

/** An `events` row with its contact's address, as `list` selects it. */
const EventRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  contact_id: Schema.String,
  email: Schema.NullOr(Schema.String),
  data: JsonObject,
  created_at: Timestamp
})

const toEvent = (row: typeof EventRow.Type): StoredEvent => ({
  id: row.id,
  name: row.name,
  contactId: row.contact_id,
  email: row.email,
  data: row.data,
  createdAt: row.created_at
})

const NameRow = Schema.Struct({ name: Schema.String, count: Schema.Number, last_at: Timestamp })
const DayRow = Schema.Struct({ day: Schema.String, name: Schema.String, count: Schema.Number })

const eventCursor = (event: StoredEvent) => encodeCursor([event.createdAt, event.id])
const decodeEventCursor = (cursor: string): [string, string] | undefined => {
  const values = decodeCursor(cursor, 2)
  return values && ISO_INSTANT.test(values[0]!) && isUuid(values[1]!) ? [values[0]!, values[1]!] : undefined
}

export class Events extends Context.Service<Events, {
  readonly list: (projectId: string, query: {
    readonly limit: number
    readonly cursor: string | undefined
    readonly name: string | undefined
    readonly contactId: string | undefined
  }) => Effect.Effect<EventPage, InvalidCursor | PersistenceError>
  readonly names: (projectId: string) => Effect.Effect<
    ReadonlyArray<{ readonly name: string; readonly count: number; readonly lastSeenAt: string }>,
    PersistenceError
  >
  readonly stats: (projectId: string, from: Date, to: Date) => Effect.Effect<{
    readonly total: number
    readonly byName: ReadonlyArray<{ readonly name: string; readonly count: number }>
    readonly byDay: ReadonlyArray<{ readonly day: string; readonly name: string; readonly count: number }>
  }, PersistenceError>
  readonly nameExists: (projectId: string, name: string) => Effect.Effect<boolean, PersistenceError>
}>()("app/store/Events") {
  static readonly layer = Layer.effect(
    Events,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const eventRows = decodeRows(EventRow)
      const counts = decodeRows(CountRow)

      const namesOf = SqlSchema.findAll({
        Request: Schema.String,
        Result: NameRow,
        execute: (projectId) =>
          sql`
            SELECT name, sum(count)::int AS count, max(last_at) AS last_at
            FROM event_aggregates WHERE project_id = ${projectId}
            GROUP BY name ORDER BY count DESC, name`
      })

      const countsByDay = SqlSchema.findAll({
        Request: Schema.Struct({ projectId: Schema.String, from: Schema.String, to: Schema.String }),
        Result: DayRow,
        execute: ({ from, projectId, to }) =>
          sql`
            SELECT to_char(date_trunc('day', created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day, name, count(*)::int AS count
            FROM events
            WHERE project_id = ${projectId} AND created_at >= ${from}::timestamptz AND created_at < ${to}::timestamptz
            GROUP BY 1, 2 ORDER BY 1, 2`
      })

      const list = Effect.fn("Events.list")(function*(projectId: string, query: {
        readonly limit: number
        readonly cursor: string | undefined
        readonly name: string | undefined
        readonly contactId: string | undefined
      }) {
        const filters = [sql`e.project_id = ${projectId}`]
        if (query.name !== undefined) filters.push(sql`e.name = ${query.name}`)
        if (query.contactId !== undefined) filters.push(sql`e.contact_id = ${query.contactId}`)
        const conditions = [...filters]
        if (query.cursor !== undefined) {
          const cursor = decodeEventCursor(query.cursor)
          if (!cursor) return yield* InvalidCursor.of()
          conditions.push(sql`(e.created_at, e.id) < (${cursor[0]}::timestamptz, ${cursor[1]}::uuid)`)
        }
        const rows = yield* eventRows(sql`
          SELECT e.id, e.name, e.contact_id, c.email, e.data, e.created_at
          FROM events e LEFT JOIN contacts c ON c.id = e.contact_id
          WHERE ${sql.and(conditions)}
          ORDER BY e.created_at DESC, e.id DESC
          LIMIT ${query.limit + 1}`)
        const hasMore = rows.length > query.limit
        const data = rows.slice(0, query.limit).map(toEvent)
        let total = 0
        if (query.cursor === undefined) {
          const [count] = yield* counts(sql`SELECT count(*)::int AS n FROM events e WHERE ${sql.and(filters)}`)
          total = count?.n ?? 0
        }
        return { data, hasMore, cursor: hasMore ? eventCursor(data[data.length - 1]!) : null, total }
      }, mapSqlError)

      const names = Effect.fn("Events.names")(function*(projectId: string) {
        const rows = yield* namesOf(projectId)
        return rows.map((row) => ({ name: row.name, count: row.count, lastSeenAt: row.last_at }))
      }, mapSqlError)

      const stats = Effect.fn("Events.stats")(function*(projectId: string, from: Date, to: Date) {
        const byDay = yield* countsByDay({ projectId, from: from.toISOString(), to: to.toISOString() })
        const totals = new Map<string, number>()
        for (const row of byDay) totals.set(row.name, (totals.get(row.name) ?? 0) + row.count)
        return {
          total: [...totals.values()].reduce((a, b) => a + b, 0),
          byName: [...totals].map(([name, count]) => ({ name, count })).sort((a, b) => b.count - a.count),
          byDay
        }
      }, mapSqlError)

      const nameExists = Effect.fn("Events.nameExists")(function*(projectId: string, name: string) {
        const rows = yield* sql`SELECT 1 FROM event_aggregates WHERE project_id = ${projectId} AND name = ${name} LIMIT 1`
        return rows.length > 0
      }, mapSqlError)

      return Events.of({ list, names, stats, nameExists })
    })
  )
}
