/**
 * A project's dynamic segments as its lane actors evaluate them: compiled once, indexed by what they read
 * (contact fields, event names, other segments), in dependency order, with the event names their facts
 * need; and the context segment work runs in.
 */
import { Effect } from "effect"
import type { SqlError } from "effect/sql"
import { compileCondition, type ContactFacts, type Evaluation } from "../domain/conditions/evaluate.ts"
import type { Condition } from "../domain/conditions/types.ts"
import { conditionReads, type ConditionReads } from "../domain/conditions/validate.ts"
import { segmentSlug, toSegment } from "../store/Segments.ts"
import { segmentRows } from "../store/engine/segments.ts"
import type { EmittedEvent, Outbox } from "../stream/Outbox.ts"

export interface SegmentDef {
  readonly id: string
  readonly name: string
  readonly slug: string
  readonly trackMembership: boolean
  readonly condition: Condition
  readonly version: number
  readonly backfilledVersion: number
  readonly backfillEmits: boolean
  readonly backfillGeneration: number
  readonly createdAt: number
  readonly evaluate: (facts: ContactFacts, now: number) => Evaluation
  /** What its condition reads, windowed counts (which need occurrence times) with their windows included. */
  readonly reads: ConditionReads
}

export interface ProjectSegments {
  /** Dynamic segments, dependencies before dependents. */
  readonly ordered: ReadonlyArray<SegmentDef>
  readonly byId: ReadonlyMap<string, SegmentDef>
  /** Tracked segments of any type, by id (static ones emit on manual changes). */
  readonly slugs: ReadonlyMap<string, { readonly slug: string; readonly name: string; readonly tracked: boolean }>
  readonly byField: ReadonlyMap<string, ReadonlyArray<SegmentDef>>
  readonly byEvent: ReadonlyMap<string, ReadonlyArray<SegmentDef>>
  readonly bySegment: ReadonlyMap<string, ReadonlyArray<SegmentDef>>
  /**
   * Segments whose first backfill has finished. Until then a segment is still gathering its initial
   * population: contacts whose last change predates the segment enter silently, however they get there.
   */
  readonly populated: Set<string>
}

export interface SegmentContext {
  readonly projectId: string
  /** The lane whose contacts this actor owns (undefined: every lane, for messages published before lanes). */
  readonly lane: number | undefined
  readonly outbox: Outbox["Service"]
  /** Told the soonest due time (ms) of the timers set, so the caller can wake the timer loop. */
  readonly onTimers?: ((soonest: number) => void) | undefined
  /** Where entry/exit events go (default: Outbox.emit, to OUT and back into the contact's lane). */
  readonly emit?: ((events: ReadonlyArray<EmittedEvent>) => Effect.Effect<void, SqlError.SqlError>) | undefined
}

const push = <K, V>(map: Map<K, Array<V>>, key: K, value: V) => {
  const list = map.get(key)
  if (list) list.push(value)
  else map.set(key, [value])
}

export const loadSegments = Effect.fnUntraced(function*(projectId: string) {
  const rows = yield* segmentRows(projectId)
  const slugs = new Map<string, { slug: string; name: string; tracked: boolean }>()
  const defs: Array<SegmentDef> = []
  for (const row of rows) {
    const segment = toSegment(row)
    slugs.set(segment.id, { slug: segmentSlug(segment.name), name: segment.name, tracked: segment.trackMembership })
    if (segment.type !== "DYNAMIC" || !segment.condition) continue
    defs.push({
      id: segment.id,
      name: segment.name,
      slug: segmentSlug(segment.name),
      trackMembership: segment.trackMembership,
      condition: segment.condition,
      version: segment.version,
      backfilledVersion: row.backfilled_version,
      backfillEmits: row.backfill_emits,
      backfillGeneration: row.backfill_generation,
      createdAt: new Date(row.created_at).getTime(),
      evaluate: compileCondition(segment.condition),
      reads: conditionReads(segment.condition)
    })
  }
  // Dependencies first (cycles are rejected by the api; a leftover one is broken arbitrarily).
  const byIdAll = new Map(defs.map((def) => [def.id, def]))
  const ordered: Array<SegmentDef> = []
  const state = new Map<string, "visiting" | "done">()
  const visit = (def: SegmentDef) => {
    if (state.get(def.id)) return
    state.set(def.id, "visiting")
    for (const dependency of def.reads.segments) {
      const target = byIdAll.get(dependency)
      if (target && !state.get(target.id)) visit(target)
    }
    state.set(def.id, "done")
    ordered.push(def)
  }
  defs.forEach(visit)
  const byField = new Map<string, Array<SegmentDef>>()
  const byEvent = new Map<string, Array<SegmentDef>>()
  const bySegment = new Map<string, Array<SegmentDef>>()
  for (const def of ordered) {
    for (const field of def.reads.fields) push(byField, field, def)
    for (const event of def.reads.events) push(byEvent, event, def)
    for (const segment of def.reads.segments) push(bySegment, segment, def)
  }
  const populated = new Set(defs.filter((def) => def.backfilledVersion >= 1).map((def) => def.id))
  return { ordered, byId: byIdAll, slugs, byField, byEvent, bySegment, populated } satisfies ProjectSegments
})

export interface FactNames {
  readonly eventNames: ReadonlySet<string>
  readonly windowed: ReadonlySet<string>
  /** The longest window any segment counts occurrences in (ms; 0 without any). */
  readonly longestWindowMs: number
}

const factNamesOf = new WeakMap<ProjectSegments, FactNames>()

/**
 * The event names the project's segments read: aggregates of all, occurrence times of the windowed ones
 * (worked out once per loaded set of segments: every batch asks).
 */
export const factNames = (segments: ProjectSegments): FactNames => {
  const known = factNamesOf.get(segments)
  if (known) return known
  const eventNames = new Set<string>()
  const windowed = new Set<string>()
  let longestWindowMs = 0
  for (const def of segments.ordered) {
    for (const event of def.reads.events) eventNames.add(event)
    for (const [name, window] of def.reads.windows) {
      windowed.add(name)
      longestWindowMs = Math.max(longestWindowMs, window)
    }
  }
  const names = { eventNames, windowed, longestWindowMs }
  factNamesOf.set(segments, names)
  return names
}
