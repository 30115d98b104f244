/**
 * Slows down password guessing without letting anyone lock a chosen account out. Failed sign-ins are
 * counted over a sliding window shared by every api process, under keys that depend on where the
 * attempt comes from:
 *
 * - from a browser that signed in to the account before (a valid known-device cookie naming it): that
 *   device's own failures only, so someone hammering the email elsewhere cannot keep its owner out;
 * - from anywhere else: the email's failures from such browsers, and the client address's (behind
 *   TRUSTED_PROXIES, the address they name; an IPv6 client's /64), so one client cannot try many
 *   accounts, nor many clients one account, faster than the limits.
 *
 * Past a limit, attempts on that path answer 429 with Retry-After until the oldest failure in the window
 * ages out.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { addressBucket } from "../lib/clientAddress.ts"
import { pgArray } from "../lib/pgArray.ts"
import { decodeRows } from "./columns.ts"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

/** Recent failures of one key, and seconds until its oldest leaves the window. */
const FailureRow = Schema.Struct({ key: Schema.String, failures: Schema.Number, oldest: Schema.Number })

const WINDOW_SECONDS = 15 * 60
/** Failures allowed in the window: per email from unknown browsers, per client address, per known device. */
export const MAX_FAILURES_PER_EMAIL = 5
export const MAX_FAILURES_PER_ADDRESS = 20
export const MAX_FAILURES_PER_DEVICE = 5

export interface SignInAttempt {
  /** Normalized. */
  readonly email: string
  /** The client's address (clientAddress.ts). */
  readonly address: string
  /** The id of a known-device cookie issued to this email's account, when the browser sent one. */
  readonly knownDevice: string | undefined
}

/** The counters an attempt is held to, each with its limit. */
const limitsOf = (attempt: SignInAttempt): ReadonlyArray<readonly [key: string, max: number]> =>
  attempt.knownDevice !== undefined
    ? [[`device:${attempt.knownDevice}`, MAX_FAILURES_PER_DEVICE]]
    : [[`email:${attempt.email}`, MAX_FAILURES_PER_EMAIL], [`ip:${addressBucket(attempt.address)}`, MAX_FAILURES_PER_ADDRESS]]

export class LoginThrottle extends Context.Service<LoginThrottle, {
  /** Seconds to wait before trying again, or undefined when the attempt may go ahead. */
  readonly retryAfter: (attempt: SignInAttempt) => Effect.Effect<number | undefined, PersistenceError>
  readonly recordFailure: (attempt: SignInAttempt) => Effect.Effect<void, PersistenceError>
  /**
   * A successful sign-in forgets the failures of the counter that would have stopped it: the device's,
   * or the email's from unknown browsers (a known device's success leaves those, so the owner signing in
   * does not hand whoever is guessing a fresh allowance).
   */
  readonly recordSuccess: (attempt: SignInAttempt) => Effect.Effect<void, PersistenceError>
}>()("app/store/LoginThrottle") {
  static readonly layer = Layer.effect(
    LoginThrottle,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const retryAfter = Effect.fn("LoginThrottle.retryAfter")(function*(attempt: SignInAttempt) {
        const limits = new Map(limitsOf(attempt))
        const rows = yield* decodeRows(FailureRow)(sql`
          SELECT key, count(*)::int AS failures,
                 extract(epoch FROM min(failed_at) + make_interval(secs => ${WINDOW_SECONDS}) - now())::float8 AS oldest
          FROM login_failures
          WHERE key = ANY(${pgArray([...limits.keys()])}::text[])
            AND failed_at > now() - make_interval(secs => ${WINDOW_SECONDS})
          GROUP BY key`)
        const blocked = rows.filter((row) => row.failures >= limits.get(row.key)!)
        if (blocked.length === 0) return undefined
        return Math.max(1, Math.ceil(Math.max(...blocked.map((row) => row.oldest))))
      }, mapSqlError)

      return LoginThrottle.of({
        retryAfter,
        recordFailure: (attempt) =>
          sql`INSERT INTO login_failures (key) SELECT unnest(${pgArray(limitsOf(attempt).map(([key]) => key))}::text[])`.pipe(
            Effect.asVoid,
            mapSqlError
          ),
        recordSuccess: (attempt) =>
          // Old rows of every key go too, so the table stays small.
          sql`DELETE FROM login_failures
              WHERE key = ${limitsOf(attempt)[0]![0]} OR failed_at < now() - make_interval(secs => ${WINDOW_SECONDS})`.pipe(
            Effect.asVoid,
            mapSqlError
          )
      })
    })
  )
}
