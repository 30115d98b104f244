/**
 * What the worker's jobs share: the partitions this worker leases now, each with the fencing epoch of
 * its lease and its consumers, and the worker's id, the owner its leases are held under. The leases
 * (PartitionLeases.ts) add and remove partitions; the consumers (PartitionConsumers.ts) fill in each
 * partition's feeds; the scheduled work, the sender and the lag report read which partitions are here.
 */
import { Context, type Fiber, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { hostname } from "node:os"
import type { PartitionRun } from "./partitionRun.ts"

/** One consumer of a leased partition: its delivery bookkeeping and its fiber. */
export interface Consumption {
  readonly run: PartitionRun
  readonly fiber: Fiber.Fiber<void, unknown>
}

/**
 * A partition leased here, with its lane consumer and its ingest splitter (once drained) and its legacy
 * consumer (while needed).
 */
export interface Owned {
  readonly epoch: number
  lanes: Consumption | undefined
  ingest: Consumption | undefined
  legacy: Consumption | undefined
  legacyDrained: boolean
}

export class OwnedPartitions extends Context.Service<OwnedPartitions, {
  /** This process's name in `workers` and `partition_leases.owner`. */
  readonly workerId: string
  /** Partition → its lease and consumers: a live view, to be read afresh each time. */
  readonly owned: ReadonlyMap<number, Owned>
  /** The partitions leased now. */
  readonly partitions: () => Array<number>
  readonly add: (partition: number, entry: Owned) => void
  readonly remove: (partition: number) => void
}>()("app/actors/OwnedPartitions") {
  static readonly layer = Layer.sync(OwnedPartitions, () => {
    const owned = new Map<number, Owned>()
    return OwnedPartitions.of({
      workerId: `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`,
      owned,
      partitions: () => [...owned.keys()],
      add: (partition, entry) => owned.set(partition, entry),
      remove: (partition) => owned.delete(partition)
    })
  })
}
