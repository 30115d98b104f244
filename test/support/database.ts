/**
 * A fresh, migrated Postgres database as a layer, for layer-level tests (`layer(TestDatabase)` from
 * @effect/vitest): created when the layer is built, dropped when it is released. No service processes.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { runMigrations } from "../../src/store/db.ts"
import pg from "./pg.ts"
import { ADMIN_URL } from "./stack.ts"

export const TestDatabase = Layer.unwrap(Effect.gen(function*() {
  const database = `ms_test_${randomBytes(5).toString("hex")}`
  yield* Effect.acquireRelease(
    Effect.promise(() => pg.exec(ADMIN_URL, `CREATE DATABASE ${database}`)),
    () => Effect.promise(() => pg.exec(ADMIN_URL, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`))
  )
  const client = PgClient.layer({ url: Redacted.make(ADMIN_URL.replace(/\/[^/]*$/, `/${database}`)), maxConnections: 4 })
  return Layer.effectDiscard(runMigrations).pipe(Layer.provideMerge(client))
}))
