/** Email templates of a project. */
import { ProjectId, TemplateId } from "../domain/identifiers.ts"
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { TemplateInUse } from "../domain/errors.ts"
import { uuidv7 } from "../domain/ids.ts"
import { Timestamp } from "./columns.ts"
import { pagedList, type SortedPage } from "./pagedList.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

export const TEMPLATE_TYPES = ["TRANSACTIONAL", "MARKETING", "HEADLESS"] as const
export type TemplateType = (typeof TEMPLATE_TYPES)[number]

/** What a user writes: everything of a template but its identity and timestamps. */
export interface TemplateInput {
  readonly name: string
  readonly description: string | null
  readonly subject: string
  readonly body: string
  readonly from: string
  readonly fromName: string | null
  readonly replyTo: string | null
  readonly type: TemplateType
}

export interface Template extends TemplateInput {
  readonly id: TemplateId
  readonly projectId: ProjectId
  readonly createdAt: string
  readonly updatedAt: string
}

export interface TemplateListQuery extends SortedPage {
  readonly type: TemplateType | undefined
}

/** The columns a template shares with a campaign (its content), as a row schema's fields (each adds its own branded id). */
export const contentColumns = {
  project_id: ProjectId,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  subject: Schema.String,
  body: Schema.String,
  from_email: Schema.String,
  from_name: Schema.NullOr(Schema.String),
  reply_to: Schema.NullOr(Schema.String),
  type: Schema.Literals(TEMPLATE_TYPES)
}

type ContentRow = Schema.Struct<typeof contentColumns>["Type"]

/** The content columns as the API names them (a template's and a campaign's alike). */
export const contentOf = (row: ContentRow): TemplateInput => ({
  name: row.name,
  description: row.description,
  subject: row.subject,
  body: row.body,
  from: row.from_email,
  fromName: row.from_name,
  replyTo: row.reply_to,
  type: row.type
})

/** A `templates` row as COLUMNS select it. */
const TemplateRow = Schema.Struct({
  id: TemplateId,
  ...contentColumns,
  created_at: Timestamp,
  updated_at: Timestamp
})
type TemplateRow = typeof TemplateRow.Type

const COLUMNS = "id, project_id, name, description, subject, body, from_email, from_name, reply_to, type, created_at, updated_at"

const toTemplate = (row: TemplateRow): Template => ({
  id: row.id,
  ...contentOf(row),
  projectId: row.project_id,
  createdAt: row.created_at,
  updatedAt: row.updated_at
})

export class Templates extends Context.Service<Templates, {
  readonly create: (projectId: string, input: TemplateInput) => Effect.Effect<Template, PersistenceError>
  readonly get: (projectId: string, id: string) => Effect.Effect<Template | undefined, PersistenceError>
  readonly update: (projectId: string, id: string, input: TemplateInput) => Effect.Effect<Template | undefined, PersistenceError>
  /** Deletes unless workflow SEND_EMAIL steps send it (TemplateInUse, naming them); false: no such template. */
  readonly remove: (projectId: string, id: string) => Effect.Effect<boolean, TemplateInUse | PersistenceError>
  readonly list: (
    projectId: string,
    query: TemplateListQuery
  ) => Effect.Effect<{ readonly data: ReadonlyArray<Template>; readonly total: number }, PersistenceError>
}>()("app/store/Templates") {
  static readonly layer = Layer.effect(
    Templates,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const decodeRows = Schema.decodeUnknownEffect(Schema.Array(TemplateRow))
      /** The workflow steps that send a template (which keep it from being removed). */
      const decodeUsers = Schema.decodeUnknownEffect(
        Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, step_id: Schema.String }))
      )

      const byId = SqlSchema.findAll({
        Request: Schema.Struct({ projectId: Schema.String, id: Schema.String }),
        Result: TemplateRow,
        execute: ({ id, projectId }) => sql`SELECT ${sql.literal(COLUMNS)} FROM templates WHERE project_id = ${projectId} AND id = ${id}`
      })

      const create = Effect.fn("Templates.create")(function*(projectId: string, input: TemplateInput) {
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        const [row] = yield* sql`
          INSERT INTO templates (id, project_id, name, description, subject, body, from_email, from_name, reply_to, type,
                                 created_at, updated_at)
          VALUES (${uuidv7()}, ${projectId}, ${input.name}, ${input.description}, ${input.subject}, ${input.body},
                  ${input.from}, ${input.fromName}, ${input.replyTo}, ${input.type}, ${now}, ${now})
          RETURNING ${sql.literal(COLUMNS)}`.pipe(Effect.flatMap(decodeRows))
        return toTemplate(row!)
      }, mapSqlError)

      const get = Effect.fn("Templates.get")(function*(projectId: string, id: string) {
        const [row] = yield* byId({ projectId, id })
        return row ? toTemplate(row) : undefined
      }, mapSqlError)

      const update = Effect.fn("Templates.update")(function*(projectId: string, id: string, input: TemplateInput) {
        const rows = yield* sql`
          UPDATE templates SET name = ${input.name}, description = ${input.description}, subject = ${input.subject},
                 body = ${input.body}, from_email = ${input.from}, from_name = ${input.fromName},
                 reply_to = ${input.replyTo}, type = ${input.type}, updated_at = now()
          WHERE project_id = ${projectId} AND id = ${id}
          RETURNING ${sql.literal(COLUMNS)}`.pipe(Effect.flatMap(decodeRows))
        return rows[0] ? toTemplate(rows[0]) : undefined
      }, mapSqlError)

      const remove = Effect.fn("Templates.remove")(function*(projectId: string, id: string) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          // Locked first: a step saved with this template holds it FOR SHARE until it commits (store/Workflows.ts),
          // so the steps read next include every step that will send it.
          const found = yield* sql`SELECT id FROM templates WHERE project_id = ${projectId} AND id = ${id} FOR UPDATE`
          if (found.length === 0) return false
          const users = yield* sql`
            SELECT w.id, w.name, s.id AS step_id
            FROM workflow_steps s JOIN workflows w ON w.id = s.workflow_id
            WHERE w.project_id = ${projectId} AND s.type = 'SEND_EMAIL' AND s.config ->> 'templateId' = ${id}
            ORDER BY w.created_at, w.id, s.created_at`.pipe(Effect.flatMap(decodeUsers))
          if (users.length > 0)
            return yield* TemplateInUse.of(users.map((user) => ({ id: user.id, name: user.name, stepId: user.step_id })))
          yield* sql`DELETE FROM templates WHERE id = ${id}`
          return true
        }))
      }, mapSqlError)

      const list = Effect.fn("Templates.list")(function*(projectId: string, query: TemplateListQuery) {
        const { rows, total } = yield* pagedList(sql, {
          table: "templates",
          columns: COLUMNS,
          projectId,
          filters: query.type ? [sql`type = ${query.type}`] : [],
          searchColumns: ["name", "description", "subject"],
          query
        })
        return { data: (yield* decodeRows(rows)).map(toTemplate), total }
      }, mapSqlError)

      return Templates.of({ create, get, update, remove, list })
    })
  )
}
