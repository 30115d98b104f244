/**
 * How an actor runs a transaction: transient failures retried until they pass or the lease is gone,
 * anything else three times and then reported as poison for the actor to isolate.
 */
import { Cause, Data, Duration, Effect, Schedule } from "effect"
import type { SqlClient } from "effect/sql"
import { causeIsTransient, isTransient } from "../lib/isolation.ts"
import { WorkerMetrics } from "../observability/Metrics.ts"

/** The failure and its causes (a SqlError's own message says only "Query failed"). */
export const describeFailure = (error: unknown): string => {
  const parts: Array<string> = []
  for (let current: unknown = error; current !== undefined && parts.length < 4; current = (current as { cause?: unknown })?.cause) {
    parts.push(current instanceof Error ? current.message : String(current))
  }
  return parts.join(": ")
}

/** A defect that is Postgres being away (isTransient sees through to its SqlError). */
class TransientDefect extends Data.TaggedError("PersistenceError")<{ readonly cause: unknown }> {}

export type Outcome = { readonly _tag: "ok" } | { readonly _tag: "lease-lost" } | { readonly _tag: "poison"; readonly error: string }

/**
 * Runs a transaction with retries. Transient failures (Postgres unreachable, deadlocks, timeouts)
 * are retried until they pass or the lease is gone; anything else — a defect, data Postgres
 * refuses — gets three tries and is then reported as "poison" for the caller to isolate.
 */
export const withRetry = <E extends { readonly _tag: string }>(
  projectId: string,
  actor: { readonly lane: number | undefined; readonly run: { readonly stopped: boolean } },
  effect: Effect.Effect<void, E, SqlClient.SqlClient>
) => {
  let failures = 0
  return effect.pipe(
    // Postgres away surfaces as a defect from code that dies on its errors (a connection lost or refused
    // mid-batch): retried as the transient failure it is, never isolated as poison (its events dead-lettered).
    Effect.catchCause((cause): Effect.Effect<void, E | TransientDefect> =>
      Cause.hasFails(cause) || Cause.hasInterrupts(cause) || !causeIsTransient(cause)
        ? Effect.failCause(cause)
        : Effect.fail(new TransientDefect({ cause: Cause.squash(cause) }))
    ),
    Effect.tapError((error) =>
      error._tag === "LeaseLost"
        ? Effect.void
        : Effect.sync(() => WorkerMetrics.batchFailures.inc()).pipe(
          Effect.andThen(Effect.logWarning("actor transaction failed", { projectId, lane: actor.lane, error: describeFailure(error) }))
        )
    ),
    Effect.retry({
      while: (error) => {
        if (error._tag === "LeaseLost" || actor.run.stopped) return false
        return isTransient(error) || ++failures < 3
      },
      schedule: Schedule.min([Schedule.exponential(Duration.millis(100), 2), Schedule.spaced(Duration.seconds(5))])
    }),
    Effect.as({ _tag: "ok" } as Outcome),
    Effect.catch((error): Effect.Effect<Outcome> =>
      Effect.succeed(error._tag === "LeaseLost" ? { _tag: "lease-lost" } : { _tag: "poison", error: String(error) })
    ),
    Effect.catchCause((cause) =>
      Effect.as(Effect.logError("actor transaction failed with a defect", { projectId }, cause), {
        _tag: "poison",
        error: String(Cause.squash(cause))
      } as Outcome)
    )
  )
}
