/**
 * One actor fiber per lane of a project (and one per project for messages published before lanes): a
 * bounded mailbox, created on the lane's first message and passivated after IDLE of silence. The actor applies its messages in order, in batches (one
 * transaction each, see applyBatch), acks them after the commit, and advances its partition's
 * watermark. A lost lease stops the actor; other failures are retried with backoff, same batch.
 */
import { Cause, Deferred, Duration, Effect, Exit, Fiber, Option, Queue } from "effect"
import type { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"
import { WorkerMetrics } from "../observability/Metrics.ts"
import type { Outbox } from "../stream/Outbox.ts"
import type { OutboxRelay } from "../stream/OutboxRelay.ts"
import { describeFailure, type Outcome, withRetry } from "./actorRetries.ts"
import { makeAfterCommit } from "./afterCommit.ts"
import { makeDeliveryBudget } from "./deliveryBudget.ts"
import { applyBatch } from "./applyBatch.ts"
import { PartitionRun } from "./partitionRun.ts"
import { LeaseLost } from "./batchContext.ts"
import { deadLetter } from "./deadLetter.ts"
import { applyBackfillChunk, reloadSegments } from "./laneSegments.ts"
import { combinable } from "./combinedBatch.ts"
import { makeFactsCache } from "./laneFacts.ts"
import { makeLaneTurns } from "./laneTurns.ts"
import type { ActorItem } from "./messages.ts"
import { type Pipeline, ReadAheadAbandoned, readAheadCount, trackedContacts } from "./readAhead.ts"
import { type Actor, actorKey, type Attempt } from "./actorState.ts"
import { newWorkflowState } from "../workflows/engine.ts"
import { WorkflowRuntime } from "../workflows/Runtime.ts"
export { PartitionRun } from "./partitionRun.ts"

const MAILBOX_CAPACITY = 5_000

const MAX_BATCH = 1_000
const IDLE = Duration.seconds(60)
/** How long a lane waits before trying again messages it could neither apply nor set aside. */
const PUT_BACK_PAUSE = Duration.seconds(5)

export const makeProjectActors = (options: {
  readonly workerId: string
  readonly outbox: Outbox["Service"]
  /** Publishes what a batch's actor did not (see publishCommitted). */
  readonly relay: Pick<OutboxRelay["Service"], "wake" | "drainNow" | "forget">
  /** Wakes the project's sender when mail was queued. */
  readonly wakeSender: (projectId: string) => Effect.Effect<void>
  readonly wakeSegmentTimers: Effect.Effect<void>
  readonly wakeWorkflowTimers: Effect.Effect<void>
  /** Tells the dashboard's live pages a project's data changed. */
  readonly changed: (projectId: string) => Effect.Effect<void>
  /** Start a lane's next batch of tracked events while the one before it commits (readAhead.ts). */
  readonly readAhead: boolean
}) =>
  Effect.gen(function*() {
    const actors = new Map<string, Actor>()
    /** Lanes whose actor passivated with nothing left in the outbox, on this run of their partition. */
    const clearWhenPassivated = new Map<string, PartitionRun>()
    const services = yield* Effect.context<SqlClient.SqlClient>()
    const workflowRuntime = yield* WorkflowRuntime
    const turns = yield* makeLaneTurns
    const config = yield* AppConfig
    const factsCache = makeFactsCache(config.factsCacheContacts)

    const budget = yield* makeDeliveryBudget(config.workerMaxPendingEvents)
    const { publishCommitted, afterCommit } = makeAfterCommit({
      ...options,
      wakeWebhooks: workflowRuntime.wakeWebhooks,
      acked: budget.release
    })

    const contextOf = (projectId: string, actor: Actor, pipeline?: Pipeline) => ({
      projectId,
      lane: actor.lane,
      partition: actor.run.partition,
      epoch: actor.run.epoch,
      workerId: options.workerId,
      outbox: options.outbox,
      segmentState: actor.segmentState,
      workflows: { runtime: workflowRuntime, state: actor.workflowState },
      pipeline
    })

    const apply = (projectId: string, actor: Actor, batch: ReadonlyArray<ActorItem>) =>
      Effect.gen(function*() {
        const started = performance.now()
        const outcome = yield* applyBatch(contextOf(projectId, actor), batch.map((item) => item.delivered))
        yield* afterCommit(projectId, actor, batch, outcome, started)
      })

    /**
     * Messages neither applied nor set aside (their dead letter could not be written) go back to the front
     * of the lane, tried again after a pause: the lane never moves on past them, since a later batch would
     * move its offset over them and their redelivery would then be skipped as applied (events lost, silently).
     */
    const putBack = (projectId: string, actor: Actor, rest: ReadonlyArray<ActorItem>, error: string) =>
      Effect.gen(function*() {
        yield* Effect.logError("stream messages neither applied nor set aside; their lane tries them again", {
          projectId,
          lane: actor.lane,
          seqs: rest.map((item) => item.delivered.seq),
          error
        })
        actor.held.unshift(...rest)
        yield* Effect.sleep(PUT_BACK_PAUSE)
        return { _tag: "poison", error } as Outcome
      })

    /**
     * A batch that keeps failing is applied message by message; the one that still fails on its own is
     * dead-lettered (kept in `dead_letters`), so one bad message never holds up the rest.
     */
    const isolate = (projectId: string, actor: Actor, batch: ReadonlyArray<ActorItem>) =>
      Effect.gen(function*() {
        for (const [index, item] of batch.entries()) {
          const single = yield* withRetry(projectId, actor, apply(projectId, actor, [item]))
          if (single._tag === "lease-lost") return single
          if (single._tag === "poison") {
            const parked = yield* withRetry(projectId, actor, deadLetter(contextOf(projectId, actor), item.delivered, single.error))
            // Stopping: the rest is left to the partition's next owner.
            if (parked._tag === "lease-lost" || actor.run.stopped) return parked
            if (parked._tag === "poison") return yield* putBack(projectId, actor, batch.slice(index), parked.error)
            yield* Effect.logError("stream message dead-lettered", { projectId, seq: item.delivered.seq, error: single.error })
            WorkerMetrics.deadLettered.inc()
            item.message.ack()
            actor.run.applied(item.delivered.seq)
            yield* budget.release(actor.run, item.delivered.seq)
          }
        }
        return { _tag: "ok" } as Outcome
      })

    /**
     * Applies a batch: tracked events in the project's next turn with the worker's other lanes (laneTurns.ts)
     * when it can be, otherwise (or when the turn leaves it out) alone, retried and isolated as needed.
     */
    const applyInTurn = (projectId: string, actor: Actor, items: ReadonlyArray<ActorItem>) =>
      Effect.gen(function*() {
        const context = contextOf(projectId, actor)
        const batch = items.map((item) => item.delivered)
        if (combinable(context, batch)) {
          const started = performance.now()
          const outcome = yield* turns.apply(context, batch)
          if (outcome !== undefined) {
            yield* afterCommit(projectId, actor, items, outcome, started)
            return { _tag: "ok" } as Outcome
          }
        }
        const outcome = yield* withRetry(projectId, actor, apply(projectId, actor, items))
        // Stopping, retries end early: the batch is left to the partition's next owner, not isolated.
        if (outcome._tag === "poison" && !actor.run.stopped) return yield* isolate(projectId, actor, items)
        return outcome
      })

    /**
     * Starts a batch's transaction in a fiber of its own (a child of the actor's loop, so stopping the
     * actor rolls it back); `previous` is the batch it is read ahead of.
     */
    const startAttempt = (projectId: string, actor: Actor, items: ReadonlyArray<ActorItem>, previous?: Attempt) =>
      Effect.gen(function*() {
        const committing = yield* Deferred.make<void>()
        const signalCommitting = Effect.asVoid(Deferred.succeed(committing, undefined))
        const attempt = { items, committing, started: performance.now(), ahead: previous !== undefined, reachedCommit: false }
        const pipeline: Pipeline = {
          committing: Effect.andThen(Effect.sync(() => void (attempt.reachedCommit = true)), signalCommitting),
          after: previous && {
            committed: Effect.map(Fiber.await(previous.fiber), Exit.isSuccess),
            through: Math.max(...previous.items.map((item) => item.delivered.seq))
          }
        }
        const fiber = yield* applyBatch(contextOf(projectId, actor, pipeline), items.map((item) => item.delivered)).pipe(
          Effect.ensuring(signalCommitting),
          Effect.forkChild
        )
        return Object.assign(attempt, { fiber }) satisfies Attempt
      })

    /** A batch's transaction may run in its own fiber when it is tracked events only and nothing else is pending. */
    const readsAhead = (actor: Actor) =>
      options.readAhead && actor.lane !== undefined && actor.segmentState.segments !== undefined &&
      actor.segmentState.backfills.length === 0 && !actor.run.stopped

    /** Once `current` commits: the messages waiting that may go ahead of its commit, started as the next batch. */
    const readAheadOf = (projectId: string, actor: Actor, current: Attempt) =>
      Effect.gen(function*() {
        if (actor.held.length < MAX_BATCH && Queue.sizeUnsafe(actor.mailbox) > 0) {
          actor.held.push(...(yield* Queue.takeBetween(actor.mailbox, 1, MAX_BATCH - actor.held.length)))
        }
        const count = readAheadCount(current.items.map((item) => item.delivered), actor.held.map((item) => item.delivered), MAX_BATCH)
        if (count === 0) return undefined
        return yield* startAttempt(projectId, actor, actor.held.splice(0, count), current)
      })

    /**
     * Applies a batch that runs in its own fiber: while it commits, the next batch may be read ahead (returned
     * for the loop to finish next). A batch whose fiber failed (the one before it did not commit, a
     * transient error, a lost lease) is applied again the ordinary way, retried and isolated as any other.
     */
    const finishAttempt = (projectId: string, actor: Actor, attempt: Attempt) =>
      Effect.gen(function*() {
        yield* Deferred.await(attempt.committing)
        const next = attempt.reachedCommit && readsAhead(actor) ? yield* readAheadOf(projectId, actor, attempt) : undefined
        const exit = yield* Fiber.await(attempt.fiber)
        if (Exit.isSuccess(exit)) {
          if (attempt.ahead) WorkerMetrics.readAhead.inc(1, { outcome: "committed" })
          yield* afterCommit(projectId, actor, attempt.items, exit.value, attempt.started)
          return { outcome: { _tag: "ok" } as Outcome, next }
        }
        const error = Cause.squash(exit.cause)
        if (error instanceof ReadAheadAbandoned) {
          WorkerMetrics.readAhead.inc(1, { outcome: "abandoned" })
        } else if (!Cause.hasInterrupts(exit.cause) && !(error instanceof LeaseLost)) {
          WorkerMetrics.batchFailures.inc()
          yield* Effect.logWarning("actor transaction failed", { projectId, lane: actor.lane, error: describeFailure(error) })
        }
        // The batch read ahead of this one gives up anyway (this one did not commit): its messages go back in
        // front of the lane's, so whatever of this batch is put back (see putBack) still comes first.
        if (next !== undefined) {
          yield* Fiber.interrupt(next.fiber)
          WorkerMetrics.readAhead.inc(1, { outcome: "abandoned" })
          actor.held.unshift(...next.items)
        }
        let outcome = yield* withRetry(projectId, actor, apply(projectId, actor, attempt.items))
        if (outcome._tag === "poison" && !actor.run.stopped) outcome = yield* isolate(projectId, actor, attempt.items)
        return { outcome, next: undefined }
      })

    /** The next batch: messages held back by a read-ahead first, then the mailbox's (waiting up to IDLE for one). */
    const takeBatch = (actor: Actor) =>
      Effect.gen(function*() {
        if (actor.held.length === 0) return yield* Queue.takeBetween(actor.mailbox, 1, MAX_BATCH).pipe(Effect.timeoutOption(IDLE))
        const items = actor.held.splice(0, MAX_BATCH)
        if (items.length < MAX_BATCH && Queue.sizeUnsafe(actor.mailbox) > 0) {
          items.push(...(yield* Queue.takeBetween(actor.mailbox, 1, MAX_BATCH - items.length)))
        }
        return Option.some(items)
      })

    const loop = (projectId: string, actor: Actor): Effect.Effect<void> =>
      Effect.gen(function*() {
        if (actor.resumingBackfills) {
          // Started for its backfills, not for a message: load its segments, which queues what this lane has left.
          // (A failure is logged by withRetry; the lane's next message loads them again.)
          yield* withRetry(projectId, actor, Effect.asVoid(reloadSegments(contextOf(projectId, actor), actor.segmentState)))
        }
        // The batch read ahead of the last one's commit, to finish next.
        let ahead: Attempt | undefined
        while (!actor.run.stopped) {
          // A pending backfill advances one chunk at a time, between message batches.
          if (ahead === undefined && actor.segmentState.backfills.length > 0) {
            actor.busy = true
            const result = yield* withRetry(
              projectId,
              actor,
              Effect.flatMap(
                applyBackfillChunk(contextOf(projectId, actor)),
                (chunk) => publishCommitted(actor, chunk.emitted ? undefined : [])
              )
            )
            actor.busy = false
            if (result._tag === "lease-lost") break
            if (result._tag === "poison") {
              // A backfill that cannot run is dropped (logged); compute or an edit starts it again.
              yield* Effect.logError("segment backfill abandoned", { projectId, error: result.error })
              actor.segmentState.backfills.shift()
            }
            if (Queue.sizeUnsafe(actor.mailbox) === 0 && actor.held.length === 0) continue
          }
          let outcome: Outcome
          if (ahead !== undefined) {
            const finished = yield* finishAttempt(projectId, actor, ahead)
            outcome = finished.outcome
            ahead = finished.next
          } else {
            const next = yield* takeBatch(actor)
            if (Option.isNone(next)) {
              // Passivate, unless a message slipped in meanwhile.
              if (Queue.sizeUnsafe(actor.mailbox) === 0 && actors.get(actor.key) === actor) {
                actors.delete(actor.key)
                if (actor.outboxClear) clearWhenPassivated.set(actor.key, actor.run)
                WorkerMetrics.actorsAlive.set(actors.size)
                return
              }
              continue
            }
            actor.busy = true
            if (readsAhead(actor) && trackedContacts(next.value.map((item) => item.delivered)) !== undefined) {
              const finished = yield* finishAttempt(projectId, actor, yield* startAttempt(projectId, actor, next.value))
              outcome = finished.outcome
              ahead = finished.next
            } else {
              outcome = yield* applyInTurn(projectId, actor, next.value)
            }
          }
          actor.busy = ahead !== undefined
          if (outcome._tag === "lease-lost") {
            // The new owner re-reads from the partition's watermark; nothing was acked here.
            actor.run.stopped = true
          }
        }
        // A batch read ahead is rolled back: the partition's next owner applies it.
        if (ahead !== undefined) yield* Fiber.interrupt(ahead.fiber)
        if (actors.get(actor.key) === actor) actors.delete(actor.key)
        WorkerMetrics.actorsAlive.set(actors.size)
      }).pipe(Effect.provideContext(services))

    /** The lane's actor for this partition run, started when there is none. */
    const actorFor = (projectId: string, lane: number | undefined, run: PartitionRun, resumingBackfills: boolean) =>
      Effect.gen(function*() {
        const key = actorKey(projectId, lane)
        const actor = actors.get(key)
        if (actor && actor.run === run) return actor
        if (actor?.fiber) yield* Fiber.interrupt(actor.fiber)
        const mailbox = yield* Queue.bounded<ActorItem>(MAILBOX_CAPACITY)
        const outboxClear = clearWhenPassivated.get(key) === run
        clearWhenPassivated.delete(key)
        const fresh: Actor = {
          key,
          lane,
          run,
          mailbox,
          segmentState: { segments: undefined, backfills: [], facts: factsCache.lane() },
          workflowState: newWorkflowState(),
          busy: false,
          resumingBackfills,
          outboxClear,
          held: []
        }
        actors.set(key, fresh)
        fresh.fiber = yield* Effect.forkDetach(loop(projectId, fresh))
        WorkerMetrics.actorsAlive.set(actors.size)
        return fresh
      })

    /** Hands a message to its project's actor, creating it when needed; waits while the mailbox is full. */
    const deliver = (item: ActorItem) =>
      budget.take(item.run, item.delivered).pipe(
        Effect.andThen(actorFor(item.delivered.body.projectId, item.delivered.lane, item.run, false)),
        Effect.flatMap((actor) => Queue.offer(actor.mailbox, item))
      )

    /**
     * Starts a lane's actor with no message, for the backfills its lane has left: after a partition
     * changes hands, a lane that gets no traffic would otherwise never finish them (nor its segments).
     */
    const resumeBackfills = (projectId: string, lane: number, run: PartitionRun) => Effect.asVoid(actorFor(projectId, lane, run, true))

    /**
     * Stops the actors of a partition this worker no longer owns. With `finishWithin` (a graceful hand-over)
     * an actor inside a transaction commits it first, for that long at most; otherwise, or after that, it
     * is interrupted, which rolls the transaction back (the next owner applies those messages again).
     */
    const stopPartition = (run: PartitionRun, finishWithin?: Duration.Input) =>
      Effect.gen(function*() {
        run.stopped = true
        for (const [key, cleared] of clearWhenPassivated) if (cleared === run) clearWhenPassivated.delete(key)
        const waiting: Array<Fiber.Fiber<void>> = []
        const idle: Array<Fiber.Fiber<void>> = []
        for (const [key, actor] of actors) {
          if (actor.run === run) {
            actors.delete(key)
            if (actor.fiber) (finishWithin !== undefined && actor.busy ? waiting : idle).push(actor.fiber)
          }
        }
        yield* Fiber.interruptAll(idle)
        if (waiting.length > 0 && finishWithin !== undefined) {
          // The loop checks `run.stopped` after its batch, so a finishing actor ends by itself.
          yield* Fiber.awaitAll(waiting).pipe(Effect.timeoutOption(finishWithin))
          yield* Fiber.interruptAll(waiting)
        }
        // What the run's actors held and did not apply is the stream's again (its next owner is sent it).
        yield* budget.releaseRun(run)
        WorkerMetrics.actorsAlive.set(actors.size)
      })

    const stopAll = Effect.suspend(() => Fiber.interruptAll([...actors.values()].flatMap((actor) => (actor.fiber ? [actor.fiber] : []))))

    return { deliver, resumeBackfills, stopPartition, stopAll, size: () => actors.size }
  })
