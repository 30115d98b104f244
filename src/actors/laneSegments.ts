/**
 * A lane's segment state over its batches: definitions (re)loaded and the backfills the lane is behind on
 * queued, segments marked for recomputation when what they read is deleted, and backfill chunks run
 * between message batches.
 */
import { Cause, Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Outbox } from "../stream/Outbox.ts"
import { causeIsTransient } from "../lib/isolation.ts"
import { leaseHeldSql } from "../store/engine/leases.ts"
import { laneBackfillsDone, recomputeInLane, recomputeSegments } from "../store/engine/segments.ts"
import type { ConditionReads } from "../domain/conditions/validate.ts"
import { backfillChunk, backfillChunkPassed, narrowBackfill } from "./segmentBackfill.ts"
import { loadSegments } from "./segmentDefs.ts"
import { type Backfill, type BatchContext, LeaseLost, type SegmentState } from "./batchContext.ts"

const isTransientOrLeaseLost = (cause: Cause.Cause<unknown>) => Cause.squash(cause) instanceof LeaseLost || causeIsTransient(cause)

const FIRST_ID = "00000000-0000-0000-0000-000000000000"

/**
 * (Re)loads a project's segment definitions and queues a backfill for each one this lane is behind on:
 * a segment is done for the lane when it is done everywhere (backfilled_version) or the lane has done
 * its own contacts for this version and generation (segment_backfills). The actor of messages published
 * before lanes backfills nothing: the lanes do.
 */
export const reloadSegments = Effect.fnUntraced(function*(context: Pick<BatchContext, "projectId" | "lane">, state: SegmentState) {
  state.facts?.forget()
  state.segments = yield* loadSegments(context.projectId)
  if (context.lane === undefined) {
    state.backfills = []
    return state.segments
  }
  const laneDone = new Map((yield* laneBackfillsDone(context.projectId, context.lane)).map((row) => [row.segment_id, row]))
  state.backfills = state.backfills.filter((job) => state.segments!.byId.has(job.segmentId))
  for (const def of state.segments.ordered) {
    const lane = laneDone.get(def.id)
    if (def.backfilledVersion >= def.version && (lane === undefined || lane.version > 0)) continue
    if (lane && lane.version >= def.version && lane.generation >= def.backfillGeneration) {
      state.segments.populated.add(def.id)
      continue
    }
    const job = state.backfills.find((candidate) => candidate.segmentId === def.id)
    if (!job) {
      // A lane asked to recompute its own contacts (lane version 0: events deleted, a field removed) emits entry/exit.
      state.backfills.push({
        segmentId: def.id,
        cursor: FIRST_ID,
        emit: def.backfillEmits || lane?.version === 0,
        generation: def.backfillGeneration
      })
    } else if (job.generation < def.backfillGeneration) {
      // Requested again while running: start over so contacts already passed are seen again.
      job.cursor = FIRST_ID
      job.emit = job.emit || def.backfillEmits
      job.generation = def.backfillGeneration
    }
  }
  return state.segments
})

/**
 * Marks for recomputation (a backfill that emits entry/exit) the project's segments whose condition
 * reads what `matches` picks; true when any was marked (the caller then reloads its definitions).
 */
export const recomputeReaders = Effect.fnUntraced(function*(context: BatchContext, matches: (reads: ConditionReads) => boolean) {
  const segments = context.segmentState.segments ?? (yield* loadSegments(context.projectId))
  const ids = segments.ordered.filter((def) => matches(def.reads)).map((def) => def.id)
  if (ids.length === 0) return false
  if (context.lane !== undefined) {
    // Only this lane's contacts changed (each lane handles the command for its own): the lane alone
    // recomputes (version 0 marks the lane behind; see reloadSegments), durably, with entry/exit.
    yield* recomputeInLane(context.lane, ids)
    return true
  }
  yield* recomputeSegments(context.projectId, ids)
  return true
})

/**
 * Runs one chunk of the actor's oldest pending backfill in its own transaction (lease-checked like a
 * batch). The actor interleaves chunks with its message batches, so a large backfill never stalls them.
 * A chunk that fails on its own is narrowed down to the contact that fails, which is skipped (segments.ts).
 */
export const applyBackfillChunk = Effect.fnUntraced(function*(context: BatchContext) {
  const sql = yield* SqlClient.SqlClient
  const state = context.segmentState
  state.facts?.forget()
  let attempted: Backfill | undefined
  // Whether the chunk may have appended outbox rows (entries and exits it emitted): its actor must then
  // leave its next rows to the relay, or they could overtake these (see ProjectActors.publishCommitted).
  let emitted = false
  const outbox: Outbox["Service"] = {
    ...context.outbox,
    emit: (projectId, events) => {
      if (events.length > 0) emitted = true
      return context.outbox.emit(projectId, events)
    }
  }
  const outcome = yield* sql.withTransaction(Effect.gen(function*() {
    const leases = yield* leaseHeldSql(sql, context)
    if (leases.length === 0) return yield* new LeaseLost({ partition: context.partition })
    const segments = state.segments ?? (yield* reloadSegments(context, state))
    const job = state.backfills[0]
    if (!job) return { job: undefined, next: undefined }
    const def = segments.byId.get(job.segmentId)
    if (!def) return { job, next: undefined }
    attempted = job
    const next = yield* backfillChunk(
      { projectId: context.projectId, lane: context.lane, outbox },
      segments,
      def,
      job.cursor,
      job.emit,
      yield* Clock.currentTimeMillis,
      job.generation,
      job.limit
    )
    return { job, next }
  })).pipe(
    Effect.catchCause((cause) =>
      attempted && !Cause.hasInterrupts(cause) && !isTransientOrLeaseLost(cause)
        ? Effect.as(narrowBackfill({ projectId: context.projectId, lane: context.lane, outbox }, attempted, cause), {
          job: undefined,
          next: undefined
        })
        : Effect.failCause(cause)
    )
  )
  if (!outcome.job) return { emitted }
  backfillChunkPassed(outcome.job)
  if (outcome.next === undefined) state.backfills = state.backfills.filter((job) => job !== outcome.job)
  else outcome.job.cursor = outcome.next
  return { emitted }
})
