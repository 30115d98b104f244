/**
 * What the segments read about a lane's contacts (event aggregates, windowed occurrence times,
 * memberships), kept in the worker between turns so a turn reads them from Postgres only for contacts it
 * has not seen. Postgres stays the record: every turn still writes what it changes, in its transaction.
 *
 * Why it can be trusted: a lane's contacts' facts are written only by the lane's own actor (its events,
 * its memberships, its backfills), which holds the lane by lease. The cache of a lane is valid only over
 * consecutive combined turns of one actor: anything else the actor applies (a batch on its own, which may
 * delete events or contacts or record email events; a backfill chunk; a dead letter), a segment reload
 * (what is read may have changed), a turn that failed (its facts were folded in place), a project reset
 * seen in a head, or a new actor (the lease moved) starts the lane afresh (`forget`). Contacts' own rows
 * (data, subscription, pins), which the api writes directly, are never cached: every head reads them.
 *
 * One least-recently-used map per worker, bounded by FACTS_CACHE_CONTACTS; a lane forgets by moving to a
 * new generation, its old entries aged out by the bound.
 */
import type { EventAggregate } from "../domain/conditions/evaluate.ts"
import type { MutableFacts } from "./segmentFacts.ts"

/** The part of a contact's facts that is cached. */
export interface CachedFacts {
  readonly events: Map<string, EventAggregate>
  /** Newest first. */
  readonly eventTimes: Map<string, Array<number>>
  readonly memberships: Set<string>
}

/** A lane's view of the worker's cache (one per actor). */
export interface LaneFacts {
  readonly get: (contactId: string) => CachedFacts | undefined
  readonly set: (contactId: string, facts: CachedFacts) => void
  /** Everything cached for the lane is dropped (lazily: its entries can no longer be read). */
  readonly forget: () => void
  /** The project's reset watermark the lane's entries were read under. */
  resetSeq: number | undefined
}

export interface FactsCache {
  readonly lane: () => LaneFacts
  readonly size: () => number
}

export const makeFactsCache = (capacity: number): FactsCache => {
  const entries = new Map<string, { readonly generation: number; readonly facts: CachedFacts }>()
  let lanes = 0
  const lane = (): LaneFacts => {
    const id = ++lanes
    let generation = 0
    const keyOf = (contactId: string) => `${id}:${contactId}`
    const view: LaneFacts = {
      get: (contactId) => {
        if (capacity === 0) return undefined
        const key = keyOf(contactId)
        const entry = entries.get(key)
        if (entry === undefined) return undefined
        entries.delete(key)
        if (entry.generation !== generation) return undefined
        entries.set(key, entry)
        return entry.facts
      },
      set: (contactId, facts) => {
        if (capacity === 0) return
        const key = keyOf(contactId)
        entries.delete(key)
        entries.set(key, { generation, facts })
        if (entries.size > capacity) entries.delete(entries.keys().next().value!)
      },
      forget: () => {
        generation++
        view.resetSeq = undefined
      },
      resetSeq: undefined
    }
    return view
  }
  return { lane, size: () => entries.size }
}

/**
 * A contact's facts with its cached part: `row` (its own row as the head read it) with the cached
 * aggregates, occurrence times (those at or before `since` dropped: no window reaches them) and memberships.
 */
export const withCached = (row: MutableFacts, cached: CachedFacts, since: number | undefined): MutableFacts => {
  if (since !== undefined) {
    for (const times of cached.eventTimes.values()) {
      let keep = times.length
      while (keep > 0 && times[keep - 1]! <= since) keep--
      times.length = keep
    }
  }
  return { ...row, events: cached.events, eventTimes: cached.eventTimes, memberships: cached.memberships }
}

/** The cached part of facts, segment ids shared with the loaded definitions (`canonical`) rather than a copy each. */
export const cachedPart = (facts: MutableFacts, canonical: (segmentId: string) => string): CachedFacts => {
  const memberships = new Set<string>()
  for (const segmentId of facts.memberships) memberships.add(canonical(segmentId))
  return { events: facts.events, eventTimes: facts.eventTimes, memberships }
}
