/**
 * The sending half of the delivery engine: one pump per destination, in memory, in this worker.
 *
 * A pump claims its destination's due deliveries (the store hands out each contact's earliest open one
 * only, so a contact's order holds), keeps them in a queue and starts them while fewer than
 * DESTINATION_CONCURRENCY attempts are in flight. A slot is free again when the endpoint answered; the
 * outcomes that came meanwhile are recorded together (settleMany), outside the slots.
 *
 * The queue is claimed ahead, so a freed slot starts the next delivery at once, with no claim round trip
 * in between, and so one claim at a time keeps up with a fast endpoint: how far ahead follows the
 * endpoint's recent attempt time (queued deliveries must all be started well within their lease), from
 * one slot's worth for a slow endpoint (what each of them waits is then bounded as before) up to
 * MAX_AHEAD for a fast one. A delivery whose lease would run out during its attempt is not started: it
 * is claimed again when its lease has ended (the due loop wakes the pump then).
 *
 * Deliveries recorded by this worker can be handed to the pump already claimed (`offer`), so the first
 * attempt of a fresh delivery waits for no claim at all.
 */
import { Effect } from "effect"
import type { AttemptOutcome, ClaimedDelivery } from "../store/Destinations.ts"

/** At most this many deliveries claimed and not yet started per destination. */
export const MAX_AHEAD = 1000
/** A queued delivery is started only while its lease has this much beyond the attempt's timeout left. */
const LEASE_MARGIN_MS = 2_000

export interface Settled {
  readonly delivery: ClaimedDelivery
  readonly outcome: AttemptOutcome
}

export interface PumpOptions {
  readonly concurrency: number
  readonly leaseMs: number
  readonly timeoutMs: number
  readonly claim: (destinationId: string, room: number, leaseMs: number) => Effect.Effect<ReadonlyArray<ClaimedDelivery>, unknown>
  readonly attempt: (delivery: ClaimedDelivery) => Promise<AttemptOutcome>
  /** Records a batch of one destination's outcomes (never fails: it logs and leaves them to their leases). */
  readonly settle: (destinationId: string, batch: ReadonlyArray<Settled>) => Effect.Effect<void>
  /** Runs an effect in the engine's scope. */
  readonly run: (effect: Effect.Effect<void>) => void
}

interface Pump {
  attempting: number
  settling: number
  running: boolean
  again: boolean
  recording: boolean
  /** Claimed, started as soon as a slot is free, in claim order; each with when it was claimed. */
  readonly queued: Array<{ readonly delivery: ClaimedDelivery; readonly claimedAt: number }>
  readonly outcomes: Array<Settled>
}

export interface Pumps {
  /** Pumps a destination's due deliveries now. */
  readonly wake: (destinationId: string) => void
  /** How many deliveries the destination's pump takes now, claimed by someone else (the recording) for it. */
  readonly room: (destinationId: string) => number
  /** Hands over deliveries claimed for the pump (at most `room`), started as slots are free. */
  readonly offer: (destinationId: string, claimed: ReadonlyArray<ClaimedDelivery>) => void
}

