/**
 * The incremental segment engine, run by a project's actor inside its batch transaction: a change to a
 * contact re-evaluates only the segments it can affect, for that contact, in dependency order; membership
 * changes are written with their times, `segment.<slug>.entry` / `.exit` are emitted for tracked segments,
 * and when an answer will flip at a known instant (a time window lapsing) a durable timer is set for
 * exactly that instant.
 */
import { Effect } from "effect"
import { windowedSince } from "../domain/conditions/evaluate.ts"
import { uuidv7 } from "../domain/ids.ts"
import type { EmittedEvent } from "../stream/Outbox.ts"
import { factNames, type ProjectSegments, type SegmentContext } from "./segmentDefs.ts"
import { loadFacts, type MutableFacts } from "./segmentFacts.ts"
import { type MembershipChange, writeMembershipChanges } from "../store/engine/memberships.ts"
import { timerRows } from "./segmentWrites.ts"

/** What changed for one contact: which fields and events ("all" after a direct write), which segments to force. */
export interface ContactChange {
  fields: Set<string> | "all"
  events: Set<string>
  segments: Set<string>
  /** Evaluate at this instant instead of the clock (a timer's exact due time). */
  at?: number
  /** A timer fired: every time-dependent segment is re-evaluated (and the next timer set). */
  timer?: boolean
  /** When the latest of these changes was accepted (ms). */
  changedAt?: number
}

export const emptyChange = (): ContactChange => ({ fields: new Set(), events: new Set(), segments: new Set() })

/** Which segments each changed contact needs evaluated, by what changed (dependents are added as memberships change). */
export const wantedSegments = (segments: ProjectSegments, changes: ReadonlyMap<string, ContactChange>) => {
  const wanted = new Map<string, Set<string>>()
  if (segments.ordered.length === 0) return wanted
  for (const [contactId, change] of changes) {
    const ids = new Set<string>(change.segments)
    if (change.fields === "all") {
      for (const def of segments.ordered) ids.add(def.id)
    } else {
      for (const field of change.fields) for (const def of segments.byField.get(field) ?? []) ids.add(def.id)
    }
    if (change.timer) {
      for (const def of segments.ordered) if (def.reads.timeDependent) ids.add(def.id)
    }
    for (const event of change.events) for (const def of segments.byEvent.get(event) ?? []) ids.add(def.id)
    if (ids.size > 0) wanted.set(contactId, ids)
  }
  return wanted
}

/** What evaluating contacts decided: membership changes, each contact's next timer, the entry/exit events to emit. */
export interface Evaluated {
  readonly entries: Array<MembershipChange>
  readonly exits: Array<MembershipChange>
  readonly timers: Array<{ contactId: string; dueAt: number }>
  readonly emitted: Array<EmittedEvent>
}

/**
 * Evaluates the wanted segments for each contact over its facts, in dependency order (pure: the facts'
 * memberships are updated as it goes, nothing is written).
 */
export const evaluateFacts = (
  segments: ProjectSegments,
  wanted: ReadonlyMap<string, Set<string>>,
  facts: ReadonlyMap<string, MutableFacts>,
  changes: ReadonlyMap<string, ContactChange>,
  clock: number
): Evaluated => {
  const result: Evaluated = { entries: [], exits: [], timers: [], emitted: [] }
  for (const [contactId, ids] of wanted) {
    const contact = facts.get(contactId)
    if (!contact) continue // deleted meanwhile
    const change = changes.get(contactId)
    const now = change?.at ?? clock
    let nextTimer: number | undefined
    for (const def of segments.ordered) {
      if (!ids.has(def.id)) continue
      const evaluation = def.evaluate(contact, now)
      if (evaluation.nextChangeAt !== undefined && evaluation.nextChangeAt > now) {
        nextTimer = nextTimer === undefined ? evaluation.nextChangeAt : Math.min(nextTimer, evaluation.nextChangeAt)
      }
      const isMember = contact.memberships.has(def.id)
      if (evaluation.matches === isMember) continue
      const at = new Date(now).toISOString()
      if (evaluation.matches) {
        contact.memberships.add(def.id)
        result.entries.push({ segmentId: def.id, contactId, at })
      } else {
        contact.memberships.delete(def.id)
        result.exits.push({ segmentId: def.id, contactId, at })
      }
      if (def.trackMembership && (segments.populated.has(def.id) || (change?.changedAt ?? now) >= def.createdAt)) {
        result.emitted.push({
          name: `segment.${def.slug}.${evaluation.matches ? "entry" : "exit"}`,
          contactId,
          email: contact.email,
          data: { segmentId: def.id, segmentName: def.name },
          at
        })
      }
      for (const dependent of segments.bySegment.get(def.id) ?? []) ids.add(dependent.id)
    }
    if (nextTimer !== undefined) result.timers.push({ contactId, dueAt: nextTimer })
  }
  return result
}

/**
 * Re-evaluates the affected segments for the changed contacts (in the caller's transaction) and
 * applies the membership changes. Returns how many entry/exit events were emitted.
 */
export const evaluateChanges = Effect.fnUntraced(function*(
  context: SegmentContext,
  segments: ProjectSegments,
  changes: ReadonlyMap<string, ContactChange>,
  clock: number
) {
  if (segments.ordered.length === 0 || changes.size === 0) return 0
  const wanted = wantedSegments(segments, changes)
  if (wanted.size === 0) return 0
  // Dependents may be evaluated too, so load for the closure of what they read.
  const { eventNames, windowed, longestWindowMs } = factNames(segments)
  // Each contact is evaluated at its change's instant (a late timer's due time) or the clock.
  let earliest = clock
  for (const contactId of wanted.keys()) earliest = Math.min(earliest, changes.get(contactId)?.at ?? clock)
  const facts = yield* loadFacts(context.projectId, [...wanted.keys()], eventNames, windowed, windowedSince(earliest, longestWindowMs))
  const { entries, exits, timers, emitted } = evaluateFacts(segments, wanted, facts, changes, clock)
  const timed = timers.map((timer) => ({ contactId: timer.contactId, dueAt: new Date(timer.dueAt).toISOString(), id: uuidv7() }))
  yield* writeMembershipChanges(context.outbox.lanes, context.projectId, entries, exits, timerRows(context, timed))
  if (timers.length > 0) context.onTimers?.(Math.min(...timers.map((timer) => timer.dueAt)))
  yield* (context.emit ? context.emit(emitted) : context.outbox.emit(context.projectId, emitted))
  return emitted.length
})
