/**
 * The engine's SQL for the upgrade from per-project subjects to lanes (actors/upgrade.ts): the upgrade's
 * state, partitions whose legacy messages are all applied, and the rows that name the partition of their
 * work moved to where that work runs with lanes.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { type Lanes, OWNER_LANE } from "../../stream/lanes.ts"

/**
 * Completing the upgrade to lanes: rows that name the partition of their work (mail to send, scheduled
 * campaigns, segment and workflow timers, workflow executions and their WEBHOOK steps) move from the
 * project's old partition to where that work now runs — the owner lane's partition for the project's
 * sender and campaigns, the contact's lane's partition for the rest.
 */
export const repartitionForLanes = (lanes: Lanes) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const projects = yield* sql<{ id: string }>`SELECT id FROM projects`
    if (projects.length === 0) return
    const map = JSON.stringify(projects.map(({ id }) => ({
      id,
      owner: lanes.partitionOf(id, OWNER_LANE),
      parts: lanes.partitionsOf(id)
    })))
    const L = sql.literal(String(lanes.count))
    const byProject = sql`jsonb_to_recordset(${map}::jsonb) AS x(id uuid, owner int, parts jsonb)`
    yield* sql`UPDATE emails e SET partition = x.owner FROM ${byProject}
               WHERE e.project_id = x.id AND e.status IN ('PENDING', 'SENDING')`
    yield* sql`UPDATE campaigns c SET partition = x.owner FROM ${byProject} WHERE c.project_id = x.id`
    yield* sql`UPDATE timers t SET partition = (x.parts->>(get_byte(uuid_send(t.contact_id), 15) % ${L}))::int
               FROM ${byProject} WHERE t.project_id = x.id`
    yield* sql`UPDATE workflow_executions e SET partition = (x.parts->>(get_byte(uuid_send(e.contact_id), 15) % ${L}))::int
               FROM ${byProject} WHERE e.project_id = x.id AND e.status IN ('RUNNING', 'WAITING')`
    yield* sql`UPDATE workflow_step_executions s SET partition = e.partition FROM workflow_executions e
               WHERE s.execution_id = e.id AND s.status = 'RUNNING'`
    yield* sql`UPDATE workflow_timers t SET partition = e.partition FROM workflow_executions e WHERE t.execution_id = e.id`
  })

/** Whether the stream is drained (every message published before lanes applied), and legacy subjects still read (`grace` seconds after). */
export const upgradeState = Effect.fnUntraced(function*(graceSeconds: number) {
  const sql = yield* SqlClient.SqlClient
  const [state] = yield* sql<{ drained_at: Date | null; grace: boolean }>`
          SELECT drained_at, (drained_at IS NULL OR drained_at > now() - make_interval(secs => ${graceSeconds})) AS grace
          FROM stream_upgrade WHERE id = 1`
  return state
})

/** Every legacy message of the partition is applied. */
export const markLegacyDrained = Effect.fnUntraced(function*(partition: number) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE partition_state SET legacy_drained = true WHERE partition = ${partition}`
})

/** The upgrade's row, locked: the worker that completes the drain does it once. */
export const lockUpgradeState = Effect.fnUntraced(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ drained_at: Date | null }>`SELECT drained_at FROM stream_upgrade WHERE id = 1 FOR UPDATE`
  return row
})

/** How many of the stream's partitions (0 to `partitions` - 1) still have legacy messages to apply. */
export const partitionsNotDrained = Effect.fnUntraced(function*(partitions: number) {
  const sql = yield* SqlClient.SqlClient
  const [pending] = yield* sql<{ n: number }>`
            SELECT count(*)::int AS n FROM partition_state WHERE partition < ${partitions} AND NOT legacy_drained`
  return pending?.n
})

/** The stream is drained: lane consumers may start. */
export const markDrained = Effect.fnUntraced(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE stream_upgrade SET drained_at = now() WHERE id = 1`
})
