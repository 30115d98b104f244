/**
 * "This project's data changed": what a worker says after it commits a project's batch or a round of its
 * mail, on `<prefix>.live.<projectId>` (core NATS, kept nowhere), so the dashboard's live pages refetch
 * (http/live/LiveHub.ts). Stream OUT carries emitted events, but not every change a page shows (a
 * segment's members move without an event unless it tracks membership; a campaign's queued count).
 *
 * Throttled per process: a project changing all the time is announced at most every THROTTLE, the
 * first change at once. Nothing is published when nothing changed; a lost message costs a late refresh.
 */
import { Clock, Context, Duration, Effect, Layer } from "effect"
import { makeWakeup } from "../lib/dueLoop.ts"
import { Nats } from "./Nats.ts"

const THROTTLE = Duration.millis(250)
/** Without a change, how long the loop sleeps before looking anyway (it has nothing to do then). */
const IDLE_WAIT_MS = 60_000

export class LiveSignals extends Context.Service<LiveSignals, {
  /** The project's data changed (cheap; coalesces). */
  readonly changed: (projectId: string) => Effect.Effect<void>
}>()("app/stream/LiveSignals") {
  static readonly layer = Layer.effect(
    LiveSignals,
    Effect.gen(function*() {
      const nats = yield* Nats
      const wakeup = yield* makeWakeup
      let dirty = new Set<string>()

      const announce = Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.sync(() => {
          const projects = dirty
          dirty = new Set()
          const payload = JSON.stringify({ at: new Date(now).toISOString() })
          for (const projectId of projects) {
            try {
              nats.connection.publish(nats.names.liveSubject(projectId), payload)
            } catch {
              // Disconnected: the api processes tell their clients to resync when they reconnect.
            }
          }
          return projects.size
        }))

      yield* Effect.forever(Effect.gen(function*() {
        yield* wakeup.wait(IDLE_WAIT_MS)
        if ((yield* announce) > 0) yield* Effect.sleep(THROTTLE)
      })).pipe(Effect.forkScoped)

      const changed = (projectId: string) =>
        Effect.suspend(() => {
          dirty.add(projectId)
          return wakeup.signal
        })

      return LiveSignals.of({ changed })
    })
  )
}
