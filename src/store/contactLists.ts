/**
 * Reading contacts: one by id (within a project, or by id alone for signed links), by address, a page of a
 * filtered, sorted list with keyset cursors, and the segments and workflow executions one is in.
 */
import { Clock, Effect, Schema } from "effect"
import { SqlClient, SqlSchema, type Statement } from "effect/sql"
import { InvalidCursor } from "../domain/errors.ts"
import { isUuid } from "../domain/ids.ts"
import { pgArray } from "../lib/pgArray.ts"
import { segmentMembersSql } from "./conditionSql.ts"
import { CountRow, decodeRows, NullableTimestamp, Timestamp } from "./columns.ts"
import { CONTACT_COLUMNS, ContactRow, type ListQuery, toContact } from "./contactRecords.ts"
import { decodeCursor, encodeCursor, ISO_INSTANT } from "./cursor.ts"
import { escapeLike } from "./pagedList.ts"
import { mapSqlError } from "./PersistenceError.ts"

const LocatedRow = Schema.Struct({ ...ContactRow.fields, project_id: Schema.String })

const MembershipRow = Schema.Struct({ id: Schema.String, name: Schema.String, entered_at: Timestamp })

const ExecutionRow = Schema.Struct({
  id: Schema.String,
  workflow_id: Schema.String,
  name: Schema.String,
  status: Schema.String,
  started_at: Timestamp,
  finished_at: NullableTimestamp
})

const InProject = Schema.Struct({ projectId: Schema.String, id: Schema.String })

/** The reading methods of the Contacts repository. */
export const makeContactLists = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const contactRows = decodeRows(ContactRow)

  const byId = SqlSchema.findAll({
    Request: InProject,
    Result: ContactRow,
    execute: ({ id, projectId }) => sql`SELECT ${sql.literal(CONTACT_COLUMNS)} FROM contacts WHERE project_id = ${projectId} AND id = ${id}`
  })

  const byIdAlone = SqlSchema.findAll({
    Request: Schema.String,
    Result: LocatedRow,
    execute: (id) => sql`SELECT project_id, ${sql.literal(CONTACT_COLUMNS)} FROM contacts WHERE id = ${id}`
  })

  const byEmails = SqlSchema.findAll({
    Request: Schema.Struct({ projectId: Schema.String, emails: Schema.Array(Schema.String) }),
    Result: ContactRow,
    execute: ({ emails, projectId }) =>
      sql`SELECT ${sql.literal(CONTACT_COLUMNS)} FROM contacts WHERE project_id = ${projectId} AND email IN ${sql.in(emails)}`
  })

  const segmentsOf = SqlSchema.findAll({
    Request: InProject,
    Result: MembershipRow,
    execute: ({ id, projectId }) =>
      sql`
        SELECT s.id, s.name, m.entered_at FROM segment_memberships m
        JOIN segments s ON s.id = m.segment_id AND s.project_id = ${projectId}
        WHERE m.contact_id = ${id} AND m.exited_at IS NULL
        ORDER BY s.name, s.id`
  })

  const executionsOf = SqlSchema.findAll({
    Request: InProject,
    Result: ExecutionRow,
    execute: ({ id, projectId }) =>
      sql`
        SELECT x.id, w.id AS workflow_id, w.name, x.status, x.started_at, x.finished_at
        FROM workflows w JOIN workflow_executions x ON x.workflow_id = w.id AND x.contact_id = ${id}
        WHERE w.project_id = ${projectId}
        ORDER BY x.started_at DESC, x.id DESC LIMIT 100`
  })

  const get = Effect.fn("Contacts.get")(function*(projectId: string, id: string) {
    const [row] = yield* byId({ projectId, id })
    return row ? toContact(row) : undefined
  }, mapSqlError)

  const locate = Effect.fn("Contacts.locate")(function*(id: string) {
    if (!isUuid(id)) return undefined
    const [row] = yield* byIdAlone(id)
    return row ? { projectId: row.project_id, contact: toContact(row) } : undefined
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
      contactRows(sql`
        SELECT ${sql.literal(CONTACT_COLUMNS)}
        FROM contacts c WHERE ${sql.and(conditions)} ORDER BY ${orderBy} LIMIT ${query.limit + 1}`),
      query.cursor === undefined
        ? Effect.map(
          decodeRows(CountRow)(sql`SELECT count(*)::int AS n FROM contacts c WHERE ${sql.and(filters)}`),
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
    return (yield* byEmails({ projectId, emails })).map(toContact)
  }, mapSqlError)

  const memberships = Effect.fn("Contacts.memberships")(function*(projectId: string, id: string) {
    // Both through the contact's indexes: segment_memberships_contact, and workflow_executions_contact per workflow.
    const segments = yield* segmentsOf({ projectId, id })
    const executions = yield* executionsOf({ projectId, id })
    return {
      segments: segments.map((row) => ({ id: row.id, name: row.name, enteredAt: row.entered_at })),
      executions: executions.map((row) => ({
        id: row.id,
        workflow: { id: row.workflow_id, name: row.name },
        status: row.status,
        startedAt: row.started_at,
        finishedAt: row.finished_at
      }))
    }
  }, mapSqlError)

  return { get, locate, list, lookup, memberships }
})
