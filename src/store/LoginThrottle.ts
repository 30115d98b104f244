/**
 * Slows down password guessing: failed sign-ins are counted per email and per client address over a
 * sliding window shared by every api process; past the limit, attempts answer 429 with Retry-After
 * until the oldest failure in the window ages out.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { pgArray } from "../lib/pgArray.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

const WINDOW_SECONDS = 15 * 60
/** Failures allowed in the window: per email (one account), per address (one client trying many). */
export const MAX_FAILURES_PER_EMAIL = 5
export const MAX_FAILURES_PER_ADDRESS = 20

export const emailKey = (email: string) => `email:${email}`
export const addressKey = (address: string) => `ip:${address}`

export class LoginThrottle extends Context.Service<LoginThrottle, {
  /** Seconds to wait before trying again, or undefined when the attempt may go ahead. */
  readonly retryAfter: (email: string, address: string) => Effect.Effect<number | undefined, PersistenceError>
  readonly recordFailure: (email: string, address: string) => Effect.Effect<void, PersistenceError>
  /** A successful sign-in forgets the account's failures. */
  readonly clear: (email: string) => Effect.Effect<void, PersistenceError>
}>()("app/store/LoginThrottle") {
  static readonly layer = Layer.effect(
    LoginThrottle,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const retryAfter = Effect.fn("LoginThrottle.retryAfter")(function*(email: string, address: string) {
        const rows = yield* sql<{ key: string; failures: number; oldest: number }>`
          SELECT key, count(*)::int AS failures,
                 extract(epoch FROM min(failed_at) + make_interval(secs => ${WINDOW_SECONDS}) - now())::float8 AS oldest
          FROM login_failures
          WHERE key = ANY(${pgArray([emailKey(email), addressKey(address)])}::text[])
            AND failed_at > now() - make_interval(secs => ${WINDOW_SECONDS})
          GROUP BY key`
        const blocked = rows.filter((row) =>
          row.failures >= (row.key.startsWith("email:") ? MAX_FAILURES_PER_EMAIL : MAX_FAILURES_PER_ADDRESS)
        )
        if (blocked.length === 0) return undefined
        return Math.max(1, Math.ceil(Math.max(...blocked.map((row) => row.oldest))))
      }, mapSqlError)

      return LoginThrottle.of({
        retryAfter,
        recordFailure: (email, address) =>
          sql`INSERT INTO login_failures (key) VALUES (${emailKey(email)}), (${addressKey(address)})`.pipe(Effect.asVoid, mapSqlError),
        clear: (email) =>
          // Old rows of every key go too, so the table stays small.
          sql`DELETE FROM login_failures WHERE key = ${emailKey(email)} OR failed_at < now() - make_interval(secs => ${WINDOW_SECONDS})`.pipe(
            Effect.asVoid,
            mapSqlError
          )
      })
    })
  )
}
