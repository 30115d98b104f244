/**
 * What the segment engine reads about contacts (their row, event aggregates, windowed occurrence times,
 * memberships), as rows of one shape from one statement, folded into each contact's facts.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { EventAggregate } from "../domain/conditions/evaluate.ts"
import { type FactRow, factsSql } from "../store/engine/facts.ts"

/** A contact's custom data is an object; anything else is a corrupt row its segments cannot evaluate. */
export const objectData = (contactId: string, data: unknown): Record<string, unknown> => {
  if (typeof data !== "object" || data === null || Array.isArray(data)) throw new Error(`contact ${contactId}: its data is not an object`)
  return data as Record<string, unknown>
}

/** What the segment engine reads about one contact, as it stands (memberships change as it evaluates). */
export interface MutableFacts {
  readonly id: string
  readonly email: string
  subscribed: boolean
  readonly createdAt: number
  updatedAt: number
  data: Record<string, unknown>
  readonly events: Map<string, EventAggregate>
  readonly eventTimes: Map<string, Array<number>>
  readonly memberships: Set<string>
}

/** Folds rows of kinds c, a, t and m into each contact's facts (rows of contacts not among the c rows are ignored). */
export const factsOf = (rows: ReadonlyArray<FactRow>) => {
  const facts = new Map<string, MutableFacts>()
  for (const row of rows) {
    if (row.kind !== "c") continue
    facts.set(row.contact_id, {
      id: row.contact_id,
      email: row.name,
      subscribed: row.subscribed === true,
      createdAt: Number(row.t1),
      updatedAt: Number(row.t2),
      data: objectData(row.contact_id, row.data),
      events: new Map<string, EventAggregate>(),
      eventTimes: new Map<string, Array<number>>(),
      memberships: new Set()
    })
  }
  for (const row of rows) {
    const contact = facts.get(row.contact_id)
    if (!contact) continue
    if (row.kind === "a") {
      contact.events.set(row.name, { count: Number(row.count), firstAt: Number(row.t1), lastAt: Number(row.t2) })
    } else if (row.kind === "t") {
      const list = contact.eventTimes.get(row.name)
      if (list) list.push(Number(row.t1))
      else contact.eventTimes.set(row.name, [Number(row.t1)])
    } else if (row.kind === "m") {
      for (const segmentId of row.name.split(",")) contact.memberships.add(segmentId)
    }
  }
  // Newest first, as the windowed counts read them.
  for (const contact of facts.values()) for (const list of contact.eventTimes.values()) list.sort((x, y) => y - x)
  return facts
}

/**
 * Loads what the given segments read about the given contacts; occurrence times of windowed counts
 * only after `since` (windowedSince) when given.
 */
export const loadFacts = Effect.fnUntraced(function*(
  projectId: string,
  contactIds: ReadonlyArray<string>,
  eventNames: ReadonlySet<string>,
  windowedNames: ReadonlySet<string>,
  since?: number
) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* factsSql(sql, projectId, contactIds, eventNames, windowedNames, since)
  return factsOf(rows)
})
