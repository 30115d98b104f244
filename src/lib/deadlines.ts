/**
 * Submissions that wait under a deadline: while any does, a timer sweeps every SWEEP_EVERY_MS and hands
 * the overdue ones to `expire`. One timer for every submission, where a timer per submission would cost
 * each one its own. Shared by the group commits (GroupCommit.ts, CallbackGroupCommit.ts).
 */
const SWEEP_EVERY_MS = 250

export interface Deadlines<P> {
  readonly add: (pending: P) => void
  readonly delete: (pending: P) => void
  /** Stops the timer (the owner is closing). */
  readonly stop: () => void
}

/** `waitMs` undefined: nothing is tracked. */
export const makeDeadlines = <P>(waitMs: number | undefined, expire: (pending: P) => void): Deadlines<P> => {
  /** Each waiting submission with its deadline (epoch ms). */
  const waiting = new Map<P, number>()
  let timer: ReturnType<typeof setTimeout> | undefined
  const sweep = () => {
    timer = undefined
    const now = Date.now()
    for (const [pending, deadline] of waiting) {
      if (deadline > now) continue
      waiting.delete(pending)
      expire(pending)
    }
    if (waiting.size > 0) timer = setTimeout(sweep, SWEEP_EVERY_MS)
  }
  return {
    add: (pending) => {
      if (waitMs === undefined) return
      waiting.set(pending, Date.now() + waitMs)
      if (timer === undefined) timer = setTimeout(sweep, SWEEP_EVERY_MS)
    },
    delete: (pending) => void waiting.delete(pending),
    stop: () => clearTimeout(timer)
  }
}
