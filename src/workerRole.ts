/** The `worker` role as a layer: imported by the worker process alone (the api never loads the actors). */
import { Layer } from "effect"
import { LaneActors } from "./actors/LaneActors.ts"
import { MailSender } from "./actors/MailSender.ts"
import { OwnedPartitions } from "./actors/OwnedPartitions.ts"
import { PartitionConsumers } from "./actors/PartitionConsumers.ts"
import { PartitionFeeds } from "./actors/PartitionFeeds.ts"
import { LagReportsLive, PartitionLag } from "./actors/PartitionLag.ts"
import { PartitionLeasesLive } from "./actors/PartitionLeases.ts"
import { ScheduledWorkLive } from "./actors/ScheduledWork.ts"
import { ScheduleWakeups } from "./actors/ScheduleWakeups.ts"
import { StreamPurgeLive } from "./actors/StreamPurge.ts"
import { StreamUpgrade } from "./actors/upgrade.ts"
import { MetricsServerLive } from "./observability/MetricsServer.ts"
import { MailTransport } from "./mail/Transport.ts"
import { WorkflowRuntime } from "./workflows/Runtime.ts"
import { WebhookRunner } from "./workflows/webhooks.ts"
import { ProtectionMonitorLive } from "./accounts/ProtectionMonitor.ts"
import { HeldMailResumerLive } from "./billing/heldMail.ts"
import { Billing } from "./store/Billing.ts"
import { CompactionLive } from "./analytics/Compaction.ts"
import { EmailContentRetentionLive } from "./mail/contentRetention.ts"
import { CoreLive } from "./core.ts"
import { DestinationEngine } from "./destinations/engine.ts"

/**
 * The stream worker's jobs, each on the services under it: built from the bottom up, stopped from the
 * top down, so on shutdown the scheduled work and the lag report stop before the leases hand the
 * partitions over (their consumers first, then their actors).
 */
export const StreamWorkerLive = Layer.mergeAll(ScheduledWorkLive, LagReportsLive, StreamPurgeLive).pipe( // StreamPurgeLive: what is applied and acked leaves streams IN and OUT
  Layer.provideMerge(PartitionLeasesLive), // heartbeat: take, renew, rebalance, hand over (fencing epochs, watermarks)
  Layer.provideMerge(Layer.mergeAll(PartitionConsumers.layer, PartitionLag.layer)), // each leased partition's consumers (lanes, ingest splitter, legacy), their lag
  Layer.provideMerge(StreamUpgrade.layer), // legacy subjects drained before lanes start
  Layer.provideMerge(PartitionFeeds.layer), // one durable push consumer per feed, recreated at its watermark
  Layer.provideMerge(LaneActors.layer), // the lane actors that apply batches
  Layer.provideMerge(Layer.mergeAll(MailSender.layer, WebhookRunner.layer)), // mail and webhooks of the leased partitions
  Layer.provideMerge(Layer.mergeAll(OwnedPartitions.layer, ScheduleWakeups.layer)) // what the jobs share
)

/** The worker role: the stream worker, and the checks every worker runs over the whole deployment. */
export const WorkerRoleLive = Layer.mergeAll(
  StreamWorkerLive,
  ProtectionMonitorLive,
  HeldMailResumerLive,
  CompactionLive,
  EmailContentRetentionLive,
  DestinationEngine.layer // event destinations: the OUT consumer, per-destination pumps, retries
).pipe(
  Layer.provide(MailTransport.layer),
  Layer.provide(WorkflowRuntime.layer),
  Layer.provide(Billing.layer),
  Layer.provideMerge(CoreLive)
)

/** A worker on its own serves /metrics on METRICS_PORT (its only HTTP port). */
export const StandaloneWorkerLive = Layer.mergeAll(WorkerRoleLive, MetricsServerLive)
