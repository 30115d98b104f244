/**
 * Group commit: callers submit items one by one; a single background fiber hands everything queued so
 * far to `flush` as one batch, so while one batch is in flight the next one accumulates. Under load
 * this turns N round trips into one per batch without adding a fixed delay when idle.
 */
import { Deferred, Effect, Queue, type Scope } from "effect"

export interface GroupCommit<In, Out, E> {
  readonly submit: (item: In) => Effect.Effect<Out, E>
}

interface Pending<In, Out, E> {
  readonly item: In
  readonly result: Deferred.Deferred<Out, E>
}

export const makeGroupCommit = <In, Out, E>(options: {
  /** Returns one result per item, in order; a failure fails the whole batch. */
  readonly flush: (items: ReadonlyArray<In>) => Effect.Effect<ReadonlyArray<Out>, E>
  readonly maxBatch?: number | undefined
  /** Flushes running at the same time (e.g. one per pooled connection). */
  readonly concurrency?: number | undefined
}): Effect.Effect<GroupCommit<In, Out, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<Pending<In, Out, E>>()
    const maxBatch = options.maxBatch ?? 1000

    const runBatch = (batch: ReadonlyArray<Pending<In, Out, E>>) =>
      options.flush(batch.map((pending) => pending.item)).pipe(
        Effect.matchCauseEffect({
          onSuccess: (results) =>
            Effect.forEach(batch, (pending, index) => Deferred.succeed(pending.result, results[index]!), { discard: true }),
          onFailure: (cause) =>
            Effect.forEach(batch, (pending) => Deferred.failCause(pending.result, cause), { discard: true })
        })
      )

    const worker = Queue.takeBetween(queue, 1, maxBatch).pipe(
      Effect.flatMap(runBatch),
      Effect.forever
    )
    for (let i = 0; i < (options.concurrency ?? 1); i++) yield* Effect.forkScoped(worker)

    return {
      submit: (item: In) =>
        Effect.gen(function*() {
          const result = yield* Deferred.make<Out, E>()
          yield* Queue.offer(queue, { item, result })
          return yield* Deferred.await(result)
        })
    }
  })
