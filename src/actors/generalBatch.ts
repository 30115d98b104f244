/**
 * The statement-by-statement path of a batch (any messages, in order): runs of tracked and emitted events
 * applied set-wise (contacts folded and written in one statement, events and aggregates in another),
 * commands, bulk rows, timers, contact changes and workflow messages each in its place; then the segments
 * re-evaluated for what changed (with the events recorded about the batch's own contacts, a few rounds
 * deep) and the workflows run. applyBatch takes it after its head for every batch that is not tracked
 * events only.
 */
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { TrackedEvent } from "../ingest/EventPublisher.ts"
import type { EmittedEvent } from "../stream/Outbox.ts"
import { segmentSlug } from "../store/Segments.ts"
import { campaignStep } from "../campaigns/fanout.ts"
import { applyBulk } from "./applyBulk.ts"
import { importStep } from "./importStep.ts"
import { createMissingContacts, type LockedContact, lockContacts as lockContactsSql, writeContacts } from "../store/engine/contacts.ts"
import { oversizedSql } from "../store/engine/deadLetters.ts"
import { deleteEventsNamed, type EventRow, insertEvents } from "../store/engine/events.ts"
import { addMemberCounts, leaveAllSegments } from "../store/engine/memberships.ts"
import { recomputeSegment } from "../store/engine/segments.ts"
import { type ContactState, contactStateOf, foldTrackedEvents, type SubscriptionEmitted } from "./contactFold.ts"
import { changeRecorder, continueThroughIn, MAX_OWN_EVENT_ROUNDS } from "./trackBatch.ts"
import { runWorkflows, type WorkflowInput } from "../workflows/engine.ts"
import { recomputeReaders, reloadSegments } from "./laneSegments.ts"
import type { Delivered, EmittedEventMessage } from "./messages.ts"
import { type ContactChange, emptyChange, evaluateChanges } from "./segmentEvaluation.ts"
import { loadFacts } from "./segmentFacts.ts"
import type { BatchContext, BatchOutcome } from "./batchContext.ts"

export interface GeneralBatchInput {
  /** The batch's messages not applied before, in order. */
  readonly fresh: ReadonlyArray<Delivered>
  /** The contacts of its tracked events as the head locked them. */
  readonly prelocked: ReadonlyArray<LockedContact>
  /** Whether an event (or event delete) at its ingest position is new to the lane (and marks it seen). */
  readonly unseen: (item: { readonly pos?: number | undefined }) => boolean
  readonly outcome: { -readonly [K in keyof BatchOutcome]: BatchOutcome[K] }
}

export const applyGeneralBatch = Effect.fnUntraced(function*(context: BatchContext, input: GeneralBatchInput) {
  const { fresh, unseen, outcome } = input
  let prelocked: ReadonlyArray<LockedContact> | undefined = input.prelocked
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
      const left = yield* leaveAllSegments(contactId)
      yield* addMemberCounts(context.outbox.lanes, left.map((row) => ({ segmentId: row.segment_id, contactId, n: -1 })))
      const exits = left.filter((row) => row.track_membership)
      yield* context.outbox.emit(
        context.projectId,
        exits.map((row) => ({
          name: `segment.${segmentSlug(row.name)}.exit`,
          contactId,
          email,
          data: { segmentId: row.segment_id, segmentName: row.name },
          at
        }))
      )
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
        change.at = Math.min(Date.parse(body.dueAt), yield* Clock.currentTimeMillis)
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
          yield* deleteEventsNamed(context.projectId, body.name, context.lane, context.outbox.lanes.count)
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
          yield* recomputeSegment(context.projectId, body.segmentId)
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
  yield* evaluateChanges(segmentContext, segments, changes, yield* Clock.currentTimeMillis)
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
    yield* evaluateChanges(segmentContext, segments, followUp, yield* Clock.currentTimeMillis)
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
})

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
  const lockContacts = () => lockContactsSql(sql, context.projectId, emails)
  const wanted = new Set(emails)
  let rows = prelocked ? prelocked.filter((row) => wanted.has(row.email)) : yield* lockContacts()
  const createdHere = new Set<string>()
  if (rows.length < emails.length) {
    const known = new Set(rows.map((row) => row.email))
    const missing = new Map<string, TrackedEvent>()
    for (const event of tracked) if (!known.has(event.email) && !missing.has(event.email)) missing.set(event.email, event)
    yield* createMissingContacts(context.projectId, [...missing.values()], new Date().toISOString())
    rows = yield* lockContacts()
    for (const row of rows) if (!known.has(row.email)) createdHere.add(row.id)
  }
  const byEmail = new Map<string, ContactState>(rows.map((row) => [row.email, contactStateOf(row)]))
  const { events, oversized } = foldTrackedEvents(byEmail, tracked, changeOf, emitted, createdHere)
  if (oversized.length > 0) yield* oversizedSql(sql, context.projectId, context.partition, oversized)
  yield* writeContacts(context.projectId, byEmail.values(), new Date().toISOString())
  return events
})
