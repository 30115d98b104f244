/**
 * The lane actors of the partitions leased here (ProjectActors.ts) as a service: the partition
 * consumers deliver to them, the leases stop them when a partition goes.
 */
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../config.ts"
import { LiveSignals } from "../stream/LiveSignals.ts"
import { Outbox } from "../stream/Outbox.ts"
import { OutboxRelay } from "../stream/OutboxRelay.ts"
import { MailSender } from "./MailSender.ts"
import { OwnedPartitions } from "./OwnedPartitions.ts"
import { makeProjectActors } from "./ProjectActors.ts"
import { ScheduleWakeups } from "./ScheduleWakeups.ts"

export class LaneActors
  extends Context.Service<LaneActors, Effect.Success<ReturnType<typeof makeProjectActors>>>()("app/actors/LaneActors")
{
  static readonly layer = Layer.effect(
    LaneActors,
    Effect.gen(function*() {
      const wakeups = yield* ScheduleWakeups
      const sender = yield* MailSender
      return yield* makeProjectActors({
        workerId: (yield* OwnedPartitions).workerId,
        outbox: yield* Outbox,
        relay: yield* OutboxRelay,
        wakeSender: sender.wake,
        // Batches set timers without notifying (see migration 0015): a soon one wakes this worker's loop.
        wakeSegmentTimers: wakeups.timers.signal,
        wakeWorkflowTimers: wakeups.workflowTimers.signal,
        changed: (yield* LiveSignals).changed,
        readAhead: (yield* AppConfig).batchReadAhead
      })
    })
  )
}
