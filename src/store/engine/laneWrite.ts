/**
 * The one write of a tracked batch (a lane's, or a combined turn's lanes of one project): contacts and their
 * field types, events and aggregates, the analytics rollups, memberships, the lanes' member counts, timers,
 * outbox rows and the caller's `extra` CTEs (a combined turn's lane offsets), in ONE statement.
 */
import type { SqlClient, Statement } from "effect/sql"
import type { Outbox, OutboxRow } from "../../stream/Outbox.ts"
import { type ContactWrite, contactWritesSql } from "./contacts.ts"
import { type EventRow, rollupsCountedSql, storeEventsCtes } from "./events.ts"
import { countDeltas, countsSql, membershipCtes, type MembershipTransition } from "./memberships.ts"
import { type TimerRow, timersSql } from "./timers.ts"

export interface LaneWrite {
  readonly contacts: Iterable<ContactWrite>
  readonly events: ReadonlyArray<EventRow>
  readonly transitions: ReadonlyArray<MembershipTransition>
  readonly timers: ReadonlyArray<TimerRow>
  readonly outRows: ReadonlyArray<OutboxRow>
}

/** SQL: the write, answering the ids of the events stored now (those already stored are skipped). */
export const laneWriteSql = (
  sql: SqlClient.SqlClient,
  context: { readonly projectId: string; readonly outbox: Pick<Outbox["Service"], "lanes" | "rowsSql"> },
  write: LaneWrite,
  now: string,
  extra: ReadonlyArray<Statement.Fragment> = []
) => {
  const { projectId, outbox } = context
  const contactWrites = contactWritesSql(sql, projectId, write.contacts, now)
  const { transitions, events: toInsert, timers: timerList, outRows } = write
  const counts = countDeltas(outbox.lanes, transitions.map(({ entered, change }) => ({ ...change, n: entered ? 1 : -1 })))
  // Only the parts with rows: a part over an empty list still costs its plan and its triggers, and a
  // statement's text per combination keeps each one's cached plan fitting (a few combinations in practice).
  const parts: Array<Statement.Fragment> = []
  if (contactWrites.count > 0)
    parts.push(sql`updated AS (${contactWrites.updated} RETURNING 1)`, sql`fields AS (${contactWrites.fields} RETURNING 1)`)
  parts.push(storeEventsCtes(sql, projectId, toInsert))
  // The analytics rollups of the events stored now, counted here instead of by the insert's trigger
  // (migration 0025), unless an event is one the rollups attribute to a mail (the trigger then counts all).
  if (toInsert.length > 0 && !toInsert.some((event) => event.name === "contact.unsubscribed" || event.name.startsWith("email."))) {
    parts.push(rollupsCountedSql(sql, projectId))
  }
  parts.push(...membershipCtes(sql, projectId, transitions))
  if (counts.length > 0) parts.push(sql`counted AS (${countsSql(sql, counts)} RETURNING 1)`)
  if (timerList.length > 0) parts.push(sql`timed AS (${timersSql(sql, projectId, timerList)} RETURNING 1)`)
  if (outRows.length > 0) parts.push(sql`outboxed AS (${outbox.rowsSql(outRows)} RETURNING 1)`)
  parts.push(...extra)
  return sql<{ id: string }>`WITH ${sql.join(",\n", false)(parts)} SELECT id FROM ins`
}
