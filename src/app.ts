/** The process roles as layers: `api`, `worker`, and `all` (both), over the shared infrastructure. */
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
import { StreamUpgrade } from "./actors/upgrade.ts"
import { MetricsServerLive } from "./observability/MetricsServer.ts"
import { AppConfig } from "./config.ts"
import { HttpLive } from "./http/server.ts"
import { Contacts } from "./store/Contacts.ts"
import { DatabaseLive } from "./store/db.ts"
import { Projects } from "./store/Projects.ts"
import { Nats } from "./stream/Nats.ts"
import { Outbox } from "./stream/Outbox.ts"
import { OutboxRelay } from "./stream/OutboxRelay.ts"
import { Invalidations } from "./stream/Invalidations.ts"
import { LiveSignals } from "./stream/LiveSignals.ts"
import { ClockLive } from "./lib/clock.ts"
import { Dns } from "./lib/dns.ts"
import { MailQueue } from "./mail/MailQueue.ts"
import { MailTransport } from "./mail/Transport.ts"
import { Domains } from "./store/Domains.ts"
import { Emails } from "./store/Emails.ts"
import { Templates } from "./store/Templates.ts"
import { Campaigns } from "./store/Campaigns.ts"
import { Destinations } from "./store/Destinations.ts"
import { DestinationEngine } from "./destinations/engine.ts"
import { WorkflowRuntime } from "./workflows/Runtime.ts"
import { WebhookRunner } from "./workflows/webhooks.ts"
import { ProtectionMonitorLive } from "./accounts/ProtectionMonitor.ts"
import { HeldMailResumerLive } from "./billing/heldMail.ts"
import { Billing } from "./store/Billing.ts"
import { CompactionLive } from "./analytics/Compaction.ts"
import { EmailContentRetentionLive } from "./mail/contentRetention.ts"

/** Postgres (migrated) and NATS (streams ensured). */
export const InfraLive = Layer.mergeAll(DatabaseLive, Nats.layer)

/** Repositories and the outbox relay: what both roles need. */
export const CoreLive = Layer.mergeAll(
  Contacts.layer,
  Projects.layer,
  OutboxRelay.layer,
  Invalidations.layer,
  LiveSignals.layer,
  Emails.layer,
  Templates.layer,
  Campaigns.layer,
  Destinations.layer,
  MailQueue.layer.pipe(Layer.provide(Projects.layer)),
  Domains.layer.pipe(Layer.provideMerge(Dns.layer))
).pipe(Layer.provideMerge(Outbox.layer), Layer.provideMerge(InfraLive))

/** The HTTP api, and /metrics on METRICS_PORT instead of PORT when that is set. */
export const ApiRoleLive = Layer.mergeAll(HttpLive, MetricsServerLive).pipe(Layer.provideMerge(CoreLive))

/**
 * The stream worker's jobs, each on the services under it: built from the bottom up, stopped from the
 * top down, so on shutdown the scheduled work and the lag report stop before the leases hand the
 * partitions over (their consumers first, then their actors).
 */
export const StreamWorkerLive = Layer.mergeAll(ScheduledWorkLive, LagReportsLive).pipe(
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

export const AllRolesLive = Layer.mergeAll(ApiRoleLive, WorkerRoleLive)

/** A worker on its own serves /metrics on METRICS_PORT (its only HTTP port). */
export const StandaloneWorkerLive = Layer.mergeAll(WorkerRoleLive, MetricsServerLive)

export const withConfig = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
  layer.pipe(Layer.provideMerge(ClockLive), Layer.provideMerge(AppConfig.layer))
