/**
 * The service's one Clock (src/lib/clock.ts): Effect's Clock provided from AppConfig, its wall time
 * shifted by CLOCK_OFFSET_MS; sleeping and monotonic time stay real. Code that reads time through it
 * runs under TestClock in tests (see test/store/repositories.test.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, ConfigProvider, Duration, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { AppConfig } from "../../src/config.ts"
import { ClockLive, shiftedClock } from "../../src/lib/clock.ts"

const withEnv = (env: Record<string, string>) =>
  ClockLive.pipe(Layer.provide(AppConfig.layer), Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env))))

describe("ClockLive", () => {
  it.live("shifts wall time by CLOCK_OFFSET_MS, in milliseconds and nanoseconds", () =>
    Effect.gen(function*() {
      const before = Date.now()
      const [millis, nanos] = yield* Effect.all([Clock.currentTimeMillis, Clock.currentTimeNanos])
      const after = Date.now()
      expect(millis).toBeGreaterThanOrEqual(before + 3_600_000)
      expect(millis).toBeLessThanOrEqual(after + 3_600_000)
      expect(Number(nanos / 1_000_000n)).toBeGreaterThanOrEqual(before + 3_600_000)
      expect(Number(nanos / 1_000_000n)).toBeLessThanOrEqual(after + 3_600_000)
    }).pipe(Effect.provide(withEnv({ CLOCK_OFFSET_MS: "3600000" }))))

  it.live("a negative offset moves it back; unset leaves Effect's clock as it is", () =>
    Effect.gen(function*() {
      const back = yield* Clock.currentTimeMillis.pipe(Effect.provide(withEnv({ CLOCK_OFFSET_MS: "-60000" })))
      expect(Math.abs(back - (Date.now() - 60_000))).toBeLessThan(1_000)
      const base = yield* Clock.Clock
      const unshifted = yield* Clock.Clock.pipe(Effect.provide(withEnv({})))
      expect(unshifted).toBe(base)
    }))

  it.live("sleeps in real time, however far the wall time is shifted", () =>
    Effect.gen(function*() {
      const started = performance.now()
      yield* Effect.sleep(Duration.millis(50))
      const slept = performance.now() - started
      expect(slept).toBeGreaterThanOrEqual(45)
      expect(slept).toBeLessThan(1_000)
    }).pipe(Effect.provide(withEnv({ CLOCK_OFFSET_MS: String(365 * 86_400_000) }))))

  it.effect("shiftedClock keeps TestClock's time, offset", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2030, 0, 1))
      const shifted = shiftedClock(yield* Clock.Clock, 90_000)
      expect(new Date(yield* shifted.currentTimeMillis).toISOString()).toBe("2030-01-01T00:01:30.000Z")
      expect(shifted.currentTimeMillisUnsafe()).toBe(Date.UTC(2030, 0, 1) + 90_000)
    }))
})
