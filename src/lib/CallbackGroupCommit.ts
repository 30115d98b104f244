/**
 * Group commit for plain code (GroupCommit.ts is the Effect one): callers submit items with a callback;
 * what was submitted while the flushes were busy, or within the current turn of the event loop, goes to
 * the next flush together. Why a second one: on /v1/track's hot path a fiber, a Deferred and a queue
 * offer per request cost more CPU than the publish they wait for. A caller's items go to one flush
 * together, in their order; `done` is called once, with the flush's error or undefined.
 */
import { makeDeadlines } from "./deadlines.ts"

export interface CallbackGroupCommit<In, E> {
  readonly submit: (items: ReadonlyArray<In>, done: (error: E | undefined) => void) => void
  /** Stops the deadline timer; submissions still waiting are left to their flushes. */
  readonly close: () => void
}

interface Pending<In, E> {
  readonly items: ReadonlyArray<In>
  done: ((error: E | undefined) => void) | undefined
}

export const makeCallbackGroupCommit = <In, E>(options: {
  /** Resolves once every item is stored; a rejection fails the whole flush with `toError(reason)`. */
  readonly flush: (items: ReadonlyArray<In>) => Promise<unknown>
  readonly toError: (reason: unknown) => E
  /** Items handed to one flush at most (a submission is never split: one larger than this goes alone). */
  readonly maxBatch: number
  /** Flushes running at the same time at most. */
  readonly concurrency: number
  /**
   * Items that must be waiting before a flush starts beside one already running (default 1): below it,
   * they wait for the running flush to end and go out together, so a steady stream of small submissions
   * makes few big flushes rather than many small ones; above it, a backlog gets the other flushes.
   */
  readonly busyFlushAt?: number | undefined
  /** A submission waits this long at most (a quarter of a second more, at worst), then gets `onTimeout()`. */
  readonly maxWait?: { readonly millis: number; readonly onTimeout: () => E } | undefined
}): CallbackGroupCommit<In, E> => {
  const queue: Array<Pending<In, E>> = []
  let queuedItems = 0
  let running = 0
  let scheduled = false
  const busyFlushAt = options.busyFlushAt ?? 1
  /** Whether another flush may start now. */
  const mayStart = () => running < options.concurrency && queuedItems > 0 && (running === 0 || queuedItems >= busyFlushAt)

  const settle = (pending: Pending<In, E>, error: E | undefined) => {
    const done = pending.done
    if (done === undefined) return
    pending.done = undefined
    waiting.delete(pending)
    done(error)
  }
  const waiting = makeDeadlines<Pending<In, E>>(options.maxWait?.millis, (pending) => settle(pending, options.maxWait!.onTimeout()))

  const startFlushes = () => {
    scheduled = false
    while (mayStart()) {
      let count = 0
      let taken = 0
      while (taken < queue.length && (taken === 0 || count + queue[taken]!.items.length <= options.maxBatch)) {
        count += queue[taken]!.items.length
        taken++
      }
      const batch = queue.splice(0, taken)
      queuedItems -= count
      const items = batch.length === 1 ? batch[0]!.items : batch.flatMap((pending) => pending.items)
      running++
      const finish = (error: E | undefined) => {
        running--
        for (const pending of batch) settle(pending, error)
        if (mayStart()) startFlushes()
      }
      options.flush(items).then(() => finish(undefined), (reason) => finish(options.toError(reason)))
    }
  }

  return {
    submit: (items, done) => {
      if (items.length === 0) return done(undefined)
      const pending: Pending<In, E> = { items, done }
      waiting.add(pending)
      queue.push(pending)
      queuedItems += items.length
      // The rest of this turn's requests join it: the flush starts once the event loop has read them.
      if (!scheduled && mayStart()) {
        scheduled = true
        setImmediate(startFlushes)
      }
    },
    close: waiting.stop
  }
}
