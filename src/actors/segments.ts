/**
 * The incremental segment engine, run by a project's actor inside its batch transaction.
 *
 * A project's dynamic segments are compiled once and indexed by what they read (contact fields, event
 * names, other segments). A change to a contact re-evaluates only the segments it can affect, for that
 * contact, in dependency order; membership changes are written with their times, `segment.<slug>.entry`
 * / `.exit` are emitted for tracked segments, and when an answer will flip at a known instant (a time
 * window lapsing) a durable timer is set for exactly that instant.
 */
import { type Cause, Effect } from "effect"
import { SqlClient, type SqlError, type Statement } from "effect/sql"
import { compileCondition, type ContactFacts, type EventAggregate, type Evaluation, windowedSince } from "../domain/conditions/evaluate.ts"
import type { Condition } from "../domain/conditions/types.ts"
import { conditionReads, type ConditionReads } from "../domain/conditions/validate.ts"
import { uuidv7 } from "../domain/ids.ts"
import { reasonOf, setAsideLogged } from "../lib/isolation.ts"
import { pgArray } from "../lib/pgArray.ts"
import { compileConditionSql } from "../store/conditionSql.ts"
import { segmentSlug, toSegment } from "../store/Segments.ts"
import type { Lanes } from "../stream/lanes.ts"
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

const push = <K, V>(map: Map<K, Array<V>>, key: K, value: V) => {
  const list = map.get(key)
  if (list) list.push(value)
  else map.set(key, [value])
}

