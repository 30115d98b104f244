/**
 * A migrated Postgres database of its own for a layer-level test file: created when the layer is
 * built, dropped when it is released. Provides the SqlClient the repositories use.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { runMigrations } from "../../src/store/db.ts"
import pg from "./pg.ts"

const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

export const TestDatabase = Layer.unwrap(Effect.gen(function*() {
  const database = `ms_test_layer_${randomBytes(5).toString("hex")}`
  yield* Effect.acquireRelease(
    Effect.promise(() => pg.exec(ADMIN_URL, `CREATE DATABASE ${database}`)),
    () => Effect.promise(() => pg.exec(ADMIN_URL, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`))
  )
  const url = ADMIN_URL.replace(/\/[^/]*$/, `/${database}`)
  return Layer.effectDiscard(runMigrations).pipe(
    Layer.provideMerge(PgClient.layer({ url: Redacted.make(url), maxConnections: 4 }))
  )
}))
