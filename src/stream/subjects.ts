/**
 * Stream and subject names. Every name carries NATS_PREFIX so several deployments or test runs can
 * share one NATS server. Partitioning is computed by the publisher (nats-server 2.9 has no subject
 * mapping we could rely on), per lane of a project (see lanes.ts):
 *
 * - `<prefix>.ingest.<partition>.<projectId>.track`: stream IN, tracked events as the api publishes them,
 *   one envelope per project per flush (partition = FNV-1a(projectId) mod P); the partition's worker
 *   splits them into lane messages (actors/IngestSplitter.ts);
 * - `<prefix>.lane.<partition>.<projectId>.<lane>.<kind>`: stream IN, one lane of a project;
 * - `<prefix>.in.<partition>.<projectId>.<kind>`: stream IN before lanes (partition = FNV-1a(projectId)
 *   mod P), still consumed so an upgraded deployment drains what was published before it;
 * - `<prefix>.out.<projectId>.<eventName>`: stream OUT, the events the service emits;
 * - `<prefix>.live.<projectId>`: no stream (core NATS only, nothing kept): "this project's data changed",
 *   published by workers after their commits, for the dashboard's live pages (LiveSignals.ts).
 */
import { fnv1a } from "./lanes.ts"

export type { InKind } from "./messages.ts"

/** The partition of a project's messages published before lanes, and of its ingest envelopes. */
export const legacyPartitionOf = (projectId: string, partitions: number): number => fnv1a(projectId) % partitions

export interface StreamNames {
  readonly inStream: string
  readonly outStream: string
  readonly inSubjects: ReadonlyArray<string>
  readonly outSubjects: ReadonlyArray<string>
  /** A partition's lane messages (the filter of its consumer). */
  readonly laneFilter: (partition: number) => string
  /** A partition's messages published before lanes. */
  readonly legacyFilter: (partition: number) => string
  /** A partition's ingest envelopes (the filter of its splitter's consumer). */
  readonly ingestFilter: (partition: number) => string
  /** Where the api publishes a project's tracked events (and its event deletes, `kind` "command", ordered with them). */
  readonly ingestSubject: (projectId: string, partitions: number, kind?: "track" | "command") => string
  readonly outSubject: (projectId: string, eventName: string) => string
  /** Every project's stream OUT events, for a plain (core NATS) subscription. */
  readonly outAll: string
  /** Where a worker says a project's data changed (core NATS, outside every stream). */
  readonly liveSubject: (projectId: string) => string
  readonly liveAll: string
}

export const streamNames = (prefix: string): StreamNames => ({
  inStream: `${prefix}_IN`,
  outStream: `${prefix}_OUT`,
  inSubjects: [`${prefix}.lane.>`, `${prefix}.in.>`, `${prefix}.ingest.>`],
  outSubjects: [`${prefix}.out.>`],
  laneFilter: (partition) => `${prefix}.lane.${partition}.>`,
  legacyFilter: (partition) => `${prefix}.in.${partition}.>`,
  ingestFilter: (partition) => `${prefix}.ingest.${partition}.>`,
  ingestSubject: (projectId, partitions, kind = "track") =>
    `${prefix}.ingest.${legacyPartitionOf(projectId, partitions)}.${projectId}.${kind}`,
  outSubject: (projectId, eventName) => `${prefix}.out.${projectId}.${eventName}`,
  outAll: `${prefix}.out.>`,
  liveSubject: (projectId) => `${prefix}.live.${projectId}`,
  liveAll: `${prefix}.live.>`
})
