/** Segment timers as the engine writes them (the SQL: store/engine/timers.ts, memberships: store/engine/memberships.ts). */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { type TimerRow, timersSql } from "../store/engine/timers.ts"
import type { SegmentContext } from "./segmentDefs.ts"

/** Timers with the partition that fires them: whoever leases the contact's lane. */
export const timerRows = (
  context: Pick<SegmentContext, "projectId" | "outbox">,
  timers: ReadonlyArray<{ contactId: string; dueAt: string; id: string }>
): Array<TimerRow> => {
  const { lanes } = context.outbox
  return timers.map((timer) => ({ ...timer, partition: lanes.partitionOf(context.projectId, lanes.laneOf(timer.contactId)) }))
}

export const setTimers = Effect.fnUntraced(
  function*(context: SegmentContext, timers: ReadonlyArray<{ contactId: string; dueAt: string; id: string }>) {
    if (timers.length === 0) return
    const sql = yield* SqlClient.SqlClient
    yield* timersSql(sql, context.projectId, timerRows(context, timers))
  }
)