export const makePumps = (options: PumpOptions): Pumps => {
  const { concurrency, leaseMs, timeoutMs } = options
  const pumps = new Map<string, Pump>()
  /** Each endpoint's recent attempt time (an exponential moving average), which sets how far ahead to claim; kept while its pump is idle. */
  const attemptMs = new Map<string, number>()

  const stateOf = (destinationId: string): Pump => {
    let state = pumps.get(destinationId)
    if (!state) {
      state = { attempting: 0, settling: 0, running: false, again: false, recording: false, queued: [], outcomes: [] }
      pumps.set(destinationId, state)
    }
    return state
  }
  /** Attempts in flight and queued: a slot's worth ahead at least, as many as are started within a quarter of a lease at most. */
  const windowOf = (destinationId: string) =>
    concurrency +
    Math.max(
      concurrency,
      Math.min(MAX_AHEAD, Math.floor((concurrency * leaseMs) / (4 * Math.max(1, attemptMs.get(destinationId) ?? timeoutMs))))
    )
  const roomOf = (destinationId: string, state: Pump) => {
    const window = windowOf(destinationId)
    // Outcomes waiting to be recorded hold the pump back (a slow database) rather than pile up.
    return state.settling >= window ? 0 : Math.max(0, window - state.attempting - state.queued.length)
  }
  const idle = (state: Pump) =>
    !state.running && state.attempting === 0 && state.settling === 0 && !state.recording && state.queued.length === 0

  /** Starts queued deliveries while slots are free. */
  const dispatch = (state: Pump) => {
    while (state.attempting < concurrency && state.queued.length > 0) {
      const { claimedAt, delivery } = state.queued.shift()!
      // Its lease would end during the attempt: another worker could take it meanwhile. Claimed again later.
      if (Date.now() + timeoutMs + LEASE_MARGIN_MS > claimedAt + leaseMs) continue
      state.attempting++
      options.run(perform(delivery, state))
    }
  }

  /** Records the outcomes waiting, batch after batch, while there are any. */
  const recordOutcomes = (destinationId: string, state: Pump): Effect.Effect<void> =>
    Effect.gen(function*() {
      while (state.outcomes.length > 0) {
        const batch = state.outcomes.splice(0, state.outcomes.length)
        yield* options.settle(destinationId, batch).pipe(Effect.ensuring(Effect.sync(() => {
          state.settling -= batch.length
        })))
        // The settlements may have made contacts' next deliveries ready (sent now), and freed room.
        wake(destinationId)
      }
    }).pipe(Effect.ensuring(Effect.sync(() => {
      state.recording = false
      if (state.outcomes.length > 0) startRecording(destinationId, state)
    })))
  const startRecording = (destinationId: string, state: Pump) => {
    if (state.recording) return
    state.recording = true
    options.run(recordOutcomes(destinationId, state))
  }

  const perform = (delivery: ClaimedDelivery, state: Pump) => {
    const started = performance.now()
    return Effect.promise(() => options.attempt(delivery)).pipe(
      Effect.tapCause((cause) => Effect.logWarning("event destination attempt failed unexpectedly; retried after its lease", cause)),
      Effect.matchCause({
        onFailure: () => {
          state.attempting--
          dispatch(state)
          wake(delivery.destinationId)
        },
        onSuccess: (outcome) => {
          const id = delivery.destinationId
          attemptMs.set(id, 0.8 * (attemptMs.get(id) ?? timeoutMs) + 0.2 * (performance.now() - started))
          state.attempting--
          state.settling++
          state.outcomes.push({ delivery, outcome })
          dispatch(state)
          startRecording(id, state)
          // Claimed ahead: the queue is refilled when it runs low, not after every attempt.
          if (state.queued.length < concurrency) wake(id)
        }
      })
    )
  }

  const enqueue = (state: Pump, claimed: ReadonlyArray<ClaimedDelivery>) => {
    const claimedAt = Date.now()
    for (const delivery of claimed) state.queued.push({ delivery, claimedAt })
    dispatch(state)
  }

  const pump = (destinationId: string): Effect.Effect<void> =>
    Effect.gen(function*() {
      const state = pumps.get(destinationId)!
      while (state.again) {
        state.again = false
        const room = roomOf(destinationId, state)
        if (room > 0) enqueue(state, yield* options.claim(destinationId, room, leaseMs))
      }
    }).pipe(
      Effect.catchCause((cause) => Effect.logWarning("event destination claim failed; the due loop tries again", cause)),
      Effect.ensuring(Effect.sync(() => {
        const state = pumps.get(destinationId)
        if (!state) return
        state.running = false
        if (state.again) wake(destinationId)
        else if (idle(state)) pumps.delete(destinationId)
      }))
    )

  const wake = (destinationId: string) => {
    const state = stateOf(destinationId)
    state.again = true
    if (state.running || roomOf(destinationId, state) <= 0) return
    state.running = true
    options.run(pump(destinationId))
  }

  return {
    wake,
    room: (destinationId) => {
      const state = pumps.get(destinationId)
      return state ? roomOf(destinationId, state) : windowOf(destinationId)
    },
    offer: (destinationId, claimed) => {
      const state = stateOf(destinationId)
      enqueue(state, claimed)
      if (idle(state)) pumps.delete(destinationId)
    }
  }
}
