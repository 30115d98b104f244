/**
 * The common batch, applied in one write: tracked events only, for contacts that exist, with the
 * project's segments loaded. The batch's head statement has already locked the contacts and read what
 * the segments read about them (FactRow rows); here the events are folded into the contacts and those
 * facts in memory, the segments evaluated over them (with the entry/exit and subscription events the
 * batch records about its own contacts, a few rounds deep), and everything written by one statement.
 * So such a batch costs four round trips: BEGIN, head, write, COMMIT (workflows add theirs when the
 * events concern one). applyBatch.ts takes every other batch, statement by statement.
 */
import { Clock, Effect } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { uuidv7 } from "../domain/ids.ts"
import type { EmittedEvent, OutboxRow } from "../stream/Outbox.ts"
import type { TrackedEvent } from "../stream/messages.ts"
import { runWorkflows, type WorkflowInput } from "../workflows/engine.ts"
import type { BatchContext, BatchOutcome } from "./batchContext.ts"
import type { LockedContact } from "../store/engine/contacts.ts"
import { oversizedSql } from "../store/engine/deadLetters.ts"
import type { EventRow } from "../store/engine/events.ts"
import { laneWriteSql } from "../store/engine/laneWrite.ts"
import type { MembershipTransition } from "../store/engine/memberships.ts"
import { type ContactState, contactStateOf, foldTrackedEvents, type SubscriptionEmitted } from "./contactFold.ts"
import { type ContactChange, emptyChange, evaluateFacts, wantedSegments } from "./segmentEvaluation.ts"
import { timerRows } from "./segmentWrites.ts"
import { factNames, type ProjectSegments } from "./segmentDefs.ts"
import { loadFacts, type MutableFacts } from "./segmentFacts.ts"

/** Rounds of events recorded in the batch that emitted them (an event emitted while recording one is the next round). */
export const MAX_OWN_EVENT_ROUNDS = 3

/** Own events beyond MAX_OWN_EVENT_ROUNDS continue through IN, as any event would. */
export const continueThroughIn = (context: Pick<BatchContext, "projectId" | "outbox">, events: ReadonlyArray<EventRow>) =>
  context.outbox.append(events.map((event) => ({
    kind: "event" as const,
    projectId: context.projectId,
    eventId: event.id,
    contactId: event.contactId,
    email: "",
    name: event.name,
    data: event.data,
    at: event.at
  })))

/**
 * A contact the api wrote (a `contact.created`/`contact.updated` message taken into a combined turn): evaluated
 * against every segment, as the batch-by-batch path does, and its subscription change emitted (`emitted`).
 */
export interface ContactTouch {
  readonly contactId: string
  readonly at: string
  readonly emitted?: SubscriptionEmitted | undefined
}

/** What the head statement read for a tracked batch: its contacts (locked), their facts, the batch's event ids already stored. */
export interface TrackedHead {
  readonly contacts: ReadonlyArray<LockedContact>
  /** The contacts' facts (factsOf the head's rows); a combined batch shares one map between its lanes. */
  readonly facts: Map<string, MutableFacts>
  /** Event ids already stored; the plan adds the ones it records (shared by the lanes of a combined batch). */
  readonly stored: Set<string>
}

/** Records what changed per contact (for the segment engine), keeping the latest time a change was accepted. */
export const changeRecorder = (changes: Map<string, ContactChange>) => (contactId: string, at?: string) => {
  let change = changes.get(contactId)
  if (!change) changes.set(contactId, change = emptyChange())
  const ms = at === undefined ? NaN : Date.parse(at)
  if (!Number.isNaN(ms)) change.changedAt = Math.max(change.changedAt ?? ms, ms)
  return change
}

/** Folds an event into its contact's facts: the aggregate of its name and, for windowed counts, its time. */
const foldIntoFacts = (facts: MutableFacts | undefined, event: EventRow, names: ReturnType<typeof factNames>) => {
  if (!facts) return
  const at = Date.parse(event.at)
  if (names.eventNames.has(event.name)) {
    const aggregate = facts.events.get(event.name)
    facts.events.set(
      event.name,
      aggregate
        ? { count: aggregate.count + 1, firstAt: Math.min(aggregate.firstAt, at), lastAt: Math.max(aggregate.lastAt, at) }
        : { count: 1, firstAt: at, lastAt: at }
    )
  }
  if (names.windowed.has(event.name)) {
    const times = facts.eventTimes.get(event.name)
    if (!times) facts.eventTimes.set(event.name, [at])
    else {
      // Newest first.
      let index = 0
      while (index < times.length && times[index]! > at) index++
      times.splice(index, 0, at)
    }
  }
}

