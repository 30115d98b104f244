/**
 * Applies one batch of a project's stream messages in one Postgres transaction:
 * events (insert, skipping ids already stored) and their per-contact aggregates, contact changes
 * carried by tracked events (data patches and subscription, in order), emitted events into the
 * outbox, commands (delete events by name), and the project's applied stream sequence. The
 * partition's lease is checked (and share-locked) in the same transaction, so a worker that lost
 * its lease cannot commit.
 */
import { Cause, Clock, Data, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { windowedSince } from "../domain/conditions/evaluate.ts"
import { uuidv7 } from "../domain/ids.ts"
import type { TrackedEvent } from "../ingest/EventPublisher.ts"
import type { EmittedEvent, Outbox, OutboxRow } from "../stream/Outbox.ts"
import { segmentSlug } from "../store/Segments.ts"
import { campaignStep } from "../campaigns/fanout.ts"
import { applyBulk } from "./applyBulk.ts"
import { batchHeadSql } from "./batchHead.ts"
import type { LaneFacts } from "./laneFacts.ts"
import { importStep } from "./importStep.ts"
import { contactStateOf, type ContactState, contactWritesSql, type EventRow, foldTrackedEvents, type LockedContact, oversizedSql, storeEventsCtes, type SubscriptionEmitted } from "./contactFold.ts"
import { applyTrackedBatch, changeRecorder, continueThroughIn, MAX_OWN_EVENT_ROUNDS } from "./trackBatch.ts"
import { runWorkflows, type WorkflowInput, type WorkflowState } from "../workflows/engine.ts"
import type { WorkflowRuntime } from "../workflows/Runtime.ts"
import { causeIsTransient } from "../lib/isolation.ts"
import { pgArray } from "../lib/pgArray.ts"
import type { Delivered, EmittedEventMessage } from "./messages.ts"
import { INGEST_POSITIONS } from "../stream/messages.ts"
import type { ConditionReads } from "../domain/conditions/validate.ts"
import { type Pipeline, ReadAheadAbandoned } from "./readAhead.ts"
import {
  addMemberCounts,
  backfillChunk,
  backfillChunkPassed,
  type BackfillCursor,
  type ContactChange,
  emptyChange,
  evaluateChanges,
  epochMs,
  factNames,
  type FactRow,
  factRowsSql,
  factsOf,
  loadFacts,
  loadSegments,
  narrowBackfill,
  type ProjectSegments
} from "./segments.ts"

export class LeaseLost extends Data.TaggedError("LeaseLost")<{ readonly partition: number }> {}

const isTransientOrLeaseLost = (cause: Cause.Cause<unknown>) =>
  Cause.squash(cause) instanceof LeaseLost || causeIsTransient(cause)

export interface BatchContext {
  readonly projectId: string
  /**
   * The lane whose messages this actor applies; undefined for the project's messages published before
   * lanes (drained after an upgrade, see Worker), which may touch any of its contacts.
   */
  readonly lane: number | undefined
  readonly partition: number
  readonly epoch: number
  readonly workerId: string
  readonly outbox: Outbox["Service"]
  /** The actor's segment definitions and pending backfills (kept across batches). */
  readonly segmentState: SegmentState
  /** What the workflow engine needs, and the actor's cached workflow definitions. */
  readonly workflows: { readonly runtime: WorkflowRuntime["Service"]; readonly state: WorkflowState }
  /** The batch's place in its actor's read-ahead, if it takes part (readAhead.ts). */
  readonly pipeline?: Pipeline | undefined
}

export interface Backfill extends BackfillCursor {
  readonly segmentId: string
  cursor: string
  emit: boolean
  /** The segment's backfill_generation this run serves. */
  generation: number
}

export interface SegmentState {
  segments: ProjectSegments | undefined
  backfills: Array<Backfill>
  /**
   * The facts of the lane's contacts kept between combined turns (laneFacts.ts), if any: anything else
   * the lane applies forgets them.
   */
  readonly facts?: LaneFacts | undefined
}

const FIRST_ID = "00000000-0000-0000-0000-000000000000"

/**
 * (Re)loads a project's segment definitions and queues a backfill for each one this lane is behind on:
 * a segment is done for the lane when it is done everywhere (backfilled_version) or the lane has done
 * its own contacts for this version and generation (segment_backfills). The actor of messages published
 * before lanes backfills nothing: the lanes do.
 */
export const reloadSegments = Effect.fnUntraced(function*(context: Pick<BatchContext, "projectId" | "lane">, state: SegmentState) {
  const sql = yield* SqlClient.SqlClient
  state.facts?.forget()
  state.segments = yield* loadSegments(context.projectId)
  if (context.lane === undefined) {
    state.backfills = []
    return state.segments
  }
  const laneDone = new Map((yield* sql<{ segment_id: string; version: number; generation: number }>`
    SELECT b.segment_id, b.version, b.generation FROM segment_backfills b JOIN segments s ON s.id = b.segment_id
    WHERE s.project_id = ${context.projectId} AND b.lane = ${context.lane}`).map((row) => [row.segment_id, row]))
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
      state.backfills.push({ segmentId: def.id, cursor: FIRST_ID, emit: def.backfillEmits || lane?.version === 0, generation: def.backfillGeneration })
    } else if (job.generation < def.backfillGeneration) {
      // Requested again while running: start over so contacts already passed are seen again.
      job.cursor = FIRST_ID
      job.emit = job.emit || def.backfillEmits
      job.generation = def.backfillGeneration
    }
  }
  return state.segments
})


