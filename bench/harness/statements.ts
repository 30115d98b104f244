/**
 * Where Postgres spends its time during a measured window, per statement: `BENCH_PG_STATEMENTS=1` resets
 * pg_stat_statements when the window opens and reads the top statements of the run's database when it
 * closes. It needs the extension loaded by the server (shared_preload_libraries = 'pg_stat_statements')
 * and created in the admin database; without it the profile says so and the run goes on. Planning time is
 * reported too when the server tracks it (`pg_stat_statements.track_planning = on`), 0 otherwise.
 */
import pg from "../../test/support/pg.ts"
import { ADMIN_URL } from "../../test/support/stack.ts"

export const statementsWanted = process.env.BENCH_PG_STATEMENTS === "1"

export interface StatementCost {
  readonly totalMs: number
  readonly calls: number
  readonly meanMs: number
  /** Mean planning time per call (custom plans are planned on every execution). */
  readonly meanPlanMs: number
  readonly query: string
}

export const resetStatements = async (): Promise<string | undefined> => {
  if (!statementsWanted) return undefined
  try {
    await pg.query(ADMIN_URL, "SELECT pg_stat_statements_reset()", [])
    return undefined
  } catch (error) {
    return `pg_stat_statements unavailable: ${(error as Error).message}`
  }
}

export const topStatements = async (database: string, limit = 12): Promise<Array<StatementCost> | undefined> => {
  if (!statementsWanted) return undefined
  const rows = await pg.query<{ total: number; plan: number; calls: string; query: string }>(
    ADMIN_URL,
    `SELECT s.total_exec_time AS total, s.total_plan_time AS plan, s.calls, left(regexp_replace(s.query, '\\s+', ' ', 'g'), 140) AS query
     FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
     WHERE d.datname = $1 ORDER BY s.total_exec_time + s.total_plan_time DESC LIMIT ${limit}`,
    [database]
  ).catch(() => undefined)
  return rows?.map((row) => ({
    totalMs: Math.round(row.total),
    calls: Number(row.calls),
    meanMs: Math.round((row.total / Number(row.calls)) * 1000) / 1000,
    meanPlanMs: Math.round((row.plan / Number(row.calls)) * 1000) / 1000,
    query: row.query
  }))
}
