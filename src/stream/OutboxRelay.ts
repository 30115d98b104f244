/**
 * Publishes committed outbox rows to JetStream and deletes them once acknowledged.
 *
 * - Runs in every process; a transaction-scoped advisory lock makes one relay publish at a time, so
 *   messages reach the stream in commit order (`seq`).
 * - `Nats-Msg-Id` = outbox id: a relay that crashes after publishing but before deleting republishes
 *   on restart and JetStream drops the duplicate.
 * - Writers call `wake` after committing so messages go out immediately; a slow poll picks up rows
 *   that a crashed process left behind.
 */
import { Context, Duration, Effect, Layer, Queue } from "effect"
import { SqlClient } from "effect/sql"
import { Nats } from "./Nats.ts"

const RELAY_LOCK = 0x6d61696c // "mail": arbitrary, fixed
const BATCH = 1000

export class OutboxRelay extends Context.Service<OutboxRelay, {
  /** Ask the relay to publish now (cheap; coalesces). */
  readonly wake: Effect.Effect<void>
  /** Publish everything committed so far; resolves when the outbox is empty (used by tests and shutdown). */
  readonly flush: Effect.Effect<void>
}>()("app/stream/OutboxRelay") {
  static readonly layer = Layer.effect(
    OutboxRelay,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const nats = yield* Nats
      const wakeups = yield* Queue.sliding<void>(1)

      /** Publishes one batch; returns how many rows it moved (0 when idle or another relay holds the lock). */
      const publishBatch = sql.withTransaction(Effect.gen(function*() {
        const [lock] = yield* sql<{ locked: boolean }>`SELECT pg_try_advisory_xact_lock(${RELAY_LOCK}) AS locked`
        if (!lock?.locked) return -1
        const rows = yield* sql<{ id: string; subject: string; payload: unknown }>`
          SELECT id, subject, payload FROM outbox ORDER BY seq LIMIT ${BATCH} FOR UPDATE`
        if (rows.length === 0) return 0
        // Pipelined on one connection: JetStream stores them in this order.
        yield* Effect.tryPromise(() =>
          Promise.all(rows.map((row) =>
            nats.js.publish(row.subject, JSON.stringify(row.payload), { msgID: row.id })
          ))
        )
        yield* sql`DELETE FROM outbox WHERE id IN ${sql.in(rows.map((row) => row.id))}`
        return rows.length
      }))

      const drain: Effect.Effect<void> = Effect.gen(function*() {
        while (true) {
          const moved = yield* publishBatch
          if (moved < BATCH) return moved
        }
      }).pipe(
        Effect.asVoid,
        Effect.catchCause((cause) => Effect.logWarning("outbox relay batch failed; will retry", cause))
      )

      yield* Effect.gen(function*() {
        while (true) {
          yield* drain
          yield* Effect.race(Queue.take(wakeups), Effect.sleep(Duration.seconds(1)))
        }
      }).pipe(Effect.forkScoped)

      const flush = Effect.gen(function*() {
        while (true) {
          yield* drain
          const [pending] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox`
          if ((pending?.n ?? 0) === 0) return
          yield* Effect.sleep(Duration.millis(20))
        }
      }).pipe(Effect.orDie)

      return OutboxRelay.of({ wake: Queue.offer(wakeups, undefined).pipe(Effect.asVoid), flush })
    })
  )
}