type MutableOutcome = { -readonly [K in keyof BatchOutcome]: BatchOutcome[K] }

/** What one lane's tracked batch leaves, worked out in memory: nothing is written yet (see trackedWriteSql). */
export interface TrackedPlan {
  readonly context: BatchContext
  /** The lane's contacts as the events leave them. */
  readonly contacts: ReadonlyArray<ContactState>
  readonly toInsert: ReadonlyArray<EventRow>
  readonly workflowInputs: ReadonlyArray<WorkflowInput>
  readonly transitions: ReadonlyArray<MembershipTransition>
  /** The soonest segment timer per contact (ms). */
  readonly timers: ReadonlyMap<string, number>
  readonly outRows: ReadonlyArray<OutboxRow>
  /** Own events past MAX_OWN_EVENT_ROUNDS, continued through IN. */
  readonly overflow: ReadonlyArray<EventRow>
  readonly oversized: ReadonlyArray<TrackedEvent>
  readonly outcome: MutableOutcome
}

/**
 * Folds a lane's tracked events into its contacts and their facts (head.facts, changed in place), evaluates
 * the lane's segments over them (with the events recorded about its own contacts, a few rounds deep) and
 * returns what is to be written. Pure but for ids and the clock handed in.
 */
export const planTrackedBatch = (
  context: BatchContext,
  segments: ProjectSegments,
  tracked: ReadonlyArray<TrackedEvent>,
  head: TrackedHead,
  outcome: MutableOutcome,
  clock: number,
  /** Contacts' updated_at is the wall time (as the general path writes it); segments evaluate at the Clock. */
  now: string,
  /** Contacts written by the api, among the events (a combined turn's contact messages). */
  touches: ReadonlyArray<ContactTouch> = []
): TrackedPlan => {
  const { projectId } = context
  const changes = new Map<string, ContactChange>()
  const changeOf = changeRecorder(changes)
  const { facts, stored } = head

  // The contacts, as the events leave them.
  const byEmail = new Map(head.contacts.map((row) => [row.email, contactStateOf(row)]))
  const subscriptions: Array<SubscriptionEmitted> = []
  const { events, oversized } = foldTrackedEvents(byEmail, tracked, changeOf, subscriptions, new Set())
  for (const touch of touches) {
    changeOf(touch.contactId, touch.at).fields = "all"
    if (touch.emitted) subscriptions.push(touch.emitted)
  }
  for (const contact of byEmail.values()) {
    const known = facts.get(contact.id)
    if (!known || !contact.touched) continue
    known.data = contact.current
    known.subscribed = contact.subscribed
    known.updatedAt = Date.parse(now)
  }

  // The events to store (each once: ids already stored, or twice in the batch, are not counted again).
  const names = factNames(segments)
  const toInsert: Array<EventRow> = []
  const workflowInputs: Array<WorkflowInput> = []
  const record = (event: EventRow) => {
    if (stored.has(event.id)) return false
    stored.add(event.id)
    toInsert.push(event)
    workflowInputs.push({ kind: "event", ...event })
    foldIntoFacts(facts.get(event.contactId), event, names)
    return true
  }
  for (const event of events) record(event)

  // Events about the batch's own contacts go out on OUT and are recorded here (see applyBatch).
  const outRows: Array<OutboxRow> = []
  const own: Array<EventRow> = []
  const emitOwn = (emitted: ReadonlyArray<EmittedEvent>) => {
    if (emitted.length === 0) return
    const out = context.outbox.outEvents(projectId, emitted)
    outRows.push(...out.rows)
    for (const event of out.events) own.push({ id: event.id, contactId: event.contactId, name: event.name, data: event.data, at: event.at })
    outcome.emitted += out.events.length
  }
  emitOwn(subscriptions.map((event) => ({
    name: event.name,
    contactId: event.contactId,
    email: event.email,
    data: { contactId: event.contactId, email: event.email, source: event.source },
    at: event.at
  })))

  const transitions: Array<MembershipTransition> = []
  const timers = new Map<string, number>()
  const evaluate = (changed: ReadonlyMap<string, ContactChange>) => {
    const wanted = wantedSegments(segments, changed)
    if (wanted.size === 0) return
    const evaluated = evaluateFacts(segments, wanted, facts, changed, clock)
    for (const change of evaluated.entries) transitions.push({ entered: true, change })
    for (const change of evaluated.exits) transitions.push({ entered: false, change })
    for (const timer of evaluated.timers) timers.set(timer.contactId, Math.min(timers.get(timer.contactId) ?? Infinity, timer.dueAt))
    emitOwn(evaluated.emitted)
  }
  evaluate(changes)
  let overflow: Array<EventRow> = []
  for (let round = 0; own.length > 0; round++) {
    const recorded = own.splice(0)
    if (round === MAX_OWN_EVENT_ROUNDS) {
      // A longer chain continues through IN, as any event would.
      overflow = recorded
      break
    }
    const followUp = new Map<string, ContactChange>()
    for (const event of recorded) {
      if (!record(event)) continue
      let change = followUp.get(event.contactId)
      if (!change) followUp.set(event.contactId, change = emptyChange())
      change.events.add(event.name)
    }
    evaluate(followUp)
  }
  return { context, contacts: [...byEmail.values()], toInsert, workflowInputs, transitions, timers, outRows, overflow, oversized, outcome }
}

