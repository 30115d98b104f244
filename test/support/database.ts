/**
 * A fresh, migrated Postgres database as a layer, for layer-level tests (`layer(TestDatabase)` from
 * @effect/vitest): created when the layer is built, dropped when it is released. No service processes.
 * With it: the Outbox without NATS (messages stay in the `outbox` table, for the test to read) and a
 * project row to work in.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import { uuidv7 } from "../../src/domain/ids.ts"
import { runMigrations } from "../../src/store/db.ts"
import { Nats } from "../../src/stream/Nats.ts"
import { Outbox } from "../../src/stream/Outbox.ts"
import pg, { databaseUrlOf } from "./pg.ts"
import { ADMIN_URL } from "./stack.ts"

export const TestDatabase = Layer.unwrap(Effect.gen(function*() {
  const database = `ms_test_${randomBytes(5).toString("hex")}`
  yield* Effect.acquireRelease(
    Effect.promise(() => pg.exec(ADMIN_URL, `CREATE DATABASE ${database}`)),
    () => Effect.promise(() => pg.exec(ADMIN_URL, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`))
  )
  const client = PgClient.layer({ url: Redacted.make(databaseUrlOf(ADMIN_URL, database)), maxConnections: 4 })
  return Layer.effectDiscard(runMigrations).pipe(Layer.provideMerge(client))
}))

/**
 * The service's Outbox, with no NATS behind it: what repositories append stays in the `outbox` table
 * (no relay runs), and publishing at once fails and is ignored, as it is while NATS is down.
 * Needs AppConfig (lanes, prefix) and the database.
 */
export const OutboxWithoutNats = Outbox.layer.pipe(
  Layer.provide(
    Layer.succeed(Nats, { js: { publish: () => Promise.reject(new Error("no NATS in layer-level tests")) } } as unknown as Nats["Service"])
  )
)

/** A project row, as `project create` leaves it (keys are hashes; layer-level tests never authenticate). */
export const insertProject = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const id = uuidv7()
  yield* sql`INSERT INTO projects (id, name, public_key_hash, secret_key_hash)
             VALUES (${id}, 'test', ${Buffer.from(uuidv7())}, ${Buffer.from(uuidv7())})`
  return id
})

/** The outbox rows about a project (their subjects name it: IN lanes and OUT alike), oldest first. */
export const outboxOf = (projectId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ subject: string; payload: Record<string, unknown> }>`
      SELECT subject, payload FROM outbox WHERE subject LIKE ${`%.${projectId}.%`} ORDER BY seq`
  })
