/**
 * A segment's backfill, lane by lane: its lane's contacts evaluated in chunks between the lane's message
 * batches, a chunk that fails narrowed down to the contact that fails.
 */
import { type Cause, Effect } from "effect"
import { windowedSince } from "../domain/conditions/evaluate.ts"
import { uuidv7 } from "../domain/ids.ts"
import { reasonOf, setAsideLogged } from "../lib/isolation.ts"
import {
  backfillChunkRows,
  nextBackfillContact,
  projectBackfillDone,
  recordLaneBackfill,
  segmentBackfilledIfAllLanes
} from "../store/engine/backfill.ts"
import type { ProjectSegments, SegmentContext, SegmentDef } from "./segmentDefs.ts"
import { type ContactChange, emptyChange, evaluateChanges } from "./segmentEvaluation.ts"
import { loadFacts } from "./segmentFacts.ts"
import { writeMembershipChanges } from "../store/engine/memberships.ts"
import { setTimers } from "./segmentWrites.ts"

export const BACKFILL_CHUNK = 5_000

/** The contacts a backfill in this context goes through: its lane's (all the project's without a lane). */
const scopeOf = (context: SegmentContext) => ({ projectId: context.projectId, lane: context.lane, laneCount: context.outbox.lanes.count })

/**
 * One chunk of a segment's backfill (contacts after `cursor` by id): membership from the SQL evaluator,
 * timers from the in-memory one for time-dependent conditions. Returns the next cursor, or undefined
 * when the segment is done (then its backfilled_version is recorded).
 */
export const backfillChunk = Effect.fnUntraced(function*(
  context: SegmentContext,
  segments: ProjectSegments,
  def: SegmentDef,
  cursor: string,
  emit: boolean,
  clock: number,
  generation: number,
  limit = BACKFILL_CHUNK
) {
  const chunk = yield* backfillChunkRows(scopeOf(context), def, cursor, clock, limit)
  const at = new Date(clock).toISOString()
  const entries = chunk.filter((row) => row.matches && !row.member).map((row) => ({ segmentId: def.id, contactId: row.id, at }))
  const exits = chunk.filter((row) => !row.matches && row.member).map((row) => ({ segmentId: def.id, contactId: row.id, at }))
  yield* writeMembershipChanges(context.outbox.lanes, context.projectId, entries, exits)
  if (emit && def.trackMembership) {
    const emails = new Map(chunk.map((row) => [row.id, row.email]))
    yield* context.outbox.emit(
      context.projectId,
      [
        ...entries.map((e) => ({ ...e, kind: "entry" })),
        ...exits.map((e) => ({ ...e, kind: "exit" }))
      ].map((change) => ({
        name: `segment.${def.slug}.${change.kind}`,
        contactId: change.contactId,
        email: emails.get(change.contactId) ?? "",
        data: { segmentId: def.id, segmentName: def.name },
        at
      }))
    )
  }
  if (def.reads.timeDependent && chunk.length > 0) {
    // Exact time boundaries: ask the in-memory evaluator when each contact's answer will flip.
    const facts = yield* loadFacts(
      context.projectId,
      chunk.map((row) => row.id),
      def.reads.events,
      new Set(def.reads.windows.keys()),
      windowedSince(clock, Math.max(0, ...def.reads.windows.values()))
    )
    const timers: Array<{ contactId: string; dueAt: string; id: string }> = []
    for (const contact of facts.values()) {
      const next = def.evaluate(contact, clock).nextChangeAt
      if (next !== undefined && next > clock) timers.push({ contactId: contact.id, dueAt: new Date(next).toISOString(), id: uuidv7() })
    }
    yield* setTimers(context, timers)
  }
  // Segments that read this one's membership follow it.
  const dependents = segments.bySegment.get(def.id) ?? []
  if (dependents.length > 0 && entries.length + exits.length > 0) {
    const changes = new Map<string, ContactChange>()
    for (const change of [...entries, ...exits]) {
      changes.set(change.contactId, { ...emptyChange(), segments: new Set(dependents.map((d) => d.id)) })
    }
    yield* evaluateChanges(context, segments, changes, clock)
  }
  if (chunk.length < limit) {
    yield* backfillDone(context, segments, def, generation)
    return undefined
  }
  return chunk[chunk.length - 1]!.id
})

/**
 * A lane went through all its contacts: recorded for the lane, and when every lane has done this
 * version and generation, on the segment (backfilled_version) — unless another recompute was requested
 * meanwhile (then the next reload starts over).
 */
const backfillDone = Effect.fnUntraced(function*(context: SegmentContext, segments: ProjectSegments, def: SegmentDef, generation: number) {
  if (context.lane === undefined) {
    if (yield* projectBackfillDone(def.id, def.version, generation)) segments.populated.add(def.id)
    return
  }
  yield* recordLaneBackfill(def.id, context.lane, def.version, generation)
  segments.populated.add(def.id)
  yield* segmentBackfilledIfAllLanes(def.id, context.outbox.lanes.count, def.version, generation)
})

/** Where a backfill is, and how it is narrowing down a contact it cannot evaluate. */
export interface BackfillCursor {
  readonly segmentId: string
  cursor: string
  /** Contacts per chunk while narrowing down a failure (unset: BACKFILL_CHUNK). */
  limit?: number | undefined
  /** Contacts skipped with no chunk passing in between. */
  strikes?: number | undefined
}

/** Contacts skipped with nothing passing in between, after which the segment itself is what fails. */
const MAX_STRIKES = 3

/**
 * A backfill chunk failed on its own (not the lease, not the database being away): the chunk is halved
 * until the contact that fails is alone, and that contact is skipped (logged, counted) so the backfill
 * goes on at full size. When contacts fail one after another, the segment cannot be evaluated at all:
 * the failure is handed back, and the actor drops the backfill (logged) as it always did.
 */
export const narrowBackfill = <E>(context: SegmentContext, job: BackfillCursor, cause: Cause.Cause<E>) =>
  Effect.gen(function*() {
    const limit = job.limit ?? BACKFILL_CHUNK
    if (limit > 1) {
      job.limit = Math.ceil(limit / 2)
      return
    }
    if ((job.strikes ?? 0) + 1 >= MAX_STRIKES) return yield* Effect.failCause(cause)
    const contact = yield* nextBackfillContact(scopeOf(context), job.cursor)
    if (!contact) return yield* Effect.failCause(cause)
    // The contact keeps its membership as it was; the segment's other contacts go on.
    yield* setAsideLogged(
      "segment backfill",
      { projectId: context.projectId, segmentId: job.segmentId, contactId: contact.id },
      reasonOf(cause),
      cause
    )
    job.cursor = contact.id
    job.strikes = (job.strikes ?? 0) + 1
    job.limit = undefined
  })

/** A chunk went through: no strikes, and the chunks grow back to full size. */
export const backfillChunkPassed = (job: BackfillCursor) => {
  job.strikes = undefined
  if (job.limit !== undefined) job.limit = job.limit * 2 >= BACKFILL_CHUNK ? undefined : job.limit * 2
}
