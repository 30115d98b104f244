/**
 * Once per `vitest run`: a migrated template database that every stack of the run copies
 * (`CREATE DATABASE … TEMPLATE`, a file copy) instead of starting a CLI process to migrate an empty one,
 * and the compiled service the stacks run (./serviceBuild.ts).
 * Both reach the test files' processes through the environment; the template is dropped when the run ends.
 * The integration projects both list this file: the first makes the template, the other uses it (vitest
 * tears down in reverse order, so its maker drops it last).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { runMigrations } from "../../src/store/db.ts"
import pg, { databaseUrlOf } from "./pg.ts"
import { buildServiceForTests } from "./serviceBuild.ts"
import { ADMIN_URL, SERVICE_ENTRY_ENV, TEMPLATE_DATABASE_ENV } from "./stack.ts"

export default async function setup() {
  if (process.env[TEMPLATE_DATABASE_ENV] !== undefined) return
  const entry = await buildServiceForTests()
  const template = `ms_template_${randomBytes(5).toString("hex")}`
  const templateUrl = databaseUrlOf(ADMIN_URL, template)
  await pg.exec(ADMIN_URL, `CREATE DATABASE ${template}`)
  try {
    // Its own short-lived pool: a template must have no open connections when it is copied.
    await Effect.runPromise(Effect.scoped(Layer.build(
      Layer.effectDiscard(runMigrations).pipe(Layer.provide(PgClient.layer({ url: Redacted.make(templateUrl), maxConnections: 1 })))
    )))
  } catch (error) {
    await pg.exec(ADMIN_URL, `DROP DATABASE IF EXISTS ${template} WITH (FORCE)`)
    throw error
  }
  process.env[TEMPLATE_DATABASE_ENV] = template
  process.env[SERVICE_ENTRY_ENV] = entry
  return async () => {
    delete process.env[TEMPLATE_DATABASE_ENV]
    delete process.env[SERVICE_ENTRY_ENV]
    await pg.exec(ADMIN_URL, `DROP DATABASE IF EXISTS ${template} WITH (FORCE)`)
    await pg.close(ADMIN_URL)
  }
}
