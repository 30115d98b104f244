/**
 * Publishes committed outbox rows to JetStream and deletes them once acknowledged.
 *
 * - Runs in every process; a transaction-scoped advisory lock makes one relay publish at a time, so
 *   messages reach the stream in commit order (`seq`).
 * - `Nats-Msg-Id` = outbox id: a relay that crashes after publishing but before deleting republishes
 *   on restart and JetStream drops the duplicate.
 * - Woken at once by every committed outbox insert (a trigger NOTIFYs `mailstream_outbox`, which the
 *   relay LISTENs to; writers in this process may also call `wake`), so an idle relay does nothing;
 *   it looks anyway every SAFETY_POLL (a notification lost while the listening connection was down),
 *   and every RETRY while NATS is unreachable or another relay is publishing.
 * - One row never holds up the others: the rows of a batch are judged one by one, in order. A row
 *   NATS refuses for itself (over the server's max payload, a stream limit) is moved to `dead_letters`
 *   with the reason at once (a full JetStream store is not the row's fault: the relay waits, as for NATS
 *   unreachable); a row that keeps failing while the rows around it go through is moved
 *   after MAX_ATTEMPTS. Only when NATS itself is unreachable does the relay wait, and then it stops
 *   at the first failed row, deleting everything published before it, so order is kept.
 * - A lane actor publishes its own batches' rows itself, after the commit (ProjectActors), and hands
 *   their ids to `forget`; it calls `drainNow` when rows of its lane may still wait here, so that
 *   nothing it publishes overtakes them.
 */
import { Context, Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { WorkerMetrics } from "../observability/Metrics.ts"
import { uuidv7 } from "../domain/ids.ts"
import { makeWakeup } from "../lib/dueLoop.ts"
import { listenTo } from "../lib/notifications.ts"
import { pgArray } from "../lib/pgArray.ts"
import { Nats } from "./Nats.ts"
import { OUTBOX_CHANNEL } from "./Outbox.ts"

const RELAY_LOCK = 0x6d61696c // "mail": arbitrary, fixed
const BATCH = 1000
/** Failures of one row, while other rows of its batches were published, before it is set aside. */
const MAX_ATTEMPTS = 5
/** Without a notification, how often the relay looks for rows anyway. */
const SAFETY_POLL = Duration.seconds(30)
/** How soon the relay tries again when it could not publish (NATS unreachable, another relay publishing). */
const RETRY = Duration.seconds(1)

interface OutboxRow {
  readonly seq: string
  readonly id: string
  readonly subject: string
  readonly payload: string
  readonly attempts: number
}

type Verdict =
  | { readonly _tag: "published" }
  | { readonly _tag: "refused"; readonly reason: string }
  | { readonly _tag: "failed"; readonly reason: string }

/**
 * JetStream errors about the server's storage, not the message: the account's or the server's store is
 * full (10002 account resources exceeded, 10023 insufficient resources, 10028 memory and 10047 storage
 * resources exceeded) or could not write (10077 stream store failed). Publishing again once there is
 * room succeeds.
 */
const STORAGE_ERRORS: ReadonlySet<number> = new Set([10002, 10023, 10028, 10047, 10077])

/** Errors that are about the message itself, so publishing it again cannot succeed. */
export const isRefusal = (error: unknown): boolean => {
  const name = (error as { name?: unknown })?.name
  if (name === "InvalidArgumentError") return true // e.g. max_payload exceeded, checked by the client
  // A JetStream API error answered for this message (e.g. 10054 maximum message size exceeded);
  // 503 (no responders / not ready) and a full store are about the server, not the message.
  const { code, status } = error as { code?: unknown; status?: unknown }
  return name === "JetStreamApiError" && status !== 503 && !STORAGE_ERRORS.has(code as number)
}

const describe = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error))