export interface BatchOutcome {
  readonly applied: number
  readonly skipped: number
  readonly eventsInserted: number
  readonly emitted: number
  /** The batch carried queued mail for the project's sender. */
  readonly mailQueued: boolean
  /** Workflow WEBHOOK steps were recorded: wake the webhook runner. */
  readonly webhooksQueued: boolean
  /** The soonest segment timer the batch set (ms), if any. */
  readonly soonestTimerAt?: number | undefined
  /** The batch set workflow timers (DELAY, WAIT_FOR_EVENT timeouts). */
  readonly workflowTimersSet?: boolean | undefined
  /** The batch was tracked events only, applied by one write statement (trackBatch.ts). */
  readonly appliedInOneWrite?: boolean | undefined
  /**
   * Every row the batch appended to the outbox, in order, when it knows them all (a one-write batch);
   * undefined when statements of its own appended rows it does not list: the relay publishes those.
   */
  readonly ownRows?: ReadonlyArray<OutboxRow> | undefined
}

export const applyBatch = Effect.fnUntraced(function*(context: BatchContext, batch: ReadonlyArray<Delivered>) {
  const sql = yield* SqlClient.SqlClient
  // Whatever it changes, the lane's facts are read from Postgres again after it.
  context.segmentState.facts?.forget()
  return yield* sql.withTransaction(Effect.gen(function*() {
    // One round trip: the lease (share-locked: a takeover waits for this batch), the lane's offset as it
    // was, and the offset moved past the batch (its highest sequence; what it skips is below the offset).
    const batchEnd = Math.max(...batch.map((message) => message.seq))
    // The highest ingest position the batch carries (events split from ingest envelopes, IngestSplitter.ts).
    let batchPos = 0
    for (const message of batch) {
      if (message.body.kind === "track") for (const event of message.body.events) batchPos = Math.max(batchPos, event.pos ?? 0)
      if (message.body.kind === "command" && message.body.type === "deleteEvents") batchPos = Math.max(batchPos, message.body.pos ?? 0)
    }
    const offsets = context.lane === undefined
      ? {
        read: sql`SELECT applied_seq, 0 AS ingest_pos FROM project_offsets WHERE project_id = ${context.projectId} FOR UPDATE`,
        write: sql`
          INSERT INTO project_offsets (project_id, applied_seq) VALUES (${context.projectId}, ${batchEnd})
          ON CONFLICT (project_id) DO UPDATE SET applied_seq = GREATEST(project_offsets.applied_seq, EXCLUDED.applied_seq)`
      }
      : {
        read: sql`SELECT applied_seq, ingest_pos FROM lane_offsets WHERE project_id = ${context.projectId} AND lane = ${context.lane} FOR UPDATE`,
        write: sql`
          INSERT INTO lane_offsets (project_id, lane, applied_seq, ingest_pos) VALUES (${context.projectId}, ${context.lane}, ${batchEnd}, ${batchPos})
          ON CONFLICT (project_id, lane) DO UPDATE SET applied_seq = GREATEST(lane_offsets.applied_seq, EXCLUDED.applied_seq),
                                                       ingest_pos = GREATEST(lane_offsets.ingest_pos, EXCLUDED.ingest_pos)`
      }
    // The project's reset watermark too (share-locked: a batch and a reset of its project wait for each other).
    // And the contacts of the batch's tracked events, locked (in id order, as every locker does): the
    // first fold of tracked events starts from them without a round trip of its own.
    const trackedEmails = [...new Set(batch.flatMap((message) => message.body.kind === "track" ? message.body.events.map((event) => event.email) : []))]
    // A batch of tracked events only is applied in one write (trackBatch.ts): its head also reads what
    // the segments read about its contacts, and which of its events are already stored.
    const segmentsLoaded = context.segmentState.segments
    const withFacts = segmentsLoaded !== undefined && batch.every((message) => message.body.kind === "track")
    const names = segmentsLoaded ? factNames(segmentsLoaded) : { eventNames: new Set<string>(), windowed: new Set<string>(), longestWindowMs: 0 }
    // A tracked batch evaluates at the clock as it is after the head, so no later than this.
    const since = windowedSince(yield* Clock.currentTimeMillis, names.longestWindowMs)
    const eventIds = withFacts ? batch.flatMap((message) => message.body.kind === "track" ? message.body.events.map((event) => event.eventId) : []) : []
    const rows = yield* batchHeadSql(sql, {
      projectId: context.projectId,
      ctes: sql`
        lease AS (
          SELECT 1 FROM partition_leases
          WHERE partition = ${context.partition} AND owner = ${context.workerId} AND epoch = ${context.epoch}
          FOR SHARE
        ), offset_row AS (${offsets.read}), moved AS (${offsets.write} RETURNING 1),
        reset AS (SELECT data_reset_seq FROM projects WHERE id = ${context.projectId} FOR SHARE)`,
      held: sql`EXISTS (SELECT 1 FROM lease)`,
      data: sql`jsonb_build_object(
        'applied_seq', (SELECT applied_seq FROM offset_row)::text, 'ingest_pos', (SELECT ingest_pos FROM offset_row)::text,
        'reset_seq', (SELECT data_reset_seq FROM reset)::text, 'moved', (SELECT count(*) FROM moved))`,
      emails: trackedEmails,
      eventIds,
      facts: withFacts ? { ...names, since } : undefined
    })
    const headRow = rows.find((row) => row.kind === "h")
    const head = (typeof headRow?.data === "string" ? JSON.parse(headRow.data) : headRow?.data) as {
      applied_seq: string | null
      ingest_pos: string | null
      reset_seq: string | null
    }
    const after = context.pipeline?.after
    if (after) {
      // Read ahead (readAhead.ts): the head waited for the batch before this one to end; go on only if it committed.
      if (!(yield* after.committed)) return yield* new ReadAheadAbandoned({ reason: "previous-failed" })
      if (Number(head.applied_seq ?? 0) < after.through) return yield* new ReadAheadAbandoned({ reason: "offset-behind" })
    }
    if (headRow?.subscribed !== true) return yield* new LeaseLost({ partition: context.partition })
    const lockedRows: Array<LockedContact> = []
    const stored = new Set<string>()
    for (const row of rows) {
      if (row.kind === "c") {
        lockedRows.push({ id: row.contact_id, email: row.name, subscribed: row.subscribed === true, pinned_at: row.pins ?? {}, data: row.data as LockedContact["data"] })
      } else if (row.kind === "e") {
        stored.add(row.contact_id)
      }
    }
    let prelocked: ReadonlyArray<LockedContact> | undefined = lockedRows
    // Only messages beyond everything applied so far, in this batch too: a redelivered copy of a
    // message earlier in the same batch (consumer recreated, ack_wait redelivery) is skipped as well.
    // Messages queued before the project's last reset are skipped: nothing of the wiped data comes back.
    let highest = Math.max(head.applied_seq === null ? 0 : Number(head.applied_seq), head.reset_seq === null ? 0 : Number(head.reset_seq))
    const fresh = batch.filter((message) => {
      if (message.seq <= highest) return false
      highest = message.seq
      return true
    })
    // Events split again after a splitter crashed or moved come back in new lane messages: each ingest
    // position is applied once (they only grow within a lane). An event whose envelope (same stream)
    // was queued before the project's last reset is skipped like any message from before it.
    let ingestPos = head.ingest_pos === null ? 0 : Number(head.ingest_pos)
    const resetSeq = head.reset_seq === null ? 0 : Number(head.reset_seq)
    // Event deletes come the same way (every lane gets one at its place among the events), positioned too.
    const unseen = ({ pos }: { readonly pos?: number | undefined }) => {
      if (pos === undefined) return true
      if (pos <= ingestPos || Math.floor(pos / INGEST_POSITIONS) <= resetSeq) return false
      ingestPos = pos
      return true
    }
    const outcome: {
      applied: number
      skipped: number
      eventsInserted: number
      emitted: number
      mailQueued: boolean
      webhooksQueued: boolean
      soonestTimerAt?: number | undefined
      workflowTimersSet?: boolean | undefined
      appliedInOneWrite?: boolean | undefined
      ownRows?: ReadonlyArray<OutboxRow> | undefined
    } = { applied: fresh.length, skipped: batch.length - fresh.length, eventsInserted: 0, emitted: 0, mailQueued: false, webhooksQueued: false }
    if (fresh.length === 0) {
      // An actor's first batch loads its segments, which queues its lane's backfills, even when all of it
      // was applied before (redelivered to a partition's new owner): a lane may get nothing else.
      if (context.segmentState.segments === undefined) yield* reloadSegments(context, context.segmentState)
      outcome.ownRows = []
      return outcome
    }
    const lockedEmails = new Set(lockedRows.map((row) => row.email))
    if (
      withFacts && segmentsLoaded &&
      fresh.every((message) => message.body.kind === "track" && message.body.events.every((event) => lockedEmails.has(event.email)))
    ) {
      const tracked: Array<TrackedEvent> = []
      for (const message of fresh) if (message.body.kind === "track") for (const event of message.body.events) if (unseen(event)) tracked.push(event)
      return yield* applyTrackedBatch(context, segmentsLoaded, tracked, { contacts: lockedRows, facts: factsOf(rows as ReadonlyArray<FactRow>), stored }, outcome)
    }

    // Runs of events are applied set-wise; a command is a barrier applied in its place.
    let events: Array<EventRow> = []
    let tracked: Array<TrackedEvent> = []
    const emitted: Array<SubscriptionEmitted> = []
    // What changed per contact, for the segment engine at the end of the batch.
    const changes = new Map<string, ContactChange>()
    const changeOf = changeRecorder(changes)
    let segmentsChanged = context.segmentState.segments === undefined
    // The batch's events and workflow messages, in stream order, for the workflow engine.
    const workflowInputs: Array<WorkflowInput> = []

    const flushEvents = Effect.gen(function*() {
      if (tracked.length > 0) {
        events.push(...(yield* applyContactChanges(context, tracked, emitted, changeOf, prelocked)))
        // Later folds in this batch read the contacts as the first one left them.
        prelocked = undefined
        tracked = []
      }
      if (events.length > 0) {
        // Only events stored now drive workflows: a replayed or republished event is stored once and
        // must not start or resume anything a second time.
        const inserted = yield* insertEvents(context.projectId, events)
        for (const event of events) if (inserted.has(event.id)) workflowInputs.push({ kind: "event", ...event })
        outcome.eventsInserted += inserted.size
        events = []
      }
    })

    /** A deleted contact ends its workflow executions (cancelled) and leaves its segments like any other member would. */
    const contactDeleted = (contactId: string, email: string, at: string) =>
      Effect.gen(function*() {
        workflowInputs.push({ kind: "contactDeleted", contactId })
        const left = yield* sql<{ segment_id: string; name: string; track_membership: boolean }>`
          WITH gone AS (
            DELETE FROM segment_memberships WHERE contact_id = ${contactId} AND exited_at IS NULL RETURNING segment_id
          )
          SELECT s.id AS segment_id, s.name, s.track_membership FROM segments s JOIN gone ON s.id = gone.segment_id`
        yield* addMemberCounts(context.outbox.lanes, left.map((row) => ({ segmentId: row.segment_id, contactId, n: -1 })))
        const exits = left.filter((row) => row.track_membership)
        yield* context.outbox.emit(context.projectId, exits.map((row) => ({
          name: `segment.${segmentSlug(row.name)}.exit`,
          contactId,
          email,
          data: { segmentId: row.segment_id, segmentName: row.name },
          at
        })))
        outcome.emitted += exits.length
        changes.delete(contactId)
      })

    for (const message of fresh) {
      const body = message.body
      switch (body.kind) {
        case "track":
          // Events already in `events` (fed back) must keep their order relative to tracked ones.
          if (events.length > 0 && tracked.length === 0) yield* flushEvents
          for (const event of body.events) if (unseen(event)) tracked.push(event)
          break
        case "event":
          if (tracked.length > 0) yield* flushEvents
          events.push(emittedToRow(body))
          changeOf(body.contactId, body.at).events.add(body.name)
          break
        case "email":
          // The rows are already committed as PENDING; the sender picks them up after this batch.
          outcome.mailQueued = true
          break
        case "timer": {
          const change = changeOf(body.contactId)
          change.timer = true
          // Exactly when the window lapsed, not when the message happened to be read.
          change.at = Math.min(Date.parse(body.dueAt), (yield* Clock.currentTimeMillis))
          break
        }
        case "contact":
          if (body.type === "contact.field_deleted" && typeof body.field === "string") {
            const top = body.field.split(".").slice(0, 2).join(".")
            if (yield* recomputeReaders(context, (reads) => reads.fields.has(top))) segmentsChanged = true
          }
          if (body.contactId && (body.type === "contact.created" || body.type === "contact.updated")) {
            changeOf(body.contactId, body.at).fields = "all"
          }
          if (body.contactId && body.type === "contact.deleted") yield* contactDeleted(body.contactId, body.contact?.email ?? "", body.at)
          // Subscription changes made through the api (POST/PATCH /contacts, /v1/send) are emitted here.
          if (
            (body.type === "contact.updated" || body.type === "contact.created") && body.contact &&
            typeof body.previousSubscribed === "boolean" &&
            body.previousSubscribed !== body.contact.subscribed
          ) {
            emitted.push({
              name: body.contact.subscribed ? "contact.subscribed" : "contact.unsubscribed",
              contactId: body.contact.id,
              email: body.contact.email,
              at: body.at,
              source: body.source ?? "api"
            })
          }
          break
        case "workflow":
          yield* flushEvents
          workflowInputs.push(body)
          break
        case "bulk":
          yield* flushEvents
          yield* applyBulk(context.projectId, body, {
            changeOf,
            contactDeleted,
            subscriptionChanged: (contactId, email, subscribed, at, source) =>
              emitted.push({ name: subscribed ? "contact.subscribed" : "contact.unsubscribed", contactId, email, at, source })
          })
          break
        case "command":
          yield* flushEvents
          if (body.type === "deleteEvents" && unseen(body)) {
            // Each lane deletes its own contacts' events (the command goes to every lane).
            yield* sql`DELETE FROM events WHERE project_id = ${context.projectId} AND name = ${body.name} AND ${laneOfContact(sql, context, "contact_id")}`
            yield* sql`DELETE FROM event_aggregates WHERE project_id = ${context.projectId} AND name = ${body.name}
                       AND ${laneOfContact(sql, context, "contact_id")}`
            // Segments reading that event may lose members: recompute them (with entry/exit events).
            if (yield* recomputeReaders(context, (reads) => reads.events.has(body.name))) segmentsChanged = true
          } else if (body.type === "segmentsChanged") {
            segmentsChanged = true
          } else if (body.type === "computeSegment" && context.lane !== undefined) {
            // Published before lanes reached this lane's subjects only by replay: the api now records the
            // request on the segment itself and tells every lane with segmentsChanged.
            segmentsChanged = true
          } else if (body.type === "computeSegment") {
            // Recorded on the segment, so a crash or a rebalance before it finishes does not lose it.
            yield* sql`UPDATE segments SET backfilled_version = LEAST(backfilled_version, version - 1), backfill_emits = true,
                               backfill_generation = backfill_generation + 1
                       WHERE id = ${body.segmentId} AND project_id = ${context.projectId}`
            const state = context.segmentState
            state.backfills = state.backfills.filter((job) => job.segmentId !== body.segmentId)
            segmentsChanged = true
          } else if (body.type === "importStep") {
            const step = yield* importStep({ projectId: context.projectId, lane: body.lane, outbox: context.outbox }, body.jobId, body.range)
            if (step.handedOver > 0) outcome.emitted++
          } else if (body.type === "campaignStep") {
            const { runtime } = context.workflows
            const step = yield* campaignStep(
              { ...context, mail: runtime.mail, billing: runtime.billing },
              body.campaignId
            )
            if (step.queued > 0) outcome.mailQueued = true
            if (step.continued) outcome.emitted++
          }
          break
      }
    }
    yield* flushEvents

    // Events this actor emits about its own contacts (subscription changes, segment entry/exit) go out
    // on OUT and are recorded here, in this batch, with the workflows they trigger: they do not travel
    // back through IN to come to this same actor a batch later.
    const own: Array<EventRow> = []
    const emitOwn = (events: ReadonlyArray<EmittedEvent>) =>
      events.length === 0 ? Effect.void : Effect.map(context.outbox.emitOut(context.projectId, events), (out) => {
        for (const event of out) own.push({ id: event.id, contactId: event.contactId, name: event.name, data: event.data, at: event.at })
        outcome.emitted += out.length
      })
    yield* emitOwn(emitted.map((event) => ({
      name: event.name,
      contactId: event.contactId,
      email: event.email,
      data: { contactId: event.contactId, email: event.email, source: event.source },
      at: event.at
    })))

    const segments = segmentsChanged
      ? yield* reloadSegments(context, context.segmentState)
      : context.segmentState.segments!
    const segmentContext = {
      projectId: context.projectId,
      lane: context.lane,
      outbox: context.outbox,
      emit: emitOwn,
      onTimers: (soonest: number) => void (outcome.soonestTimerAt = Math.min(outcome.soonestTimerAt ?? Infinity, soonest))
    }
    yield* evaluateChanges(segmentContext, segments, changes, (yield* Clock.currentTimeMillis))
    // What the recorded events change (segments reading `contact.subscribed`, `segment.x.entry`, …) is
    // evaluated in turn, a few rounds deep; a longer chain continues through IN, as any event would.
    for (let round = 0; own.length > 0; round++) {
      const recorded = own.splice(0)
      if (round === MAX_OWN_EVENT_ROUNDS) {
        yield* continueThroughIn(context, recorded)
        break
      }
      const inserted = yield* insertEvents(context.projectId, recorded)
      outcome.eventsInserted += inserted.size
      const followUp = new Map<string, ContactChange>()
      for (const event of recorded) {
        if (!inserted.has(event.id)) continue
        workflowInputs.push({ kind: "event", ...event })
        let change = followUp.get(event.contactId)
        if (!change) followUp.set(event.contactId, change = emptyChange())
        change.events.add(event.name)
      }
      yield* evaluateChanges(segmentContext, segments, followUp, (yield* Clock.currentTimeMillis))
    }

    const advanced = yield* runWorkflows(
      {
        projectId: context.projectId,
        partitionOf: (contactId) => context.outbox.lanes.partitionOf(context.projectId, context.outbox.lanes.laneOf(contactId)),
        runtime: context.workflows.runtime,
        state: context.workflows.state,
        loadFacts
      },
      workflowInputs
    )
    if (advanced.mailQueued) outcome.mailQueued = true
    if (advanced.webhooksQueued) outcome.webhooksQueued = true
    if (advanced.timersSet) outcome.workflowTimersSet = true

    return outcome
  }).pipe(
    // The body is done, COMMIT comes next: the lane's next batch may be read ahead from here (readAhead.ts).
    // Later would not overlap the commit; earlier, the next batch would leave out what arrives meanwhile.
    Effect.tap(() => context.pipeline?.committing ?? Effect.void)
  ))
})

