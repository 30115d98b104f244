/** The engine's segment timers (table `timers`, one per contact): set by a lane's batch, taken when due by the worker leasing their partition. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export interface TimerRow {
  readonly contactId: string
  readonly dueAt: string
  readonly id: string
  readonly partition: number
}

/** Sets each contact's timer, only ever moving it earlier (see migrations/0004_segments.sql). */
export const timersSql = (sql: SqlClient.SqlClient, projectId: string, timers: ReadonlyArray<TimerRow>) =>
  sql`
  INSERT INTO timers (contact_id, id, project_id, partition, due_at)
  SELECT (x->>'contactId')::uuid, (x->>'id')::uuid, ${projectId}, (x->>'partition')::int, (x->>'dueAt')::timestamptz
  FROM jsonb_array_elements(${JSON.stringify(timers)}::jsonb) x
  ON CONFLICT (contact_id) DO UPDATE SET due_at = EXCLUDED.due_at, id = EXCLUDED.id
    WHERE EXCLUDED.due_at < timers.due_at`

/** The partitions' timers due at `now` (ISO time), at most `limit`, deleted (those another worker holds skipped). */
export const takeDueTimers = Effect.fnUntraced(function*(partitions: ReadonlyArray<number>, now: string, limit: number) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ contact_id: string; id: string; project_id: string; due_at: Date }>`
        DELETE FROM timers WHERE contact_id IN (
          SELECT contact_id FROM timers
          WHERE partition IN ${sql.in(partitions)} AND due_at <= ${now}::timestamptz
          ORDER BY due_at LIMIT ${limit}
          FOR UPDATE SKIP LOCKED)
        RETURNING contact_id, id, project_id, due_at`
})
