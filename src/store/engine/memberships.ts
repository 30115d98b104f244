/**
 * The engine's membership SQL, the only place a lane writes segment_memberships and segment_counts: the
 * batch's transitions as CTEs (membershipCtes, inside a lane batch's one write or writeMembershipChanges),
 * each lane's share of the member counts (countsSql), and a deleted contact leaving its segments.
 */
import { Effect } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import type { Lanes } from "../../stream/lanes.ts"
import { type TimerRow, timersSql } from "./timers.ts"

export interface MembershipChange {
  readonly segmentId: string
  readonly contactId: string
  readonly at: string
}

/** A contact entering (or leaving) a segment. */
export interface MembershipTransition {
  readonly entered: boolean
  readonly change: MembershipChange
}

/** The batch's membership transitions per (segment, contact), reduced to what the rows must end as. */
export const membershipWrites = (transitions: ReadonlyArray<MembershipTransition>) => {
  const last = new Map<string, { entry?: string; exit?: string; member: boolean; segmentId: string; contactId: string }>()
  for (const { change, entered } of transitions) {
    const key = `${change.segmentId}/${change.contactId}`
    const state = last.get(key) ?? { member: false, segmentId: change.segmentId, contactId: change.contactId }
    if (entered) state.entry = change.at
    else state.exit = change.at
    state.member = entered
    last.set(key, state)
  }
  // A row entered in this batch is written whole (entered, and exited if it left again); a row that
  // only left has its exit set.
  const upserts: Array<{ segmentId: string; contactId: string; enteredAt: string; exitedAt: string | null }> = []
  const exits: Array<MembershipChange> = []
  for (const state of last.values()) {
    if (state.entry !== undefined) {
      upserts.push({
        segmentId: state.segmentId,
        contactId: state.contactId,
        enteredAt: state.entry,
        exitedAt: state.member ? null : state.exit ?? null
      })
    } else if (state.exit !== undefined) {
      exits.push({ segmentId: state.segmentId, contactId: state.contactId, at: state.exit })
    }
  }
  return { upserts, exits }
}

/** SQL: CTEs `entered` and `exited` writing the transitions' memberships, in order (only the parts with rows). */
export const membershipCtes = (sql: SqlClient.SqlClient, projectId: string, transitions: ReadonlyArray<MembershipTransition>) => {
  const memberships = membershipWrites(transitions)
  const parts: Array<Statement.Fragment> = []
  if (memberships.upserts.length > 0) {
    parts.push(sql`entered AS (
      INSERT INTO segment_memberships (segment_id, contact_id, project_id, entered_at, exited_at)
      SELECT x."segmentId", x."contactId", ${projectId}, x."enteredAt", x."exitedAt"
      FROM jsonb_to_recordset(${JSON.stringify(memberships.upserts)}::jsonb)
        AS x("segmentId" uuid, "contactId" uuid, "enteredAt" timestamptz, "exitedAt" timestamptz)
      ON CONFLICT (segment_id, contact_id) DO UPDATE SET entered_at = EXCLUDED.entered_at, exited_at = EXCLUDED.exited_at
      RETURNING 1)`)
  }
  if (memberships.exits.length > 0) {
    // Typed record columns let the planner walk the primary key instead of hashing the whole table.
    parts.push(sql`exited AS (
      UPDATE segment_memberships m SET exited_at = x.at
      FROM jsonb_to_recordset(${JSON.stringify(memberships.exits)}::jsonb) AS x("segmentId" uuid, "contactId" uuid, at timestamptz)
      WHERE m.segment_id = x."segmentId" AND m.contact_id = x."contactId" AND m.exited_at IS NULL
      RETURNING 1)`)
  }
  return parts
}

/** Entries and exits (with the lanes' shares of the counts and the contacts' next timers) in one statement. */
export const writeMembershipChanges = Effect.fnUntraced(function*(
  lanes: Lanes,
  projectId: string,
  entries: ReadonlyArray<MembershipChange>,
  exits: ReadonlyArray<MembershipChange>,
  timers: ReadonlyArray<TimerRow> = []
) {
  if (entries.length === 0 && exits.length === 0 && timers.length === 0) return
  const sql = yield* SqlClient.SqlClient
  const transitions = [...entries.map((change) => ({ entered: true, change })), ...exits.map((change) => ({ entered: false, change }))]
  const counts = countDeltas(lanes, transitions.map(({ entered, change }) => ({ ...change, n: entered ? 1 : -1 })))
  const parts = membershipCtes(sql, projectId, transitions)
  if (counts.length > 0) parts.push(sql`counted AS (${countsSql(sql, counts)} RETURNING 1)`)
  if (timers.length > 0) parts.push(sql`timed AS (${timersSql(sql, projectId, timers)} RETURNING 1)`)
  // One round trip: entries, exits, the lanes' shares of the counts and the contacts' next timers.
  if (parts.length > 0) yield* sql`WITH ${sql.join(",\n", false)(parts)} SELECT 1`
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
    a.segmentId < b.segmentId ? -1 : a.segmentId > b.segmentId ? 1 : a.lane - b.lane
  )
}

export const countsSql = (sql: SqlClient.SqlClient, counts: ReturnType<typeof countDeltas>) =>
  sql`
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

/** A deleted contact leaves every segment it is in: the segments it left, with what their exit events need. */
export const leaveAllSegments = Effect.fnUntraced(function*(contactId: string) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ segment_id: string; name: string; track_membership: boolean }>`
        WITH gone AS (
          DELETE FROM segment_memberships WHERE contact_id = ${contactId} AND exited_at IS NULL RETURNING segment_id
        )
        SELECT s.id AS segment_id, s.name, s.track_membership FROM segments s JOIN gone ON s.id = gone.segment_id`
})
