/**
 * Upgrading from per-project subjects (before lanes): each partition also has a legacy consumer for
 * `<prefix>.in.<p>.>`, whose messages are applied per project, as before. Lane consumers start only
 * once every partition's legacy messages are applied (stream_upgrade.drained_at), so no contact's lane
 * message overtakes one of its older messages; legacy consumers keep running for LEGACY_GRACE after
 * that, for api processes of the previous release still being replaced.
 *
 * Completing the upgrade to lanes: rows that name the partition of their work (mail to send, scheduled
 * campaigns, segment and workflow timers, workflow executions and their WEBHOOK steps) move from the
 * project's old partition to where that work now runs — the owner lane's partition for the project's
 * sender and campaigns, the contact's lane's partition for the rest. Runs once, in the transaction
 * that marks the stream drained.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { type Lanes, OWNER_LANE } from "../stream/lanes.ts"
import { Nats } from "../stream/Nats.ts"
import { Outbox } from "../stream/Outbox.ts"
import { OwnedPartitions } from "./OwnedPartitions.ts"
import { PartitionFeeds } from "./PartitionFeeds.ts"

/** How long after the drain legacy subjects are still consumed (old api processes being replaced). */
const LEGACY_GRACE_SECONDS = 3600

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

export class StreamUpgrade extends Context.Service<StreamUpgrade, {
  /** Lane messages may be applied: every message published before lanes is. */
  readonly drained: () => boolean
  /** Legacy subjects are still read. */
  readonly readLegacy: () => boolean
  /** Reads the upgrade state; records partitions whose legacy messages are all applied; completes the drain. */
  readonly follow: Effect.Effect<void, SqlError.SqlError>
}>()("app/actors/StreamUpgrade") {
  static readonly layer = Layer.effect(
    StreamUpgrade,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const nats = yield* Nats
      const outbox = yield* Outbox
      const { owned } = yield* OwnedPartitions
      const feeds = yield* PartitionFeeds
      const upgrade = { drained: false, readLegacy: true }

      const follow = Effect.gen(function*() {
        // Drained and past the grace period is final: nothing left to follow.
        if (upgrade.drained && !upgrade.readLegacy) return
        const [state] = yield* sql<{ drained_at: Date | null; grace: boolean }>`
          SELECT drained_at, (drained_at IS NULL OR drained_at > now() - make_interval(secs => ${LEGACY_GRACE_SECONDS})) AS grace
          FROM stream_upgrade WHERE id = 1`
        upgrade.drained = state?.drained_at != null
        upgrade.readLegacy = state?.grace ?? false
        if (upgrade.drained) return
        for (const [partition, entry] of owned) {
          if (entry.legacyDrained || !entry.legacy) continue
          const info = yield* Effect.tryPromise(() => nats.jsm.consumers.info(nats.names.inStream, feeds.consumerName(partition, "legacy")))
            .pipe(
              Effect.option
            )
          if (info._tag === "Some" && info.value.num_pending === 0 && info.value.num_ack_pending === 0 && entry.legacy.run.caughtUp()) {
            yield* sql`UPDATE partition_state SET legacy_drained = true WHERE partition = ${partition}`
            entry.legacyDrained = true
          }
        }
        // The worker that sees every partition drained completes the upgrade (once, under the row lock).
        yield* sql.withTransaction(Effect.gen(function*() {
          const [row] = yield* sql<{ drained_at: Date | null }>`SELECT drained_at FROM stream_upgrade WHERE id = 1 FOR UPDATE`
          if (!row || row.drained_at !== null) return
          const [pending] = yield* sql<{ n: number }>`
            SELECT count(*)::int AS n FROM partition_state WHERE partition < ${nats.partitions} AND NOT legacy_drained`
          if ((pending?.n ?? 1) > 0) return
          yield* repartitionForLanes(outbox.lanes)
          yield* sql`UPDATE stream_upgrade SET drained_at = now() WHERE id = 1`
          upgrade.drained = true
          yield* Effect.logInfo("stream upgraded to lanes: every message published before lanes is applied")
        }))
      }).pipe(Effect.provideService(SqlClient.SqlClient, sql))

      return StreamUpgrade.of({ drained: () => upgrade.drained, readLegacy: () => upgrade.readLegacy, follow })
    })
  )
}
