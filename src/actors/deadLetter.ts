/** A message that fails on its own, set aside as a dead letter so the lane's next messages can proceed. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { insertDeadLetter } from "../store/engine/deadLetters.ts"
import { leaseHeldSql } from "../store/engine/leases.ts"
import { recordOffsetSql } from "../store/engine/offsets.ts"
import type { Delivered } from "./messages.ts"
import { type BatchContext, LeaseLost } from "./batchContext.ts"

/**
 * Sets aside one message that fails deterministically: recorded in `dead_letters` and counted as
 * applied for its project (in one lease-checked transaction), so the messages after it can proceed.
 */
export const deadLetter = Effect.fnUntraced(function*(context: BatchContext, message: Delivered, error: string) {
  const sql = yield* SqlClient.SqlClient
  context.segmentState.facts?.forget()
  yield* sql.withTransaction(Effect.gen(function*() {
    const leases = yield* leaseHeldSql(sql, context)
    if (leases.length === 0) return yield* new LeaseLost({ partition: context.partition })
    yield* insertDeadLetter(sql, {
      projectId: context.projectId,
      partition: context.partition,
      seq: message.seq,
      body: message.body,
      error
    })
    // The highest stream sequence applied, for the lane (or, before lanes, the project).
    yield* recordOffsetSql(sql, context.projectId, context.lane, message.seq)
  }))
})
