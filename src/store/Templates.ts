/** Email templates of a project. */
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../domain/ids.ts"
import { pagedList, type SortedPage } from "./pagedList.ts"

export type TemplateType = "TRANSACTIONAL" | "MARKETING" | "HEADLESS"
export const TEMPLATE_TYPES: ReadonlyArray<TemplateType> = ["TRANSACTIONAL", "MARKETING", "HEADLESS"]

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
  readonly id: string
  readonly projectId: string
  readonly createdAt: string
  readonly updatedAt: string
}

export interface TemplateListQuery extends SortedPage {
  readonly type: TemplateType | undefined
}

interface TemplateRow {
  readonly id: string
  readonly project_id: string
  readonly name: string
  readonly description: string | null
  readonly subject: string
  readonly body: string
  readonly from_email: string
  readonly from_name: string | null
  readonly reply_to: string | null
  readonly type: TemplateType
  readonly created_at: Date
  readonly updated_at: Date
}

const toTemplate = (row: TemplateRow): Template => ({
  id: row.id,
  name: row.name,
  description: row.description,
  subject: row.subject,
  body: row.body,
  from: row.from_email,
  fromName: row.from_name,
  replyTo: row.reply_to,
  type: row.type,
  projectId: row.project_id,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString()
})

export class Templates extends Context.Service<Templates, {
  readonly create: (projectId: string, input: TemplateInput) => Effect.Effect<Template>
  readonly get: (projectId: string, id: string) => Effect.Effect<Template | undefined>
  readonly update: (projectId: string, id: string, input: TemplateInput) => Effect.Effect<Template | undefined>
  readonly remove: (projectId: string, id: string) => Effect.Effect<boolean>
  readonly list: (
    projectId: string,
    query: TemplateListQuery
  ) => Effect.Effect<{ readonly data: ReadonlyArray<Template>; readonly total: number }>
}>()("app/store/Templates") {
  static readonly layer = Layer.effect(
    Templates,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const create = Effect.fn("Templates.create")(function*(projectId: string, input: TemplateInput) {
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        const [row] = yield* sql<TemplateRow>`
          INSERT INTO templates (id, project_id, name, description, subject, body, from_email, from_name, reply_to, type,
                                 created_at, updated_at)
          VALUES (${uuidv7()}, ${projectId}, ${input.name}, ${input.description}, ${input.subject}, ${input.body},
                  ${input.from}, ${input.fromName}, ${input.replyTo}, ${input.type}, ${now}, ${now})
          RETURNING *`
        return toTemplate(row!)
      }, Effect.orDie)

      const get = Effect.fn("Templates.get")(function*(projectId: string, id: string) {
        const rows = yield* sql<TemplateRow>`SELECT * FROM templates WHERE project_id = ${projectId} AND id = ${id}`
        return rows[0] ? toTemplate(rows[0]) : undefined
      }, Effect.orDie)

      const update = Effect.fn("Templates.update")(function*(projectId: string, id: string, input: TemplateInput) {
        const rows = yield* sql<TemplateRow>`
          UPDATE templates SET name = ${input.name}, description = ${input.description}, subject = ${input.subject},
                 body = ${input.body}, from_email = ${input.from}, from_name = ${input.fromName},
                 reply_to = ${input.replyTo}, type = ${input.type}, updated_at = now()
          WHERE project_id = ${projectId} AND id = ${id}
          RETURNING *`
        return rows[0] ? toTemplate(rows[0]) : undefined
      }, Effect.orDie)

      const remove = Effect.fn("Templates.remove")(function*(projectId: string, id: string) {
        const rows = yield* sql`DELETE FROM templates WHERE project_id = ${projectId} AND id = ${id} RETURNING id`
        return rows.length > 0
      }, Effect.orDie)

      const list = Effect.fn("Templates.list")(function*(projectId: string, query: TemplateListQuery) {
        const { rows, total } = yield* pagedList<TemplateRow>(sql, {
          table: "templates",
          projectId,
          filters: query.type ? [sql`type = ${query.type}`] : [],
          searchColumns: ["name", "description", "subject"],
          query
        })
        return { data: rows.map(toTemplate), total }
      }, Effect.orDie)

      return Templates.of({ create, get, update, remove, list })
    })
  )
}
