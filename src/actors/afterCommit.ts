/**
 * What follows a lane batch's commit: its outbox rows published (by the actor itself when it may, else by
 * the relay), the loops the batch concerns woken, the live pages told, its messages acked and the partition's
 * watermark moved.
 */
import { Clock, Effect } from "effect"
import { WorkerMetrics } from "../observability/Metrics.ts"
import type { Outbox, OutboxRow } from "../stream/Outbox.ts"
import type { OutboxRelay } from "../stream/OutboxRelay.ts"
import type { BatchOutcome } from "./batchContext.ts"
import type { PartitionRun } from "./partitionRun.ts"
import type { ActorItem } from "./messages.ts"

/** A timer due within this wakes the worker's timer loop after the batch (it looks by itself at least this often). */
const SOON_MS = 30_000

/** What of an actor its batches' commits read and set. */
export interface CommittingActor {
  readonly run: PartitionRun
  /** See the Actor interface in ProjectActors.ts. */
  outboxClear: boolean
}

export const makeAfterCommit = (options: {
  readonly outbox: Outbox["Service"]
  readonly relay: Pick<OutboxRelay["Service"], "wake" | "drainNow" | "forget">
  readonly wakeSender: (projectId: string) => Effect.Effect<void>
  readonly wakeWebhooks: Effect.Effect<void>
  readonly wakeSegmentTimers: Effect.Effect<void>
  readonly wakeWorkflowTimers: Effect.Effect<void>
  /** The project's data changed: the dashboard's live pages refetch (stream/LiveSignals.ts). */
  readonly changed: (projectId: string) => Effect.Effect<void>
  /** An acked message's events leave the worker's delivery budget (deliveryBudget.ts). */
  readonly acked: (run: PartitionRun, seq: number) => Effect.Effect<void>
}) => {
  /**
   * After a batch's commit its outbox rows go out (they were written without a NOTIFY, see applyBatch).
   * The actor publishes them itself when it knows them all and no older row of its lane waits in the
   * outbox: one NATS round trip, where the relay takes a transaction of five round trips shared by the
   * whole process (M5's OUT leg). Otherwise the relay does, in `seq` order: at once and awaited when
   * the batch's rows are known (the actor may then publish its own again), else woken.
   */
  const publishCommitted = (actor: CommittingActor, ownRows: ReadonlyArray<OutboxRow> | undefined) =>
    Effect.gen(function*() {
      if (ownRows === undefined) {
        actor.outboxClear = false
        return yield* options.relay.wake
      }
      if (!actor.outboxClear) {
        actor.outboxClear = yield* options.relay.drainNow
        if (!actor.outboxClear) yield* options.relay.wake
        return
      }
      if (ownRows.length === 0) return
      if (yield* options.outbox.publishCommitted(ownRows)) {
        WorkerMetrics.publishedByActors.inc(ownRows.length)
        return yield* options.relay.forget(ownRows.map((row) => row.id))
      }
      actor.outboxClear = false
      yield* options.relay.wake
    })

  /** What follows a batch's commit: its outbox rows out, the loops it concerns woken, its messages acked. */
  const afterCommit = (
    projectId: string,
    actor: CommittingActor,
    batch: ReadonlyArray<ActorItem>,
    outcome: BatchOutcome,
    started: number
  ) =>
    Effect.gen(function*() {
      const run = actor.run
      yield* publishCommitted(actor, outcome.ownRows)
      if (outcome.mailQueued) yield* options.wakeSender(projectId)
      if (outcome.webhooksQueued) yield* options.wakeWebhooks
      // The scheduled-work loops sleep up to 30 s: a timer due sooner wakes them to look again.
      if (outcome.soonestTimerAt !== undefined && outcome.soonestTimerAt - (yield* Clock.currentTimeMillis) < SOON_MS)
        yield* options.wakeSegmentTimers
      if (outcome.workflowTimersSet) yield* options.wakeWorkflowTimers
      if (outcome.applied > 0) yield* options.changed(projectId)
      for (const item of batch) item.message.ack()
      for (const item of batch) run.applied(item.delivered.seq)
      for (const item of batch) yield* options.acked(run, item.delivered.seq)
      WorkerMetrics.batchSize.observe(batch.length)
      WorkerMetrics.batchSeconds.observe((performance.now() - started) / 1000)
      WorkerMetrics.messagesApplied.inc(outcome.applied)
      WorkerMetrics.messagesSkipped.inc(outcome.skipped)
      WorkerMetrics.eventsApplied.inc(outcome.eventsInserted)
      WorkerMetrics.emitted.inc(outcome.emitted)
    })

  return { publishCommitted, afterCommit }
}
