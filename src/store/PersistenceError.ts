/**
 * The one infrastructure failure repositories answer: Postgres failed (connection lost, a statement
 * refused), or a row did not decode with its schema (SqlSchema). Repositories map `SqlError` and
 * `SchemaError` into it at their edge (`mapSqlError`), so their signatures name
 * what callers can handle: the worker retries its batch, an HTTP handler lets `rendered` turn it into
 * the logged 500 once.
 */
import { Effect, Schema } from "effect"
import type { SqlError } from "effect/sql"

export class PersistenceError extends Schema.TaggedError<PersistenceError>()("PersistenceError", {
  cause: Schema.Defect()
}) {
  override get message() {
    return `Postgres failed, or a row did not decode: ${this.cause instanceof Error ? this.cause.message : String(this.cause)}`
  }
}

type Infrastructure = SqlError.SqlError | Schema.SchemaError

/** A repository method's SqlError (or row SchemaError), as its PersistenceError (pipe it after the method's body). */
export const mapSqlError = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, Infrastructure> | PersistenceError, R> =>
  Effect.catchIf(
    effect,
    (error): error is Extract<E, Infrastructure> => {
      const tag = (error as { readonly _tag?: unknown } | undefined)?._tag
      return tag === "SqlError" || tag === "SchemaError"
    },
    (cause) => Effect.fail(new PersistenceError({ cause }))
  ) as Effect.Effect<A, Exclude<E, Infrastructure> | PersistenceError, R>
