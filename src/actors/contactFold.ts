/**
 * Folds a batch's tracked events into their contacts, in order (pure); store/engine/contacts.ts writes the result.
 * A contact's subscription and custom data change only where the event really changes them, and never
 * over a direct api write accepted after the event (the contact's pins).
 */
import { exceedsContactDataLimit, jsonBytes, MAX_CONTACT_DATA_BYTES } from "../domain/customData.ts"
import type { LockedContact } from "../store/engine/contacts.ts"
import type { EventRow } from "../store/engine/events.ts"
import type { TrackedEvent } from "../stream/messages.ts"
import type { ContactChange } from "./segmentEvaluation.ts"

export interface ContactState {
  readonly id: string
  readonly email: string
  subscribed: boolean
  readonly pins: Record<string, number>
  /** The contact's data as this batch has left it so far. */
  readonly current: Record<string, unknown>
  /** Size of `current` as JSON (computed when first needed; an upper bound after cheap updates). */
  bytes: number | undefined
  readonly set: Record<string, unknown>
  readonly remove: Set<string>
  touched: boolean
}

/** A subscription change the fold made, emitted as `contact.subscribed` / `contact.unsubscribed`. */
export interface SubscriptionEmitted {
  readonly name: "contact.subscribed" | "contact.unsubscribed"
  readonly contactId: string
  readonly email: string
  readonly at: string
  readonly source: string
}

export const contactStateOf = (row: LockedContact): ContactState => ({
  id: row.id,
  email: row.email,
  subscribed: row.subscribed,
  pins: typeof row.pinned_at === "string" ? JSON.parse(row.pinned_at) : row.pinned_at,
  current: typeof row.data === "string" ? JSON.parse(row.data) : { ...row.data },
  bytes: undefined,
  set: {},
  remove: new Set(),
  touched: false
})

/**
 * Whether the event's data change keeps the contact within MAX_CONTACT_DATA_BYTES (or does not grow it).
 * Cheap in the usual case: an upper bound of the growth is checked first, the exact size only near the limit.
 */
const fitsDataLimit = (contact: ContactState, event: TrackedEvent): boolean => {
  const setEntries = Object.entries(event.set)
  if (setEntries.length === 0) return true
  contact.bytes ??= jsonBytes(contact.current)
  let growth = 0
  for (const [key, value] of setEntries) growth += jsonBytes(key) + jsonBytes(value) + 2
  if (contact.bytes + growth <= MAX_CONTACT_DATA_BYTES) {
    contact.bytes += growth
    return true
  }
  const before = jsonBytes(contact.current)
  const candidate = { ...contact.current }
  for (const key of event.remove) delete candidate[key]
  for (const [key, value] of setEntries) candidate[key] = value
  const after = jsonBytes(candidate)
  contact.bytes = before
  if (exceedsContactDataLimit(before, after)) return false
  contact.bytes = after
  return true
}

const sameJson = (a: unknown, b: unknown) => a === b || (a !== undefined && JSON.stringify(a) === JSON.stringify(b))

export interface FoldResult {
  /** The events to store, in order. */
  readonly events: Array<EventRow>
  /** Events whose data change would grow their contact past the limit (recorded, the change set aside). */
  readonly oversized: Array<TrackedEvent>
}

/**
 * Folds each tracked event into its contact (`byEmail`, changed in place), in order: subscription, then
 * the data patch (a later set wins over an earlier delete and vice versa). Records what changed per
 * contact for the segment engine (`changeOf`) and the subscription changes to emit.
 */
export const foldTrackedEvents = (
  byEmail: ReadonlyMap<string, ContactState>,
  tracked: ReadonlyArray<TrackedEvent>,
  changeOf: (contactId: string, at?: string) => ContactChange,
  emitted: Array<SubscriptionEmitted>,
  /** Contacts the batch itself had to create: evaluated against every segment. */
  createdHere: ReadonlySet<string>
): FoldResult => {
  // A direct api write accepted after the event wins over the event's change of that field.
  const pinnedAfter = (contact: ContactState, field: string, at: number) => (contact.pins[field] ?? -Infinity) >= at
  const events: Array<EventRow> = []
  const oversized: Array<TrackedEvent> = []
  for (const event of tracked) {
    const contact = byEmail.get(event.email)
    if (!contact) continue // the contact could not be created (should not happen); the event is dropped with it
    const at = Date.parse(event.at)
    const dataFits = fitsDataLimit(contact, event)
    // The event is recorded either way; a data change that would grow the contact past the limit is
    // set aside as a dead letter (replayable once the contact has room), never silently dropped.
    if (!dataFits) oversized.push({ ...event, contactId: contact.id, subscribed: null, pos: undefined })
    const change = changeOf(contact.id, event.at)
    change.events.add(event.name)
    // A contact new to the project is evaluated against every segment, not just those its changes touch.
    if (event.contactCreated || createdHere.has(contact.id)) change.fields = "all"
    const fields = change.fields
    if (event.subscribed !== null && event.subscribed !== contact.subscribed && !pinnedAfter(contact, "subscribed", at)) {
      contact.subscribed = event.subscribed
      contact.touched = true
      if (fields !== "all") fields.add("subscribed")
      emitted.push({
        name: event.subscribed ? "contact.subscribed" : "contact.unsubscribed",
        contactId: contact.id,
        email: contact.email,
        at: event.at,
        source: "api.track"
      })
    }
    // Only real changes count: apps often resend the same properties with every event, and an
    // unchanged value neither rewrites the contact nor re-evaluates the segments that read it.
    for (const key of dataFits ? event.remove : []) {
      if (pinnedAfter(contact, `data.${key}`, at) || !(key in contact.current)) continue
      delete contact.current[key]
      delete contact.set[key]
      contact.remove.add(key)
      contact.touched = true
      if (fields !== "all") fields.add(`data.${key}`)
    }
    for (const [key, value] of dataFits ? Object.entries(event.set) : []) {
      if (pinnedAfter(contact, `data.${key}`, at) || sameJson(contact.current[key], value)) continue
      contact.current[key] = value
      contact.set[key] = value
      contact.remove.delete(key)
      contact.touched = true
      if (fields !== "all") fields.add(`data.${key}`)
    }
    if (contact.touched && fields !== "all") fields.add("updatedAt")
    events.push({ id: event.eventId, contactId: contact.id, name: event.name, data: event.data, at: event.at })
  }
  return { events, oversized }
}
