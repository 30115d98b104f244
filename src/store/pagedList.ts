/**
 * Page-paginated, searchable, sortable lists of a project's rows (templates, campaigns): one query for
 * the page and one for the total, run together.
 */
import { Effect } from "effect"
import type { SqlClient, Statement } from "effect/sql"

/** Text matched literally by LIKE: its wildcards and the escape character escaped. */
export const escapeLike = (text: string) => text.replace(/[\\%_]/g, (char) => `\\${char}`)

export interface SortedPage {
  readonly page: number
  readonly pageSize: number
  readonly search: string | undefined
  readonly sort: "name" | "createdAt" | "updatedAt"
  readonly direction: "asc" | "desc"
}

const SORT_COLUMNS = { name: "lower(name)", createdAt: "created_at", updatedAt: "updated_at" } as const

export const pagedList = <Row extends object = Record<string, unknown>>(
  sql: SqlClient.SqlClient,
  options: {
    readonly table: "templates" | "campaigns"
    /** The columns the page's rows carry (the repository decodes them). */
    readonly columns: string
    readonly projectId: string
    readonly filters: ReadonlyArray<Statement.Fragment>
    /** Columns searched, case-insensitively, for the text. */
    readonly searchColumns: ReadonlyArray<string>
    readonly query: SortedPage
  }
) => {
  const { query } = options
  const conditions = [sql`project_id = ${options.projectId}`, ...options.filters]
  if (query.search) {
    const pattern = `%${escapeLike(query.search)}%`
    conditions.push(sql.or(options.searchColumns.map((column) => sql`${sql.literal(column)} ILIKE ${pattern}`)))
  }
  const where = sql.and(conditions)
  const table = sql.literal(options.table)
  const order = sql.literal(`${SORT_COLUMNS[query.sort]} ${query.direction}, id ${query.direction}`)
  return Effect.map(
    Effect.all([
      sql<Row>`SELECT ${sql.literal(options.columns)} FROM ${table} WHERE ${where} ORDER BY ${order}
               LIMIT ${query.pageSize} OFFSET ${(query.page - 1) * query.pageSize}`,
      sql<{ n: number }>`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`
    ], { concurrency: 2 }),
    ([rows, [count]]) => ({ rows, total: count?.n ?? 0 })
  )
}