/**
 * SQL: one statement writing every plan (the lanes of one project, store/engine/laneWrite.ts), with `extra`
 * parts (a combined batch's lane offsets); it answers the ids of the events stored now.
 */
export const trackedWriteSql = (
  sql: SqlClient.SqlClient,
  context: Pick<BatchContext, "projectId" | "outbox">,
  plans: ReadonlyArray<TrackedPlan>,
  now: string,
  extra: ReadonlyArray<Statement.Fragment> = []
) =>
  laneWriteSql(
    sql,
    context,
    {
      contacts: plans.flatMap((plan) => plan.contacts),
      events: plans.flatMap((plan) => plan.toInsert),
      transitions: plans.flatMap((plan) => plan.transitions),
      timers: timerRows(
        context,
        plans.flatMap((plan) =>
          [...plan.timers].map(([contactId, dueAt]) => ({ contactId, dueAt: new Date(dueAt).toISOString(), id: uuidv7() }))
        )
      ),
      outRows: plans.flatMap((plan) => plan.outRows)
    },
    now,
    extra
  )

/**
 * After the write: the plan's rare statements (data changes set aside for size, a chain of own events
 * longer than the rounds), its workflows (only events stored now drive them: a republished event must not
 * start anything twice) and its outcome, with the outbox rows its actor may publish itself.
 */
export const finishTrackedBatch = Effect.fnUntraced(function*(plan: TrackedPlan, insertedIds: ReadonlySet<string>) {
  const sql = yield* SqlClient.SqlClient
  const { context, outcome } = plan
  const { projectId } = context
  for (const event of plan.toInsert) if (insertedIds.has(event.id)) outcome.eventsInserted++
  outcome.appliedInOneWrite = true
  if (plan.timers.size > 0) outcome.soonestTimerAt = Math.min(outcome.soonestTimerAt ?? Infinity, ...plan.timers.values())
  if (plan.oversized.length > 0) yield* oversizedSql(sql, projectId, context.partition, plan.oversized)
  if (plan.overflow.length > 0) yield* continueThroughIn(context, plan.overflow)
  const advanced = yield* runWorkflows(
    {
      projectId,
      partitionOf: (contactId) => context.outbox.lanes.partitionOf(projectId, context.outbox.lanes.laneOf(contactId)),
      runtime: context.workflows.runtime,
      state: context.workflows.state,
      loadFacts
    },
    plan.workflowInputs.filter((input) => input.kind !== "event" || insertedIds.has(input.id))
  )
  if (advanced.mailQueued) outcome.mailQueued = true
  if (advanced.webhooksQueued) outcome.webhooksQueued = true
  if (advanced.timersSet) outcome.workflowTimersSet = true
  // The batch's outbox rows, for its actor to publish after the commit: all of them are outRows unless
  // one of the rare statements above appended more, or a workflow advanced (its steps may queue mail or
  // update a contact, each appending rows of its own).
  if (plan.oversized.length === 0 && plan.overflow.length === 0 && advanced.advanced === 0) outcome.ownRows = plan.outRows
  return outcome
})

/** One lane's batch of tracked events: planned, written in one statement, finished. */
export const applyTrackedBatch = Effect.fnUntraced(function*(
  context: BatchContext,
  segments: ProjectSegments,
  tracked: ReadonlyArray<TrackedEvent>,
  head: TrackedHead,
  outcome: MutableOutcome
) {
  const sql = yield* SqlClient.SqlClient
  const now = new Date().toISOString()
  const plan = planTrackedBatch(context, segments, tracked, head, outcome, yield* Clock.currentTimeMillis, now)
  const inserted = yield* trackedWriteSql(sql, context, [plan], now)
  return yield* finishTrackedBatch(plan, new Set(inserted.map((row) => row.id)))
})
