/**
 * How many events a worker holds delivered and not yet applied, across its lane actors. A consumer
 * that would go past it waits before handing its message over (its push consumer's flow control then
 * stops the server sending), so a stream backlog stays in the stream: without it a partition's consumer
 * let up to max_ack_pending lane messages (of up to a thousand events each) be decoded into the worker's
 * mailboxes, gigabytes while draining a million-event backlog.
 *
 * A message holds its events' permits from delivery until it is acked (applied, or set aside as a dead
 * letter), or until its partition run stops (its messages are then left to the stream's next delivery).
 */
import { Effect, Semaphore } from "effect"
import type { PartitionRun } from "./partitionRun.ts"
import type { Delivered } from "./messages.ts"

/** What a message weighs: its events (a message of another kind, one). */
const weightOf = (delivered: Delivered) => (delivered.body.kind === "track" ? Math.max(1, delivered.body.events.length) : 1)

export const makeDeliveryBudget = (events: number) =>
  Effect.map(Semaphore.make(events), (semaphore) => {
    /** Permits held, per run and message (by stream sequence). */
    const held = new Map<PartitionRun, Map<number, number>>()
    return {
      /** Waits until the message's events fit, then counts them. */
      take: (run: PartitionRun, delivered: Delivered) =>
        Effect.gen(function*() {
          const permits = Math.min(events, weightOf(delivered))
          yield* semaphore.take(permits)
          let byRun = held.get(run)
          if (!byRun) held.set(run, byRun = new Map())
          const already = byRun.get(delivered.seq)
          // Delivered again on the same run (a redelivery): its permits are held once.
          if (already !== undefined) yield* semaphore.release(permits)
          else byRun.set(delivered.seq, permits)
        }),
      /** The message was acked: its permits go back. */
      release: (run: PartitionRun, seq: number) => {
        const byRun = held.get(run)
        const permits = byRun?.get(seq)
        if (permits === undefined) return Effect.void
        byRun!.delete(seq)
        return Effect.asVoid(semaphore.release(permits))
      },
      /** The run stopped: whatever it still held goes back. */
      releaseRun: (run: PartitionRun) => {
        const byRun = held.get(run)
        if (!byRun) return Effect.void
        held.delete(run)
        let permits = 0
        for (const value of byRun.values()) permits += value
        return Effect.asVoid(semaphore.release(permits))
      }
    }
  })