/** The highest stream sequence applied, for the lane (or, before lanes, the project). */
const recordOffset = (context: BatchContext, seq: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    context.lane === undefined
      ? sql`
          INSERT INTO project_offsets (project_id, applied_seq) VALUES (${context.projectId}, ${seq})
          ON CONFLICT (project_id) DO UPDATE SET applied_seq = GREATEST(project_offsets.applied_seq, EXCLUDED.applied_seq)`
      : sql`
          INSERT INTO lane_offsets (project_id, lane, applied_seq) VALUES (${context.projectId}, ${context.lane}, ${seq})
          ON CONFLICT (project_id, lane) DO UPDATE SET applied_seq = GREATEST(lane_offsets.applied_seq, EXCLUDED.applied_seq)`)

/** SQL: the contact `column` belongs to the context's lane (any, for messages published before lanes). */
const laneOfContact = (sql: SqlClient.SqlClient, context: BatchContext, column: string) =>
  context.lane === undefined
    ? sql`true`
    : sql`(get_byte(uuid_send(${sql.literal(column)}), 15) % ${sql.literal(String(context.outbox.lanes.count))}) = ${context.lane}`

const emittedToRow = (message: EmittedEventMessage): EventRow => ({
  id: message.eventId,
  contactId: message.contactId,
  name: message.name,
  data: message.data,
  at: message.at
})

