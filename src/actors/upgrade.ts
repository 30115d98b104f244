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
import {
  lockUpgradeState,
  markDrained,
  markLegacyDrained,
  partitionsNotDrained,
  repartitionForLanes,
  upgradeState
} from "../store/engine/upgrade.ts"
import { Nats } from "../stream/Nats.ts"
import { Outbox } from "../stream/Outbox.ts"
import { OwnedPartitions } from "./OwnedPartitions.ts"
import { PartitionFeeds } from "./PartitionFeeds.ts"

/** How long after the drain legacy subjects are still consumed (old api processes being replaced). */
const LEGACY_GRACE_SECONDS = 3600

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
        const state = yield* upgradeState(LEGACY_GRACE_SECONDS)
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
            yield* markLegacyDrained(partition)
            entry.legacyDrained = true
          }
        }
        // The worker that sees every partition drained completes the upgrade (once, under the row lock).
        yield* sql.withTransaction(Effect.gen(function*() {
          const row = yield* lockUpgradeState()
          if (!row || row.drained_at !== null) return
          const pending = yield* partitionsNotDrained(nats.partitions)
          if ((pending ?? 1) > 0) return
          yield* repartitionForLanes(outbox.lanes)
          yield* markDrained()
          upgrade.drained = true
          yield* Effect.logInfo("stream upgraded to lanes: every message published before lanes is applied")
        }))
      }).pipe(Effect.provideService(SqlClient.SqlClient, sql))

      return StreamUpgrade.of({ drained: () => upgrade.drained, readLegacy: () => upgrade.readLegacy, follow })
    })
  )
}
