/**
 * Cache invalidation across processes: a write that makes another process's cache wrong (a contact
 * renamed or deleted, a project's keys rotated) announces it on `<prefix>.invalidate.<topic>`, a plain
 * NATS subject every process subscribes to. Core NATS keeps nothing for a process that was
 * disconnected, so a subscriber is told of every reconnect (`onGap`) and drops its whole cache then;
 * the caches' own expiry bounds what a lost message can cost.
 */
import { Context, Effect, Layer, type Scope } from "effect"
import { Nats } from "./Nats.ts"

export interface InvalidationHandlers<A> {
  readonly onMessage: (payload: A) => void
  /** Messages may have been missed (the connection dropped): forget everything. */
  readonly onGap: () => void
}

export class Invalidations extends Context.Service<Invalidations, {
  /** Tells every process (this one included) that what `payload` names is stale. */
  readonly publish: (topic: string, payload: unknown) => Effect.Effect<void>
  readonly subscribe: <A>(topic: string, handlers: InvalidationHandlers<A>) => Effect.Effect<void, never, Scope.Scope>
}>()("app/stream/Invalidations") {
  static readonly layer = Layer.effect(
    Invalidations,
    Effect.gen(function*() {
      const nats = yield* Nats
      const subject = (topic: string) => `${nats.prefix}.invalidate.${topic}`
      const gapListeners = new Set<() => void>()

      yield* Effect.forkScoped(Effect.promise(async () => {
        for await (const status of nats.connection.status()) {
          if (status.type === "reconnect") { for (const listener of gapListeners) listener() }
        }
      }))

      const publish = (topic: string, payload: unknown) =>
        Effect.sync(() => {
          try {
            nats.connection.publish(subject(topic), JSON.stringify(payload))
          } catch {
            // Disconnected: every subscriber drops its cache when it reconnects anyway.
          }
        })

      const subscribe = <A>(topic: string, handlers: InvalidationHandlers<A>) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            gapListeners.add(handlers.onGap)
            return nats.connection.subscribe(subject(topic), {
              callback: (error, message) => {
                if (error) return handlers.onGap()
                try {
                  handlers.onMessage(message.json<A>())
                } catch {
                  handlers.onGap()
                }
              }
            })
          }),
          (subscription) =>
            Effect.sync(() => {
              gapListeners.delete(handlers.onGap)
              subscription.unsubscribe()
            })
        ).pipe(Effect.asVoid)

      return Invalidations.of({ publish, subscribe })
    })
  )
}