/**
 * Locks the contacts of the tracked events (creating any that are missing, e.g. deleted since the
 * api resolved them), folds each contact's changes in order, writes them in one statement, and
 * returns the events attached to the authoritative contact ids.
 */
const applyContactChanges = Effect.fnUntraced(function*(
  context: BatchContext,
  tracked: ReadonlyArray<TrackedEvent>,
  emitted: Array<SubscriptionEmitted>,
  changeOf: (contactId: string, at?: string) => ContactChange,
  /** The batch's contacts as its head statement locked them (a superset of these events' contacts). */
  prelocked: ReadonlyArray<LockedContact> | undefined
) {
  const sql = yield* SqlClient.SqlClient
  const emails = [...new Set(tracked.map((event) => event.email))]
  const lockContacts = () =>
    sql<LockedContact>`
      SELECT id, email, subscribed, pinned_at, data FROM contacts
      WHERE project_id = ${context.projectId}
        AND email = ANY(${pgArray(emails)}::text[])
      ORDER BY id
      FOR UPDATE`
  const wanted = new Set(emails)
  let rows = prelocked ? prelocked.filter((row) => wanted.has(row.email)) : yield* lockContacts()
  const createdHere = new Set<string>()
  if (rows.length < emails.length) {
    const known = new Set(rows.map((row) => row.email))
    const missing = new Map<string, TrackedEvent>()
    for (const event of tracked) if (!known.has(event.email) && !missing.has(event.email)) missing.set(event.email, event)
    const now = new Date().toISOString()
    yield* sql`
      INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      -- The api's id, unless that id now belongs to another contact (its email changed meanwhile).
      -- A fresh id keeps the api's last byte, so the contact stays in this lane.
      SELECT CASE WHEN EXISTS (SELECT 1 FROM contacts WHERE id = (x->>'contactId')::uuid)
                  THEN encode(overlay(uuid_send(gen_random_uuid()) PLACING substring(uuid_send((x->>'contactId')::uuid) FROM 16 FOR 1)
                                      FROM 16 FOR 1), 'hex')::uuid
                  ELSE (x->>'contactId')::uuid END,
             ${context.projectId}, x->>'email', COALESCE((x->>'subscribed')::boolean, true),
             '{}'::jsonb, ${now}::timestamptz, ${now}::timestamptz
      FROM jsonb_array_elements(${JSON.stringify([...missing.values()])}::jsonb) x
      ON CONFLICT DO NOTHING`
    rows = yield* lockContacts()
    for (const row of rows) if (!known.has(row.email)) createdHere.add(row.id)
  }
  const byEmail = new Map<string, ContactState>(rows.map((row) => [row.email, contactStateOf(row)]))
  const { events, oversized } = foldTrackedEvents(byEmail, tracked, changeOf, emitted, createdHere)
  if (oversized.length > 0) yield* oversizedSql(sql, context.projectId, context.partition, oversized)
  const writes = contactWritesSql(sql, context.projectId, byEmail.values(), new Date().toISOString())
  if (writes.count > 0) {
    // One round trip: the contacts and the types of the custom fields they now have.
    yield* sql`
      WITH updated AS (${writes.updated} RETURNING 1), fields AS (${writes.fields} RETURNING 1)
      SELECT (SELECT count(*) FROM updated) + (SELECT count(*) FROM fields) AS n`
  }
  return events
})

