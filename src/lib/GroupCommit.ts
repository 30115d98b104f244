/**
 * Group commit: callers submit items, one by one or several at once; a background fiber hands
 * everything queued so far to `flush` as one batch, so while one batch is in flight the next one
 * accumulates. Under load this turns N round trips into one per batch without adding a fixed delay
 * when idle. A caller's items go to one flush together, in their order, and cost it one wait: a
 * request carrying 500 events waits once, not 500 times.
 */
import { Deferred, Duration, Effect, Exit, Queue, type Scope } from "effect"
import { makeDeadlines } from "./deadlines.ts"

export interface GroupCommit<In, Out, E> {
  readonly submit: (item: In) => Effect.Effect<Out, E>
  /** The items in one flush, in order; their results in the same order. */
  readonly submitAll: (items: ReadonlyArray<In>) => Effect.Effect<ReadonlyArray<Out>, E>
}

interface Pending<In, Out, E> {
  readonly items: ReadonlyArray<In>
  readonly result: Deferred.Deferred<ReadonlyArray<Out>, E>
}

export const makeGroupCommit = <In, Out, E>(options: {
  /** Returns one result per item, in order; a failure fails the whole batch. */
  readonly flush: (items: ReadonlyArray<In>) => Effect.Effect<ReadonlyArray<Out>, E>
  /** Items handed to one flush at most (a submission is never split: one larger than this goes alone). */
  readonly maxBatch?: number | undefined
  /** Flushes running at the same time (e.g. one per pooled connection). */
  readonly concurrency?: number | undefined
  /**
   * A submission waits this long at most, queued and flushing (a quarter of a second more, at worst),
   * then fails with `onTimeout()`; its items may still be flushed. One timer for every submission,
   * where a timeout per submission would cost each a timer and a race of two fibers.
   */
  readonly maxWait?: { readonly duration: Duration.Input; readonly onTimeout: () => E } | undefined
}): Effect.Effect<GroupCommit<In, Out, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<Pending<In, Out, E>>()
    const maxBatch = options.maxBatch ?? 1000
    const maxWait = options.maxWait
    const waiting = makeDeadlines<Pending<In, Out, E>>(
      maxWait && Duration.toMillis(Duration.fromInputUnsafe(maxWait.duration)),
      (pending) => Deferred.doneUnsafe(pending.result, Exit.fail(maxWait!.onTimeout()))
    )
    yield* Effect.addFinalizer(() => Effect.sync(waiting.stop))

    const runFlush = (batch: ReadonlyArray<Pending<In, Out, E>>) =>
      options.flush(batch.length === 1 ? batch[0]!.items : batch.flatMap((pending) => pending.items)).pipe(
        Effect.matchCauseEffect({
          onSuccess: (results) =>
            Effect.sync(() => {
              let offset = 0
              for (const pending of batch) {
                const end = offset + pending.items.length
                waiting.delete(pending)
                Deferred.doneUnsafe(pending.result, Exit.succeed(results.slice(offset, end)))
                offset = end
              }
            }),
          onFailure: (cause) =>
            Effect.forEach(batch, (pending) => {
              waiting.delete(pending)
              return Deferred.failCause(pending.result, cause)
            }, { discard: true })
        })
      )

    /** What was queued, in flushes of at most `maxBatch` items, one after the other. */
    const runBatch = (batch: ReadonlyArray<Pending<In, Out, E>>) => {
      const flushes: Array<Array<Pending<In, Out, E>>> = []
      let items = 0
      for (const pending of batch) {
        if (flushes.length === 0 || (items > 0 && items + pending.items.length > maxBatch)) {
          flushes.push([])
          items = 0
        }
        flushes.at(-1)!.push(pending)
        items += pending.items.length
      }
      return Effect.forEach(flushes, runFlush, { discard: true })
    }

    const worker = Queue.takeBetween(queue, 1, maxBatch).pipe(
      Effect.flatMap(runBatch),
      Effect.forever
    )
    for (let i = 0; i < (options.concurrency ?? 1); i++) yield* Effect.forkScoped(worker)

    const submitAll = (items: ReadonlyArray<In>): Effect.Effect<ReadonlyArray<Out>, E> =>
      items.length === 0
        ? Effect.succeed([])
        : Effect.gen(function*() {
          const result = yield* Deferred.make<ReadonlyArray<Out>, E>()
          const pending = { items, result }
          waiting.add(pending)
          yield* Queue.offer(queue, pending)
          return yield* Deferred.await(result)
        })

    return {
      submit: (item: In) => Effect.map(submitAll([item]), (results) => results[0]!),
      submitAll
    }
  })
