/**
 * Scheduled work without polling: a loop runs its round when work is due, sleeping in between until
 * the next due time it can see, or until it is woken (a Postgres notification, a partition taken
 * over), or for `atMost` as a safety net for a missed wake-up. An idle service then costs one cheap
 * query per `atMost` per loop instead of one per poll. While work is due at once, rounds are `gap`
 * apart, as the poll every `gap` they replace was; a full round goes again at once.
 */
import { Duration, Effect, Queue } from "effect"

/** A coalescing wake-up signal: any number of signals while the loop runs wake it once. */
export interface Wakeup {
  readonly signal: Effect.Effect<void>
  /** Waits for a signal (one that came meanwhile counts) or for `millis`, whichever is first. */
  readonly wait: (millis: number) => Effect.Effect<void>
}

export const makeWakeup: Effect.Effect<Wakeup> = Effect.map(Queue.sliding<void>(1), (queue) => ({
  signal: Queue.offer(queue, undefined).pipe(Effect.asVoid),
  wait: (millis) => Effect.raceFirst(Queue.take(queue), Effect.sleep(Duration.millis(millis))).pipe(Effect.asVoid)
}))

export interface DueLoop {
  readonly name: string
  /** One round of work; answers whether it was full (more is due at once). */
  readonly round: Effect.Effect<boolean, unknown>
  /** Milliseconds until the next item is due (≤ 0: due now); undefined when nothing is scheduled. */
  readonly nextDueIn: Effect.Effect<number | undefined, unknown>
  readonly wakeup: Wakeup
  /** Least time between the starts of two rounds (the former poll interval: the worst-case lateness under load). */
  readonly gap: Duration.Input
  /** Longest sleep without a round (a missed notification is late by this much at most). */
  readonly atMost: Duration.Input
}

export const runWhenDue = (loop: DueLoop): Effect.Effect<never> => {
  const gap = Duration.toMillis(Duration.fromInputUnsafe(loop.gap))
  const atMost = Duration.toMillis(Duration.fromInputUnsafe(loop.atMost))
  const orRetryAfterGap = <A>(effect: Effect.Effect<A, unknown>, what: string) =>
    effect.pipe(
      Effect.map((value) => ({ ok: true as const, value })),
      Effect.catchCause((cause) => Effect.as(Effect.logWarning(`${loop.name}: ${what} failed; retrying`, cause), { ok: false as const }))
    )
  return Effect.gen(function*() {
    while (true) {
      const started = Date.now()
      const round = yield* orRetryAfterGap(loop.round, "round")
      if (round.ok && round.value) continue
      const next = round.ok ? yield* orRetryAfterGap(loop.nextDueIn, "next due time") : { ok: false as const }
      const wait = !next.ok ? gap : next.value === undefined ? atMost : Math.min(Math.max(0, next.value), atMost)
      if (wait > 0) yield* loop.wakeup.wait(wait)
      const since = Date.now() - started
      if (since < gap) yield* Effect.sleep(Duration.millis(gap - since))
    }
  })
}
