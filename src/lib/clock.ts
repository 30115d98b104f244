/**
 * The service's clock is Effect's `Clock`, provided once from AppConfig (`ClockLive`, under every role
 * in src/cli/commands.ts): code reads time with `Clock.currentTimeMillis` (or `DateTime.now`), so tests can
 * use TestClock. CLOCK_OFFSET_MS shifts its wall time (spawned-process tests use it to reach a segment
 * window's end or a timer without waiting; operators never need it); sleeping and monotonic time stay
 * the real ones.
 */
import { Clock, Effect, Layer } from "effect"
import { AppConfig } from "../config.ts"

const NANOS_PER_MILLI = BigInt(1_000_000)

/** `base` with its wall time `offsetMs` later (earlier when negative). */
export const shiftedClock = (base: Clock.Clock, offsetMs: number): Clock.Clock => {
  const offsetNanos = BigInt(offsetMs) * NANOS_PER_MILLI
  return {
    currentTimeMillisUnsafe: () => base.currentTimeMillisUnsafe() + offsetMs,
    currentTimeMillis: Effect.map(base.currentTimeMillis, (millis) => millis + offsetMs),
    currentTimeNanosUnsafe: () => base.currentTimeNanosUnsafe() + offsetNanos,
    currentTimeNanos: Effect.map(base.currentTimeNanos, (nanos) => nanos + offsetNanos),
    monotonicTimeNanosUnsafe: () => base.monotonicTimeNanosUnsafe(),
    monotonicTimeNanos: base.monotonicTimeNanos,
    sleep: (duration) => base.sleep(duration)
  }
}

/** Effect's Clock, shifted by AppConfig's clockOffsetMs (CLOCK_OFFSET_MS) when it is set. */
export const ClockLive = Layer.effect(
  Clock.Clock,
  Effect.gen(function*() {
    const { clockOffsetMs } = yield* AppConfig
    const base = yield* Clock.Clock
    return clockOffsetMs === 0 ? base : shiftedClock(base, clockOffsetMs)
  })
)
