/**
 * `npm run bench -- rollups`: what the analytics rollup triggers (#17) cost an events insert, the
 * statement every actor batch sends. One session inserts BENCH_ROLLUP_STATEMENTS (1,000) statements of
 * BENCH_ROLLUP_ROWS (2) new events each, in one transaction (so commits and WAL flushes are not part of
 * it), three times on one database:
 * - baseline: the rollup trigger on events disabled;
 * - as 0013 wrote the rollup functions (LANGUAGE sql, planned again on every call);
 * - as they are now (PL/pgSQL, migration 0017: plans kept per connection).
 * Reported: µs per statement and the trigger's cost over the baseline.
 */
import { randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import pg from "pg"
import { splitStatements } from "../src/store/db.ts"
import { withEnvironment } from "./harness/environment.ts"
import { ROOT, setting } from "./harness/settings.ts"
import { round } from "./harness/stats.ts"

const ROLLUP_FUNCTIONS = [
  "ms_apply_email_deltas",
  "ms_apply_counter_deltas",
  "ms_email_fact_deltas",
  "ms_event_counter_deltas",
  "ms_event_email_deltas",
  "ms_apply_event_facts"
]

const migration = (file: string) => readFileSync(join(ROOT, "migrations", file), "utf8")

/** 0013's own definitions of the rollup functions, as replacements. */
const functionsOf0013 = () =>
  splitStatements(migration("0013_analytics.sql"))
    .filter((statement) => ROLLUP_FUNCTIONS.some((name) => statement.startsWith(`CREATE FUNCTION ${name}(`)))
    .map((statement) => statement.replace(/^CREATE FUNCTION/, "CREATE OR REPLACE FUNCTION"))

/** One timed round: µs per statement, in one transaction of `client`. */
const insertRound = async (client: pg.Client, projectId: string, statements: number, rows: number) => {
  await client.query("BEGIN")
  const started = performance.now()
  for (let n = 0; n < statements; n++) {
    const values: Array<string> = []
    const params: Array<unknown> = []
    for (let r = 0; r < rows; r++) {
      params.push(randomUUID(), randomUUID(), JSON.stringify({ n, r }))
      values.push(`($${params.length - 2}, '${projectId}', $${params.length - 1}, 'page_view', $${params.length}, now())`)
    }
    await client.query(`INSERT INTO events (id, project_id, contact_id, name, data, created_at) VALUES ${values.join(", ")}`, params)
  }
  const micros = ((performance.now() - started) * 1000) / statements
  await client.query("COMMIT")
  return round(micros, 0)
}

export const run = (_args: ReadonlyArray<string>) =>
  withEnvironment(async (env) => {
    const statements = setting("BENCH_ROLLUP_STATEMENTS", 1_000)
    const rows = setting("BENCH_ROLLUP_ROWS", 2)
    /** A new session (no plans kept from before) for `use`. */
    const session = async <A>(use: (client: pg.Client) => Promise<A>) => {
      const client = new pg.Client({ connectionString: env.databaseUrl })
      await client.connect()
      try {
        return await use(client)
      } finally {
        await client.end()
      }
    }
    const timed = (client: pg.Client) => insertRound(client, env.project.id, statements, rows)

    const baseline = await session(async (client) => {
      await client.query("ALTER TABLE events DISABLE TRIGGER events_rollup_insert")
      await timed(client) // warm-up: catalog caches, the first plans
      const micros = await timed(client)
      await client.query("ALTER TABLE events ENABLE TRIGGER events_rollup_insert")
      return micros
    })
    const languageSql = await session(async (client) => {
      for (const statement of functionsOf0013()) await client.query(statement)
      await timed(client)
      return timed(client)
    })
    const plpgsql = await session(async (client) => {
      for (const statement of splitStatements(migration("0017_rollup_plans.sql"))) await client.query(statement)
      await timed(client)
      return timed(client)
    })
    return {
      what: `µs per events INSERT of ${rows} rows, ${statements} statements in one transaction (no commit cost)`,
      microsPerStatement: { noTrigger: baseline, triggerLanguageSql: languageSql, triggerPlpgsql: plpgsql },
      triggerCostMicros: { languageSql: languageSql - baseline, plpgsql: plpgsql - baseline },
      speedUpOfTriggerCost: round((languageSql - baseline) / Math.max(1, plpgsql - baseline), 1)
    }
  })