export class OutboxRelay extends Context.Service<OutboxRelay, {
  /** Ask the relay to publish now (cheap; coalesces). */
  readonly wake: Effect.Effect<void>
  /** Publish everything committed so far; resolves when the outbox is empty (used by tests and shutdown). */
  readonly flush: Effect.Effect<void>
  /**
   * Publishes what is in the outbox now, waiting for another process's relay to finish first: true when
   * every row committed before the call is in the stream (published here or by that relay).
   */
  readonly drainNow: Effect.Effect<boolean>
  /** Deletes rows their producer published itself (in the background, many at once). */
  readonly forget: (ids: ReadonlyArray<string>) => Effect.Effect<void>
}>()("app/stream/OutboxRelay") {
  static readonly layer = Layer.effect(
    OutboxRelay,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const nats = yield* Nats
      const wakeup = yield* makeWakeup

      const publishOne = (row: OutboxRow): Promise<Verdict> =>
        nats.js.publish(row.subject, row.payload, { msgID: row.id }).then(
          (): Verdict => ({ _tag: "published" }),
          (error: unknown): Verdict =>
            isRefusal(error) ? { _tag: "refused", reason: describe(error) } : { _tag: "failed", reason: describe(error) }
        )

      /** Moves rows that cannot be published to dead_letters (with the reason) and out of the outbox. */
      const setAside = (rows: ReadonlyArray<{ readonly row: OutboxRow; readonly reason: string }>) =>
        Effect.gen(function*() {
          if (rows.length === 0) return
          const letters = rows.map(({ row, reason }) => {
            let projectId: unknown
            try {
              projectId = JSON.parse(row.payload)?.projectId
            } catch {
              projectId = undefined
            }
            return {
              id: uuidv7(),
              projectId: typeof projectId === "string" ? projectId : null,
              subject: row.subject,
              payload: row.payload,
              error: `not published: ${reason}`.slice(0, 4000)
            }
          })
          yield* sql`
            INSERT INTO dead_letters (id, project_id, source, subject, payload, error)
            SELECT (x->>'id')::uuid, (x->>'projectId')::uuid, 'outbox', x->>'subject', x->>'payload', x->>'error'
            FROM jsonb_array_elements(${JSON.stringify(letters.filter((letter) => letter.projectId !== null))}::jsonb) x`
          yield* sql`DELETE FROM outbox WHERE id IN ${sql.in(rows.map(({ row }) => row.id))}`
          for (const { row, reason } of rows) {
            yield* Effect.logError("outbox row set aside as a dead letter", { id: row.id, subject: row.subject, reason })
          }
          WorkerMetrics.deadLettered.inc(rows.length)
        })

      /**
       * Publishes one batch: how many rows it moved, and whether it got through them all (not when
       * another relay holds the lock or a row could not be published: the caller tries again later).
       */
      const publishBatch = (waitForLock: boolean) =>
        sql.withTransaction(Effect.gen(function*() {
          const [lock] = waitForLock
            ? yield* sql<{ locked: boolean }>`SELECT true AS locked FROM (SELECT pg_advisory_xact_lock(${RELAY_LOCK})) l`
            : yield* sql<{ locked: boolean }>`SELECT pg_try_advisory_xact_lock(${RELAY_LOCK}) AS locked`
          if (!lock?.locked) return { moved: 0, complete: false }
          const rows = yield* sql<OutboxRow>`
          SELECT seq, id, subject, payload::text AS payload, attempts FROM outbox ORDER BY seq LIMIT ${BATCH} FOR UPDATE`
          if (rows.length === 0) return { moved: 0, complete: true }
          // Pipelined on one connection: JetStream stores them in this order.
          const verdicts = yield* Effect.promise(() => Promise.all(rows.map(publishOne)))
          const anyPublished = verdicts.some((verdict) => verdict._tag === "published")
          const done: Array<string> = []
          const refused: Array<{ row: OutboxRow; reason: string }> = []
          let retry: { row: OutboxRow; reason: string } | undefined
          for (let i = 0; i < rows.length; i++) {
            const row = rows[i]!
            const verdict = verdicts[i]!
            if (verdict._tag === "published") done.push(row.id)
            else if (verdict._tag === "refused") refused.push({ row, reason: verdict.reason })
            else if (anyPublished && row.attempts + 1 >= MAX_ATTEMPTS) {
              // NATS is up (others went through) and this row keeps failing on its own.
              refused.push({ row, reason: `${verdict.reason} (failed ${row.attempts + 1} times while other messages were published)` })
            } else {
              // Stop here, keeping order: later rows stay in the outbox (a republish is deduplicated).
              retry = { row, reason: verdict.reason }
              break
            }
          }
          if (done.length > 0) yield* sql`DELETE FROM outbox WHERE id IN ${sql.in(done)}`
          yield* setAside(refused)
          if (retry) {
            if (anyPublished) yield* sql`UPDATE outbox SET attempts = attempts + 1 WHERE id = ${retry.row.id}`
            yield* Effect.logWarning("outbox relay could not publish; will retry", { id: retry.row.id, reason: retry.reason })
            return { moved: done.length + refused.length, complete: false }
          }
          return { moved: rows.length, complete: true }
        }))

      /** Publishes until the outbox is empty; answers false when it could not (try again after RETRY). */
      const drainWith = (waitForLock: boolean): Effect.Effect<boolean> =>
        Effect.gen(function*() {
          while (true) {
            const { moved, complete } = yield* publishBatch(waitForLock)
            if (!complete) return false
            if (moved < BATCH) return true
          }
        }).pipe(
          Effect.catchCause((cause) => Effect.as(Effect.logWarning("outbox relay batch failed; will retry", cause), false))
        )

      const drain = drainWith(false)
      const drainNow = drainWith(true)

      // Rows published by their producer, deleted in one statement per round.
      let forgotten: Array<string> = []
      const forgetWakeup = yield* makeWakeup
      const deleteForgotten = Effect.gen(function*() {
        while (forgotten.length > 0) {
          const ids = forgotten
          forgotten = []
          // A failure leaves the rows to the relay, which publishes them again (deduplicated by id).
          yield* sql`DELETE FROM outbox WHERE id = ANY(${pgArray(ids)}::uuid[])`.pipe(
            Effect.catchCause((cause) => Effect.logWarning("could not delete published outbox rows; the relay will", cause))
          )
        }
      })
      yield* Effect.forever(Effect.andThen(forgetWakeup.wait(Duration.toMillis(SAFETY_POLL)), deleteForgotten)).pipe(Effect.forkScoped)
      // Shutting down, what is left is deleted too, so no relay publishes it again later (a restart past
      // JetStream's duplicate window would make it a duplicate).
      yield* Effect.addFinalizer(() => deleteForgotten)
      const forget = (ids: ReadonlyArray<string>) =>
        ids.length === 0 ? Effect.void : Effect.andThen(Effect.sync(() => forgotten.push(...ids)), forgetWakeup.signal)

      yield* listenTo(OUTBOX_CHANNEL, () => wakeup.signal, wakeup.signal)
      yield* Effect.gen(function*() {
        while (true) {
          const drained = yield* drain
          yield* wakeup.wait(Duration.toMillis(drained ? SAFETY_POLL : RETRY))
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

      return OutboxRelay.of({ wake: wakeup.signal, flush, drainNow, forget })
    })
  )
}
