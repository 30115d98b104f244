/**
 * Folds a batch's tracked events into their contacts, in order (pure), and the SQL that writes the result.
 * A contact's subscription and custom data change only where the event really changes them, and never
 * over a direct api write accepted after the event (the contact's pins).
 */
import type { SqlClient } from "effect/sql"
import { exceedsContactDataLimit, inferFieldTypes, jsonBytes, MAX_CONTACT_DATA_BYTES } from "../domain/customData.ts"
import { uuidv7 } from "../domain/ids.ts"
import { pgArray } from "../lib/pgArray.ts"
import type { TrackedEvent } from "../stream/messages.ts"
import type { ContactChange } from "./segmentEvaluation.ts"

/** A contact as a batch reads it, locked (FOR UPDATE). */
export interface LockedContact {
  readonly id: string
  readonly email: string
  readonly subscribed: boolean
  readonly pinned_at: Record<string, number> | string
  readonly data: Record<string, unknown> | string
}

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

/** An event row to store, attached to its contact's authoritative id. */
export interface EventRow {
  readonly id: string
  readonly contactId: string
  readonly name: string
  readonly data: Readonly<Record<string, unknown>>
  readonly at: string
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

/**
 * SQL (a data-modifying statement, usable as a CTE): the touched contacts' new subscription and data, and
 * the types of the custom fields they now have; returns a row per contact and field written.
 */
export const contactWritesSql = (
  sql: SqlClient.SqlClient,
  projectId: string,
  contacts: Iterable<ContactState>,
  now: string
) => {
  const changes: Array<{ id: string; subscribed: boolean; set: Record<string, unknown>; remove: Array<string> }> = []
  const merged: Record<string, unknown> = {}
  for (const contact of contacts) {
    if (!contact.touched) continue
    changes.push({ id: contact.id, subscribed: contact.subscribed, set: contact.set, remove: [...contact.remove] })
    for (const [key, value] of Object.entries(contact.set)) if (!(key in merged)) merged[key] = value
  }
  return {
    count: changes.length,
    updated: sql`
      UPDATE contacts c SET
        subscribed = x.subscribed,
        data = (c.data - ARRAY(SELECT jsonb_array_elements_text(x.remove))) || x.set,
        updated_at = ${now}::timestamptz
      FROM jsonb_to_recordset(${JSON.stringify(changes)}::jsonb) AS x(id uuid, subscribed boolean, set jsonb, remove jsonb)
      -- The ids as an array too: a cached generic plan takes the record set for 100 rows and would hash
      -- the whole contacts table (a sequential scan per batch); the array keeps it on the primary key.
      WHERE c.id = x.id AND c.id = ANY(${pgArray(changes.map((change) => change.id))}::uuid[])`,
    fields: sql`
      INSERT INTO contact_fields (project_id, key, type)
      SELECT ${projectId}, f->>0, f->>1 FROM jsonb_array_elements(${JSON.stringify(inferFieldTypes(merged))}::jsonb) f
      ON CONFLICT DO NOTHING`
  }
}

/** SQL: the oversized events' data changes, set aside as replayable dead letters. */
export const oversizedSql = (sql: SqlClient.SqlClient, projectId: string, partition: number, oversized: ReadonlyArray<TrackedEvent>) =>
  sql`
  INSERT INTO dead_letters (id, project_id, partition, source, payload, error)
  SELECT (x->>'id')::uuid, ${projectId}, ${partition}, 'actor', x->>'payload', x->>'error'
  FROM jsonb_array_elements(${
    JSON.stringify(oversized.map((event) => ({
      id: uuidv7(),
      payload: JSON.stringify({ kind: "track", projectId, events: [event] }),
      error: `contact data limit: this change would grow contact ${event.contactId}'s data past ${MAX_CONTACT_DATA_BYTES / 1024} KiB ` +
        `(the event itself was recorded; replay after making room)`
    })))
  }::jsonb) x`

/**
 * SQL: CTEs `input`, `ins` (the events stored now; ids already stored are skipped: RETURNING id, contact_id,
 * name, created_at) and `agg` (the inserted ones folded into their per-contact aggregates), for a WITH list.
 */
export const storeEventsCtes = (sql: SqlClient.SqlClient, projectId: string, events: ReadonlyArray<EventRow>) =>
  sql`
  input AS (
    SELECT * FROM jsonb_to_recordset(${JSON.stringify(events)}::jsonb)
      AS x(id uuid, "contactId" uuid, name text, data jsonb, at timestamptz)
  ), ins AS (
    INSERT INTO events (id, project_id, contact_id, name, data, created_at)
    SELECT id, ${projectId}, "contactId", name, COALESCE(data, '{}'::jsonb), at FROM input
    ON CONFLICT (id) DO NOTHING
    RETURNING id, contact_id, name, created_at
  ), agg AS (
    INSERT INTO event_aggregates (project_id, contact_id, name, count, first_at, last_at)
    SELECT ${projectId}, contact_id, name, count(*), min(created_at), max(created_at) FROM ins
    GROUP BY contact_id, name
    ON CONFLICT (project_id, contact_id, name) DO UPDATE SET
      count = event_aggregates.count + EXCLUDED.count,
      first_at = LEAST(event_aggregates.first_at, EXCLUDED.first_at),
      last_at = GREATEST(event_aggregates.last_at, EXCLUDED.last_at)
    RETURNING 1
  )`
