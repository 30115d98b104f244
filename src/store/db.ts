/** The Postgres client and the migrator that applies `migrations/NNNN_name.sql` in order. */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { AppConfig, type AppConfigShape } from "../config.ts"
import { INSTALL_ROOT } from "../lib/installation.ts"

const MIGRATIONS_DIR = join(INSTALL_ROOT, "migrations")

/**
 * Postgres' extended protocol takes one statement per query, so a file is split into statements at
 * semicolons that end a line (keep `;` mid-line only inside statements, e.g. in strings or bodies).
 */
export const splitStatements = (script: string): Array<string> =>
  script
    .split(/;[ \t]*(?:--[^\n]*)?$/m)
    .map((statement) => statement.replace(/^\s*(--[^\n]*\n\s*)*/g, "").trim())
    .filter((statement) => statement.length > 0)

/** The numbered SQL files, in order; each runs statement by statement inside the migrator's transaction. */
export const migrationFiles = (): Array<Migrator.ResolvedMigration> =>
  readdirSync(MIGRATIONS_DIR)
    .map((file) => file.match(/^(\d+)_([^.]+)\.sql$/))
    .filter((match): match is RegExpMatchArray => match !== null)
    .map(([file, id, name]): Migrator.ResolvedMigration => [
      Number(id),
      name!,
      Effect.succeed(
        Effect.flatMap(Effect.service(SqlClient.SqlClient), (sql) =>
          Effect.forEach(
            splitStatements(readFileSync(`${MIGRATIONS_DIR}/${file}`, "utf8")),
            (statement) => sql.unsafe(statement).unprepared,
            { discard: true }
          ))
      )
    ])
    .sort(([a], [b]) => a - b)

export const MIGRATIONS_TABLE = "schema_migrations"

export const runMigrations = Migrator.make({})({ loader: Effect.sync(migrationFiles), table: MIGRATIONS_TABLE })

/** Connections of a process' main pool (the budget in docs/scaling.md; a worker adds DESTINATION_DB_CONNECTIONS). */
export const POOL_CONNECTIONS = 20

/** A Postgres pool of `maxConnections`, named `applicationName` in pg_stat_activity. */
export const pgPool = (config: AppConfigShape, maxConnections: number, applicationName: string) =>
  PgClient.layer({
    url: config.databaseUrl,
    maxConnections,
    applicationName,
    // A transaction abandoned mid-flight (an interrupted fiber, a wedged process) must not keep its
    // locks: batch transactions share-lock their partition's lease, which a takeover has to update.
    startupParameters: { idle_in_transaction_session_timeout: "15s" }
  })

export const PgLive = Layer.unwrap(Effect.map(Effect.service(AppConfig), (config) => pgPool(config, POOL_CONNECTIONS, "mailstream")))

/** Postgres, migrated before anything else uses it. */
export const DatabaseLive = Layer.effectDiscard(
  runMigrations.pipe(
    Effect.tap((applied) =>
      applied.length > 0 ? Effect.logInfo("migrations applied", applied.map(([id, name]) => `${id}_${name}`)) : Effect.void
    )
  )
).pipe(Layer.provideMerge(PgLive))