/** Inserts events (ids already stored are skipped), folds the inserted ones into the aggregates, returns their ids. */
const insertEvents = Effect.fnUntraced(function*(projectId: string, events: ReadonlyArray<EventRow>) {
  const sql = yield* SqlClient.SqlClient
  const inserted = yield* sql<{ id: string }>`
    WITH ${storeEventsCtes(sql, projectId, events)}
    SELECT id FROM ins`
  return new Set(inserted.map((row) => row.id))
})

/**
 * Marks for recomputation (a backfill that emits entry/exit) the project's segments whose condition
 * reads what `matches` picks; true when any was marked (the caller then reloads its definitions).
 */
const recomputeReaders = Effect.fnUntraced(function*(context: BatchContext, matches: (reads: ConditionReads) => boolean) {
  const sql = yield* SqlClient.SqlClient
  const segments = context.segmentState.segments ?? (yield* loadSegments(context.projectId))
  const ids = segments.ordered.filter((def) => matches(def.reads)).map((def) => def.id)
  if (ids.length === 0) return false
  if (context.lane !== undefined) {
    // Only this lane's contacts changed (each lane handles the command for its own): the lane alone
    // recomputes (version 0 marks the lane behind; see reloadSegments), durably, with entry/exit.
    yield* sql`
      INSERT INTO segment_backfills (segment_id, lane, version, generation)
      SELECT id, ${context.lane}, 0, 0 FROM unnest(${pgArray(ids)}::uuid[]) AS id
      ON CONFLICT (segment_id, lane) DO UPDATE SET version = 0`
    return true
  }
  yield* sql`UPDATE segments SET backfilled_version = LEAST(backfilled_version, version - 1), backfill_emits = true,
                               backfill_generation = backfill_generation + 1
             WHERE project_id = ${context.projectId} AND id = ANY(${pgArray(ids)}::uuid[])`
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
    const leases = yield* sql`
      SELECT 1 FROM partition_leases
      WHERE partition = ${context.partition} AND owner = ${context.workerId} AND epoch = ${context.epoch}
      FOR SHARE`
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
      (yield* Clock.currentTimeMillis),
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
        : Effect.failCause(cause))
  )
  if (!outcome.job) return { emitted }
  backfillChunkPassed(outcome.job)
  if (outcome.next === undefined) state.backfills = state.backfills.filter((job) => job !== outcome.job)
  else outcome.job.cursor = outcome.next
  return { emitted }
})

/**
 * Sets aside one message that fails deterministically: recorded in `dead_letters` and counted as
 * applied for its project (in one lease-checked transaction), so the messages after it can proceed.
 */
export const deadLetter = Effect.fnUntraced(function*(context: BatchContext, message: Delivered, error: string) {
  const sql = yield* SqlClient.SqlClient
  context.segmentState.facts?.forget()
  yield* sql.withTransaction(Effect.gen(function*() {
    const leases = yield* sql`
      SELECT 1 FROM partition_leases
      WHERE partition = ${context.partition} AND owner = ${context.workerId} AND epoch = ${context.epoch}
      FOR SHARE`
    if (leases.length === 0) return yield* new LeaseLost({ partition: context.partition })
    yield* sql`INSERT INTO dead_letters (id, project_id, partition, seq, payload, error)
               VALUES (${uuidv7()}, ${context.projectId}, ${context.partition}, ${message.seq},
                       ${JSON.stringify(message.body)}, ${error.slice(0, 4000)})`
    yield* recordOffset(context, message.seq)
  }))
})
