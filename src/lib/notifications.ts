/**
 * Postgres LISTEN, kept up: notifications of a channel are handed to `onNotification`; after the
 * listening connection fails it listens again a second later, and `onListening` runs each time it
 * starts listening (notifications sent meanwhile are lost, so listeners look for themselves then).
 * Holds one connection of the pool while it runs.
 */
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Queue, Schedule, type Scope } from "effect"

/** Triggers of migration 0015 notify this channel with their table's name when rows were written. */
export const SCHEDULE_CHANNEL = "mailstream_schedule"
/** A worker that released partitions notifies this channel so the others take them at once. */
export const LEASES_CHANNEL = "mailstream_leases"

export const listenTo = (
  channel: string,
  onNotification: (payload: string) => Effect.Effect<void>,
  onListening: Effect.Effect<void> = Effect.void
): Effect.Effect<void, never, PgClient.PgClient | Scope.Scope> =>
  Effect.gen(function*() {
    const pg = yield* PgClient.PgClient
    yield* Effect.scoped(Effect.gen(function*() {
      const notifications = yield* pg.listen(channel)
      yield* onListening
      while (true) {
        const notification = yield* Queue.take(notifications)
        yield* onNotification(notification.payload)
      }
    })).pipe(
      Effect.tapCause((cause) => Effect.logWarning("listening for Postgres notifications failed; listening again", { channel }, cause)),
      Effect.retry(Schedule.spaced(Duration.seconds(1))),
      Effect.ignore,
      Effect.forkScoped,
      Effect.asVoid
    )
  })
