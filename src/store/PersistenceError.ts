/**
 * The one infrastructure failure repositories answer: Postgres failed (connection lost, a statement
 * refused). Repositories map `SqlError` into it at their edge (`mapSqlError`), so their signatures name
 * what callers can handle: the worker retries its batch, an HTTP handler lets `rendered` turn it into
 * the logged 500 once.
 */
import { Effect, Schema } from "effect"
import type { SqlError } from "effect/sql"

export class PersistenceError extends Schema.TaggedError<PersistenceError>()("PersistenceError", {
  cause: Schema.Defect()
}) {
  override get message() {
    return `Postgres failed: ${this.cause instanceof Error ? this.cause.message : String(this.cause)}`
  }
}

/** A repository method's SqlError, as its PersistenceError (pipe it after the method's body). */
export const mapSqlError = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, SqlError.SqlError> | PersistenceError, R> =>
  Effect.catchIf(
    effect,
    (error): error is Extract<E, SqlError.SqlError> => (error as { readonly _tag?: unknown } | undefined)?._tag === "SqlError",
    (cause) => Effect.fail(new PersistenceError({ cause }))
  ) as Effect.Effect<A, Exclude<E, SqlError.SqlError> | PersistenceError, R>
