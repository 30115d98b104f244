/**
 * The durable timers of time-dependent segments (one per contact, at its earliest boundary), fired
 * by the worker that leases their partition: due rows are deleted and published into their contact's
 * lane in one transaction; a republish after a failed commit carries the same Nats-Msg-Id and is
 * dropped. A row that cannot become a message (an impossible due time) is dropped alone, logged and
 * counted: the contact's segments are evaluated again at its next change.
 */
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { mapRows } from "../lib/isolation.ts"
import type { Nats } from "../stream/Nats.ts"
import type { Outbox } from "../stream/Outbox.ts"
import { takeDueTimers } from "../store/engine/timers.ts"
import type { TimerMessage } from "./messages.ts"

const TIMERS_PER_ROUND = 1_000

export const fireSegmentTimers = (nats: Nats["Service"], outbox: Outbox["Service"], partitions: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    if (partitions.length === 0) return
    const sql = yield* SqlClient.SqlClient
    yield* sql.withTransaction(Effect.gen(function*() {
      const due = yield* takeDueTimers(partitions, new Date(yield* Clock.currentTimeMillis).toISOString(), TIMERS_PER_ROUND)
      if (due.length === 0) return
      const { mapped } = yield* mapRows(
        "segment timers",
        due,
        (timer) => ({ projectId: timer.project_id, contactId: timer.contact_id, timerId: timer.id }),
        (timer) => {
          const message: TimerMessage = {
            kind: "timer",
            projectId: timer.project_id,
            contactId: timer.contact_id,
            dueAt: new Date(timer.due_at).toISOString()
          }
          const subject = outbox.subject(timer.project_id, outbox.lanes.laneOf(timer.contact_id), "timer")
          return { subject, payload: JSON.stringify(message), id: timer.id }
        }
      )
      yield* Effect.tryPromise(() =>
        Promise.all(mapped.map((message) => nats.js.publish(message.subject, message.payload, { msgID: message.id })))
      )
    }))
  })
