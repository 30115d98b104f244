/**
 * Completing the upgrade to lanes: rows that name the partition of their work (mail to send, scheduled
 * campaigns, segment and workflow timers, workflow executions and their WEBHOOK steps) move from the
 * project's old partition to where that work now runs — the owner lane's partition for the project's
 * sender and campaigns, the contact's lane's partition for the rest. Runs once, in the transaction
 * that marks the stream drained (see Worker).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { type Lanes, OWNER_LANE } from "../stream/lanes.ts"

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
