/**
 * The worker's scheduled work over the partitions it leases (see lib/dueLoop.ts): each loop sleeps
 * until the next due time of those partitions, woken early by a notification (migration 0015) or a
 * partition taken (ScheduleWakeups.ts); while work is due at once, its rounds are GAP apart (the
 * worst-case lateness under load). Without anything scheduled a loop looks once per SAFETY_POLL, in
 * case a notification was lost. Beside them, every worker re-checks the sending domains' DNS records.
 */
import { Clock, Duration, Effect, Layer, Queue, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"
import { runWhenDue } from "../lib/dueLoop.ts"
import { listenTo, SCHEDULE_CHANNEL } from "../lib/notifications.ts"
import { Campaigns } from "../store/Campaigns.ts"
import { Domains } from "../store/Domains.ts"
import {
  nextMailDue,
  nextScheduledCampaignDue,
  nextSegmentTimerDue,
  nextWebhookDue,
  nextWorkflowTimerDue
} from "../store/engine/scheduled.ts"
import { Nats } from "../stream/Nats.ts"
import { Outbox } from "../stream/Outbox.ts"
import { OutboxRelay } from "../stream/OutboxRelay.ts"
import { WorkflowRuntime } from "../workflows/Runtime.ts"
import { fireWorkflowTimers, TIMERS_PER_ROUND } from "../workflows/timers.ts"
import { WebhookRunner } from "../workflows/webhooks.ts"
import { MailSender } from "./MailSender.ts"
import { OwnedPartitions } from "./OwnedPartitions.ts"
import { ScheduleWakeups } from "./ScheduleWakeups.ts"
import { fireSegmentTimers } from "./segmentTimers.ts"

const TIMER_GAP = Duration.millis(50)
const CAMPAIGN_GAP = Duration.millis(500)
/** Mail due (retries after backoff, missed wake-ups): queued mail is not notified, so looked for more often. */
const MAIL_GAP = Duration.seconds(1)
const MAIL_SAFETY_POLL = Duration.seconds(5)
const WEBHOOK_GAP = Duration.millis(500)
const SAFETY_POLL = Duration.seconds(30)
/** How often domains due for their DNS re-check (DOMAIN_RECHECK_SECONDS) are looked for, at most. */
const DOMAIN_CHECK_POLL_SECONDS = 30

export const ScheduledWorkLive = Layer.effectDiscard(Effect.gen(function*() {
  const clock = yield* Clock.Clock
  const sql = yield* SqlClient.SqlClient
  const nats = yield* Nats
  const outbox = yield* Outbox
  const relay = yield* OutboxRelay
  const config = yield* AppConfig
  const campaigns = yield* Campaigns
  const sender = yield* MailSender
  const webhooks = yield* WebhookRunner
  const wakeups = yield* ScheduleWakeups
  const { owned, partitions } = yield* OwnedPartitions

  const ownedArray = () => `{${partitions().join(",")}}`
  /** Milliseconds from `now` until `due` (a timestamp a query answered; null: nothing scheduled). */
  const millisUntil = (due: Date | string | null | undefined, now: number) => (due == null ? undefined : new Date(due).getTime() - now)
  /** A next-due query over the partitions leased now (built afresh each time: its parameters are read at build). */
  const nextDue = <A>(query: () => Effect.Effect<A, unknown>) =>
    Effect.suspend(() => (owned.size === 0 ? Effect.succeed(undefined) : query()))

  const loops = [
    {
      // Durable segment timers of the partitions leased here, due by this worker's clock (segmentTimers.ts).
      name: "segment timers",
      wakeup: wakeups.timers,
      gap: TIMER_GAP,
      atMost: SAFETY_POLL,
      round: Effect.as(Effect.suspend(() => fireSegmentTimers(nats, outbox, partitions())), false),
      nextDueIn: nextDue(() =>
        Effect.map(
          nextSegmentTimerDue(sql, ownedArray()),
          ([row]) => millisUntil(row?.due, clock.currentTimeMillisUnsafe())
        )
      )
    },
    {
      // Workflows: due DELAY / WAIT_FOR_EVENT timers go back into their partitions (at once again while a round was full).
      name: "workflow timers",
      wakeup: wakeups.workflowTimers,
      gap: TIMER_GAP,
      atMost: SAFETY_POLL,
      round: Effect.map(Effect.suspend(() => fireWorkflowTimers(nats, outbox, partitions())), (fired) => fired >= TIMERS_PER_ROUND),
      nextDueIn: nextDue(() =>
        Effect.map(
          nextWorkflowTimerDue(sql, ownedArray()),
          ([row]) => millisUntil(row?.due, clock.currentTimeMillisUnsafe())
        )
      )
    },
    {
      // Scheduled campaigns are durable timers: due ones (by this worker's clock) start sending.
      name: "scheduled campaigns",
      wakeup: wakeups.campaigns,
      gap: CAMPAIGN_GAP,
      atMost: SAFETY_POLL,
      round: Effect.suspend(() => campaigns.startDue(partitions(), new Date(clock.currentTimeMillisUnsafe()))).pipe(
        Effect.tap((started) => (started > 0 ? relay.wake : Effect.void)),
        Effect.as(false)
      ),
      nextDueIn: nextDue(() =>
        Effect.map(
          nextScheduledCampaignDue(sql, ownedArray()),
          ([row]) => millisUntil(row?.due, clock.currentTimeMillisUnsafe())
        )
      )
    },
    {
      // Mail due: retries after their backoff (by Postgres' clock, as the sweep), and missed wake-ups.
      name: "mail sweep",
      wakeup: wakeups.mail,
      gap: MAIL_GAP,
      atMost: MAIL_SAFETY_POLL,
      round: Effect.as(Effect.suspend(() => sender.sweep(partitions())), false),
      nextDueIn: nextDue(() =>
        Effect.map(
          nextMailDue(sql, ownedArray()),
          ([row]) => millisUntil(row?.due, new Date(row!.now).getTime())
        )
      )
    },
    {
      // WEBHOOK steps recorded by actors (they wake this loop) and their retries after backoff.
      name: "webhook sweep",
      wakeup: wakeups.webhooks,
      gap: WEBHOOK_GAP,
      atMost: SAFETY_POLL,
      round: Effect.as(Effect.suspend(() => webhooks.sweep(partitions())), false),
      nextDueIn: nextDue(() =>
        Effect.map(
          nextWebhookDue(sql, ownedArray()),
          ([row]) => millisUntil(row?.due, new Date(row!.now).getTime())
        )
      )
    }
  ]
  for (const loop of loops) {
    yield* Effect.forkScoped(runWhenDue({ ...loop, round: Effect.provideService(loop.round, SqlClient.SqlClient, sql) }))
  }

  const workflowRuntime = yield* WorkflowRuntime
  yield* Queue.take(workflowRuntime.webhookWakeups).pipe(Effect.andThen(wakeups.webhooks.signal), Effect.forever, Effect.forkScoped)

  const domains = yield* Domains
  yield* domains.checkDue(50).pipe(
    Effect.tapCause((cause) => Effect.logWarning("domain re-check failed", cause)),
    Effect.ignore,
    Effect.repeat(Schedule.spaced(Duration.seconds(Math.max(1, Math.min(DOMAIN_CHECK_POLL_SECONDS, config.domainRecheckSeconds / 2))))),
    Effect.forkScoped
  )

  yield* listenTo(SCHEDULE_CHANNEL, (table) => wakeups.ofTable(table)?.signal ?? Effect.void, wakeups.all)
}))