export const loadSegments = Effect.fnUntraced(function*(projectId: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<Parameters<typeof toSegment>[0] & { backfilled_version: number; backfill_emits: boolean; backfill_generation: number }>`
    SELECT id, project_id, name, description, type, condition, track_membership, member_count, version,
           backfilled_version, backfill_emits, backfill_generation, created_at, updated_at
    FROM segments WHERE project_id = ${projectId} ORDER BY created_at, id`
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

/** SQL: the contact `column` is in the context's lane (always true without a lane). */
const inLane = (sql: SqlClient.SqlClient, context: SegmentContext, column: string) =>
  context.lane === undefined
    ? sql`true`
    : sql`(get_byte(uuid_send(${sql.literal(column)}), 15) % ${sql.literal(String(context.outbox.lanes.count))}) = ${context.lane}`

/** A contact's custom data is an object; anything else is a corrupt row its segments cannot evaluate. */
export const objectData = (contactId: string, data: unknown): Record<string, unknown> => {
  if (typeof data !== "object" || data === null || Array.isArray(data)) throw new Error(`contact ${contactId}: its data is not an object`)
  return data as Record<string, unknown>
}

/** One row of the facts read: a contact (c), an event aggregate (a), an event's time (t) or its memberships (m). */
export interface FactRow {
  readonly kind: "c" | "a" | "t" | "m"
  readonly contact_id: string
  /** The contact's email, the event's name, or the ids of the segments it is in (comma-separated). */
  readonly name: string
  readonly count: string | number | bigint | null
  /** Epoch milliseconds: created / first / occurred at. */
  readonly t1: number | string | null
  /** Epoch milliseconds: updated / last at. */
  readonly t2: number | string | null
  readonly subscribed: boolean | null
  readonly data: unknown
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

/**
 * A timestamptz column as epoch milliseconds (float8, truncated to the millisecond as a parsed time is):
 * cheaper to produce and to read than a formatted time.
 */
export const epochMs = (sql: SqlClient.SqlClient, column: string) => sql`floor(extract(epoch FROM ${sql.literal(column)}) * 1000)::float8`

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

/**
 * SQL: the aggregate (a), occurrence time (t) and membership (m) rows of the contacts `contactIds` lists
 * (a FROM item of one uuid column: a subquery or `unnest(...)`), in FactRow's columns (and a null `pins`),
 * to be UNIONed after the contacts' own rows; none when `wanted` is false.
 *
 * Each table is read per contact through its index: a LATERAL subquery with OFFSET 0 is not flattened
 * into a join, so the planner cannot trade the lookups for a hash join over the project's whole table.
 * It did, as batches grew past ~200 contacts (a backlog after a burst): every membership of the project
 * scanned, ~130 ms instead of ~1 ms, which slowed the lane and grew its next batch further.
 */
export const factRowsSql = (
  sql: SqlClient.SqlClient,
  projectId: string,
  contactIds: Statement.Fragment,
  wanted: boolean,
  eventNames: ReadonlySet<string>,
  windowedNames: ReadonlySet<string>,
  /** Occurrences at or before this time (ms) are not read (windowedSince); undefined reads them all. */
  since: number | undefined
) => sql`
    SELECT 'a', a.contact_id, a.name, a.count, a.t1, a.t2, NULL, NULL, NULL
    FROM ${contactIds} AS k(id) CROSS JOIN LATERAL (
      SELECT contact_id, name, count, ${epochMs(sql, "first_at")} AS t1, ${epochMs(sql, "last_at")} AS t2
      FROM event_aggregates
      WHERE project_id = ${projectId} AND contact_id = k.id AND name = ANY(${pgArray([...eventNames])}::text[])
      OFFSET 0
    ) a
    WHERE ${wanted && eventNames.size > 0}
    UNION ALL
    SELECT 't', t.contact_id, t.name, NULL, t.t1, NULL, NULL, NULL, NULL
    FROM ${contactIds} AS k(id) CROSS JOIN LATERAL (
      SELECT contact_id, name, ${epochMs(sql, "created_at")} AS t1
      FROM events
      WHERE project_id = ${projectId} AND contact_id = k.id AND name = ANY(${pgArray([...windowedNames])}::text[])
        AND created_at > ${since === undefined ? "-infinity" : new Date(since).toISOString()}::timestamptz
      OFFSET 0
    ) t
    WHERE ${wanted && windowedNames.size > 0}
    UNION ALL
    SELECT 'm', k.id, m.ids, NULL, NULL, NULL, NULL, NULL, NULL
    FROM ${contactIds} AS k(id) CROSS JOIN LATERAL (
      -- One row per contact, its segments joined by commas: a contact is in dozens of segments, and a
      -- row each cost Postgres and the worker more than the lookup.
      SELECT string_agg(segment_id::text, ',') AS ids FROM segment_memberships
      WHERE contact_id = k.id AND exited_at IS NULL AND project_id = ${projectId}
    ) m
    WHERE ${wanted} AND m.ids IS NOT NULL`

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
  // One round trip: the contacts, their aggregates of the events read, the occurrence times of the
  // windowed counts and their memberships, as rows of one shape (`kind` says which). Plain columns and
  // times as epoch milliseconds: building a JSON object per row cost Postgres about twice the read.
  const rows = yield* sql<FactRow>`
    SELECT 'c' AS kind, id AS contact_id, email AS name, NULL::bigint AS count, ${epochMs(sql, "created_at")} AS t1,
           ${epochMs(sql, "updated_at")} AS t2, subscribed, data, NULL::jsonb AS pins
    FROM contacts WHERE project_id = ${projectId} AND id = ANY(${pgArray(contactIds)}::uuid[])
    UNION ALL
    ${factRowsSql(sql, projectId, sql`unnest(${pgArray(contactIds)}::uuid[])`, true, eventNames, windowedNames, since)}`
  return factsOf(rows)
})

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

export interface MembershipChange {
  readonly segmentId: string
  readonly contactId: string
  readonly at: string
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

export interface TimerRow {
  readonly contactId: string
  readonly dueAt: string
  readonly id: string
  readonly partition: number
}

/** Timers with the partition that fires them: whoever leases the contact's lane. */
export const timerRows = (context: Pick<SegmentContext, "projectId" | "outbox">, timers: ReadonlyArray<{ contactId: string; dueAt: string; id: string }>): Array<TimerRow> => {
  const { lanes } = context.outbox
  return timers.map((timer) => ({ ...timer, partition: lanes.partitionOf(context.projectId, lanes.laneOf(timer.contactId)) }))
}

/** Sets each contact's timer, only ever moving it earlier (see migrations/0004_segments.sql). */
export const timersSql = (sql: SqlClient.SqlClient, projectId: string, timers: ReadonlyArray<TimerRow>) => sql`
  INSERT INTO timers (contact_id, id, project_id, partition, due_at)
  SELECT (x->>'contactId')::uuid, (x->>'id')::uuid, ${projectId}, (x->>'partition')::int, (x->>'dueAt')::timestamptz
  FROM jsonb_array_elements(${JSON.stringify(timers)}::jsonb) x
  ON CONFLICT (contact_id) DO UPDATE SET due_at = EXCLUDED.due_at, id = EXCLUDED.id
    WHERE EXCLUDED.due_at < timers.due_at`

const setTimers = Effect.fnUntraced(function*(context: SegmentContext, timers: ReadonlyArray<{ contactId: string; dueAt: string; id: string }>) {
  if (timers.length === 0) return
  const sql = yield* SqlClient.SqlClient
  yield* timersSql(sql, context.projectId, timerRows(context, timers))
})

export const writeMembershipChanges = Effect.fnUntraced(function*(
  lanes: Lanes,
  projectId: string,
  entries: ReadonlyArray<{ segmentId: string; contactId: string; at: string }>,
  exits: ReadonlyArray<{ segmentId: string; contactId: string; at: string }>,
  timers: ReadonlyArray<TimerRow> = []
) {
  if (entries.length === 0 && exits.length === 0 && timers.length === 0) return
  const sql = yield* SqlClient.SqlClient
  const counts = countDeltas(lanes, [
    ...entries.map((entry) => ({ segmentId: entry.segmentId, contactId: entry.contactId, n: 1 })),
    ...exits.map((exit) => ({ segmentId: exit.segmentId, contactId: exit.contactId, n: -1 }))
  ])
  // One round trip: entries, exits, the lanes' shares of the counts and the contacts' next timers.
  yield* sql`
    WITH entered AS (
      INSERT INTO segment_memberships (segment_id, contact_id, project_id, entered_at)
      SELECT (x->>'segmentId')::uuid, (x->>'contactId')::uuid, ${projectId}, (x->>'at')::timestamptz
      FROM jsonb_array_elements(${JSON.stringify(entries)}::jsonb) x
      ON CONFLICT (segment_id, contact_id) DO UPDATE SET entered_at = EXCLUDED.entered_at, exited_at = NULL
      RETURNING 1
    ), exited AS (
      -- Typed record columns let the planner walk the primary key instead of hashing the whole table.
      UPDATE segment_memberships m SET exited_at = x.at
      FROM jsonb_to_recordset(${JSON.stringify(exits)}::jsonb) AS x("segmentId" uuid, "contactId" uuid, at timestamptz)
      WHERE m.segment_id = x."segmentId" AND m.contact_id = x."contactId" AND m.exited_at IS NULL
      RETURNING 1
    ), counted AS (${countsSql(sql, counts)} RETURNING 1),
    timed AS (${timersSql(sql, projectId, timers)} RETURNING 1)
    SELECT (SELECT count(*) FROM entered) + (SELECT count(*) FROM exited) + (SELECT count(*) FROM counted)
         + (SELECT count(*) FROM timed) AS n`
})

/** Membership changes summed per segment and lane (in key order, so concurrent writers lock alike). */
export const countDeltas = (
  lanes: Lanes,
  changes: ReadonlyArray<{ readonly segmentId: string; readonly contactId: string; readonly n: number }>
) => {
  const delta = new Map<string, { segmentId: string; lane: number; n: number }>()
  for (const change of changes) {
    const lane = lanes.laneOf(change.contactId)
    const key = `${change.segmentId}/${lane}`
    const entry = delta.get(key)
    if (entry) entry.n += change.n
    else delta.set(key, { segmentId: change.segmentId, lane, n: change.n })
  }
  return [...delta.values()].filter((entry) => entry.n !== 0).sort((a, b) =>
    a.segmentId < b.segmentId ? -1 : a.segmentId > b.segmentId ? 1 : a.lane - b.lane)
}

export const countsSql = (sql: SqlClient.SqlClient, counts: ReturnType<typeof countDeltas>) => sql`
  INSERT INTO segment_counts (segment_id, lane, members)
  SELECT x."segmentId", x.lane, x.n FROM jsonb_to_recordset(${JSON.stringify(counts)}::jsonb) AS x("segmentId" uuid, lane int, n int)
  ON CONFLICT (segment_id, lane) DO UPDATE SET members = segment_counts.members + EXCLUDED.members`

/**
 * Adds membership changes to each lane's share of the segments' counts (segment_counts): a lane only
 * writes its own rows, so lanes on different workers never wait for each other on a counter.
 */
export const addMemberCounts = Effect.fnUntraced(function*(
  lanes: Lanes,
  changes: ReadonlyArray<{ readonly segmentId: string; readonly contactId: string; readonly n: number }>
) {
  const counts = countDeltas(lanes, changes)
  if (counts.length === 0) return
  const sql = yield* SqlClient.SqlClient
  yield* countsSql(sql, counts)
})

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
    yield* context.outbox.emit(context.projectId, [
      ...entries.map((e) => ({ ...e, kind: "entry" })),
      ...exits.map((e) => ({ ...e, kind: "exit" }))
    ].map((change) => ({
      name: `segment.${def.slug}.${change.kind}`,
      contactId: change.contactId,
      email: emails.get(change.contactId) ?? "",
      data: { segmentId: def.id, segmentName: def.name },
      at
    })))
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
    yield* setAsideLogged("segment backfill", { projectId: context.projectId, segmentId: job.segmentId, contactId: contact.id }, reasonOf(cause), cause)
    job.cursor = contact.id
    job.strikes = (job.strikes ?? 0) + 1
    job.limit = undefined
  })

/** A chunk went through: no strikes, and the chunks grow back to full size. */
export const backfillChunkPassed = (job: BackfillCursor) => {
  job.strikes = undefined
  if (job.limit !== undefined) job.limit = job.limit * 2 >= BACKFILL_CHUNK ? undefined : job.limit * 2
}
