/** A message that fails on its own, set aside as a dead letter so the lane's next messages can proceed. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../domain/ids.ts"
import type { Delivered } from "./messages.ts"
import { type BatchContext, LeaseLost } from "./batchContext.ts"

/** The highest stream sequence applied, for the lane (or, before lanes, the project). */
const recordOffset = (context: BatchContext, seq: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    context.lane === undefined
      ? sql`
          INSERT INTO project_offsets (project_id, applied_seq) VALUES (${context.projectId}, ${seq})
          ON CONFLICT (project_id) DO UPDATE SET applied_seq = GREATEST(project_offsets.applied_seq, EXCLUDED.applied_seq)`
      : sql`
          INSERT INTO lane_offsets (project_id, lane, applied_seq) VALUES (${context.projectId}, ${context.lane}, ${seq})
          ON CONFLICT (project_id, lane) DO UPDATE SET applied_seq = GREATEST(lane_offsets.applied_seq, EXCLUDED.applied_seq)`)

/**
 * Sets aside one message that fails deterministically: recorded in `dead_letters` and counted as
 * applied for its project (in one lease-checked transaction), so the messages after it can proceed.
 */
export const deadLetter = Effect.fnUntraced(function*(context: BatchContext, message: Delivered, error: string) {
  const sql = yield* SqlClient.SqlClient
  context.segmentState.facts?.forget()
  yield* sql.withTransaction(Effect.gen(function*() {
    const leases = yield* sql`
      SELECT 1 FROM partition_leases
      WHERE partition = ${context.partition} AND owner = ${context.workerId} AND epoch = ${context.epoch}
      FOR SHARE`
    if (leases.length === 0) return yield* new LeaseLost({ partition: context.partition })
    yield* sql`INSERT INTO dead_letters (id, project_id, partition, seq, payload, error)
               VALUES (${uuidv7()}, ${context.projectId}, ${context.partition}, ${message.seq},
                       ${JSON.stringify(message.body)}, ${error.slice(0, 4000)})`
    yield* recordOffset(context, message.seq)
  }))
})
