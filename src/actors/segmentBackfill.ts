/**
 * A segment's backfill, lane by lane: its lane's contacts evaluated in chunks between the lane's message
 * batches, a chunk that fails narrowed down to the contact that fails.
 */
import { type Cause, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { windowedSince } from "../domain/conditions/evaluate.ts"
import { uuidv7 } from "../domain/ids.ts"
import { reasonOf, setAsideLogged } from "../lib/isolation.ts"
import { compileConditionSql } from "../store/conditionSql.ts"
import type { ProjectSegments, SegmentContext, SegmentDef } from "./segmentDefs.ts"
import { type ContactChange, emptyChange, evaluateChanges } from "./segmentEvaluation.ts"
import { loadFacts } from "./segmentFacts.ts"
import { setTimers, writeMembershipChanges } from "./segmentWrites.ts"

/** SQL: the contact `column` is in the context's lane (always true without a lane). */
const inLane = (sql: SqlClient.SqlClient, context: SegmentContext, column: string) =>
  context.lane === undefined
    ? sql`true`
    : sql`(get_byte(uuid_send(${sql.literal(column)}), 15) % ${sql.literal(String(context.outbox.lanes.count))}) = ${context.lane}`

export const BACKFILL_CHUNK = 5_000

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
  const sql = yield* SqlClient.SqlClient
  const chunk = yield* sql<{ id: string; email: string; matches: boolean; member: boolean }>`
    SELECT c.id, c.email, ${compileConditionSql(sql, def.condition, clock)} AS matches,
           EXISTS (SELECT 1 FROM segment_memberships m WHERE m.segment_id = ${def.id} AND m.contact_id = c.id AND m.exited_at IS NULL) AS member
    FROM contacts c
    WHERE c.project_id = ${context.projectId} AND c.id > ${cursor}::uuid AND ${inLane(sql, context, "c.id")}
    ORDER BY c.id
    LIMIT ${limit}`
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
  const sql = yield* SqlClient.SqlClient
  if (context.lane === undefined) {
    const done = yield* sql`UPDATE segments SET backfilled_version = GREATEST(backfilled_version, ${def.version})
                            WHERE id = ${def.id} AND backfill_generation = ${generation} RETURNING id`
    if (done.length > 0) segments.populated.add(def.id)
    return
  }
  // Lanes finishing together take turns here, so the last one sees every other lane's record (NO KEY:
  // lanes hold KEY SHARE on the segment through their segment_counts rows).
  yield* sql`SELECT 1 FROM segments WHERE id = ${def.id} FOR NO KEY UPDATE`
  yield* sql`
    INSERT INTO segment_backfills (segment_id, lane, version, generation) VALUES (${def.id}, ${context.lane}, ${def.version}, ${generation})
    ON CONFLICT (segment_id, lane) DO UPDATE SET version = EXCLUDED.version, generation = EXCLUDED.generation`
  segments.populated.add(def.id)
  // Each lane checks after recording its own part, so the last lane to finish (whichever it is) sees all.
  yield* sql`
    UPDATE segments s SET backfilled_version = GREATEST(s.backfilled_version, ${def.version})
    WHERE s.id = ${def.id} AND s.backfill_generation = ${generation} AND s.version = ${def.version}
      AND (SELECT count(*) FROM segment_backfills b
           WHERE b.segment_id = s.id AND b.version >= ${def.version} AND b.generation >= ${generation}) >= ${context.outbox.lanes.count}`
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
    const sql = yield* SqlClient.SqlClient
    const [contact] = yield* sql<{ id: string }>`
      SELECT id FROM contacts WHERE project_id = ${context.projectId} AND id > ${job.cursor}::uuid AND ${inLane(sql, context, "id")}
      ORDER BY id LIMIT 1`
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
