/**
 * What wakes each loop of the worker's scheduled work (ScheduledWork.ts) before its next due time: a
 * schedule notification (migration 0015), a lane batch that set a timer due soon (LaneActors.ts), a
 * webhook step recorded, partitions taken (PartitionLeases.ts).
 */
import { Context, Effect, Layer } from "effect"
import { makeWakeup, type Wakeup } from "../lib/dueLoop.ts"

export class ScheduleWakeups extends Context.Service<ScheduleWakeups, {
  readonly timers: Wakeup
  readonly workflowTimers: Wakeup
  readonly campaigns: Wakeup
  readonly mail: Wakeup
  readonly webhooks: Wakeup
  /** Partitions taken (or notifications possibly missed): every loop looks again. */
  readonly all: Effect.Effect<void>
  /** The loop a schedule notification wakes, by the table it names (migration 0015). */
  readonly ofTable: (table: string) => Wakeup | undefined
}>()("app/actors/ScheduleWakeups") {
  static readonly layer = Layer.effect(
    ScheduleWakeups,
    Effect.gen(function*() {
      const timers = yield* makeWakeup
      const workflowTimers = yield* makeWakeup
      const campaigns = yield* makeWakeup
      const mail = yield* makeWakeup
      const webhooks = yield* makeWakeup
      const byTable: Record<string, Wakeup> = { timers, workflow_timers: workflowTimers, campaigns }
      return ScheduleWakeups.of({
        timers,
        workflowTimers,
        campaigns,
        mail,
        webhooks,
        all: Effect.forEach([timers, workflowTimers, campaigns, mail, webhooks], (wakeup) => wakeup.signal, { discard: true }),
        ofTable: (table) => byTable[table]
      })
    })
  )
}
