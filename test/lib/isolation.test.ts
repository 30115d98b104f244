/**
 * Which Postgres failures are the server being away (retried until they pass) and which are the data's
 * (src/lib/isolation.ts). A connection Postgres refuses for having too many (SQLSTATE 53300) reaches us
 * as a SqlError whose reason is UnknownError, not ConnectionError: taken for the data's fault, a lane's
 * batch was tried three times during the refusal, isolated, and its messages dead-lettered or dropped.
 */
import { PgClient } from "@effect/sql-pg"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import { causeIsTransient, isTransient, isUnreachable } from "../../src/lib/isolation.ts"
import pg from "../support/pg.ts"
import { ADMIN_URL } from "../support/stack.ts"

const role = `ms_refused_${randomBytes(4).toString("hex")}`

/** The failure of one query run through a PgClient as `user` on the shared server's postgres database. */
const failureAs = (user: string, query: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.unsafe(query)
  }).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(ADMIN_URL.replace("postgres@", `${user}@`)), maxConnections: 1 })),
    Effect.flip
  )

beforeAll(async () => {
  // Every connection of this role is refused by the server: "too many connections for role" (53300).
  await pg.exec(ADMIN_URL, `CREATE ROLE ${role} LOGIN NOSUPERUSER CONNECTION LIMIT 0`)
})

afterAll(async () => {
  await pg.exec(ADMIN_URL, `DROP ROLE IF EXISTS ${role}`)
})

describe("isTransient", () => {
  it.live("a connection refused for having too many (53300) is the server's, retried until it passes", () =>
    Effect.gen(function*() {
      const error = yield* failureAs(role, "SELECT 1")
      expect((error as { reason?: { cause?: { code?: unknown } } }).reason?.cause?.code).toBe("53300")
      expect(isUnreachable(error)).toBe(true)
      expect(isTransient(error)).toBe(true)
      expect(causeIsTransient(Cause.die(error))).toBe(true)
    }))

  it.live("a statement Postgres refuses is the data's, not transient", () =>
    Effect.gen(function*() {
      const error = yield* failureAs("postgres", "SELECT 1 / 0")
      expect(isUnreachable(error)).toBe(false)
      expect(isTransient(error)).toBe(false)
    }))
})
