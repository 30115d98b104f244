import { WorkerMetrics } from "../observability/Metrics.ts"

/** A partition as currently leased by this worker, and its in-order delivery bookkeeping. */
export class PartitionRun {
  /** Delivered sequences not yet applied, in delivery order. */
  private readonly inflight: Array<number> = []
  private readonly done = new Set<number>()
  stopped = false

  readonly partition: number
  readonly epoch: number
  /** Everything at or below this sequence has been applied. */
  watermark: number

  constructor(partition: number, epoch: number, watermark: number) {
    this.partition = partition
    this.epoch = epoch
    this.watermark = watermark
  }

  delivered(seq: number) {
    this.inflight.push(seq)
  }

  /** Drops what was delivered and not applied (its consumer is recreated at the watermark). */
  forgetInflight() {
    this.inflight.length = 0
    this.done.clear()
  }

  /** Everything delivered so far is applied. */
  caughtUp(): boolean {
    return this.inflight.length === 0
  }

  /** Marks a sequence applied and moves the watermark over every contiguous applied sequence. */
  applied(seq: number) {
    this.done.add(seq)
    while (this.inflight.length > 0 && this.done.has(this.inflight[0]!)) {
      const next = this.inflight.shift()!
      this.done.delete(next)
      this.watermark = next
    }
    WorkerMetrics.partitionWatermark.set(this.watermark, { partition: this.partition })
  }
}
