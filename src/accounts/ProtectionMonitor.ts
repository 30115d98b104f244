/**
 * Automatic protection, run by every worker: every PROTECTION_CHECK_SECONDS, projects whose bounce or
 * complaint rate over the last 7 days passes MAX_BOUNCE_RATE / MAX_COMPLAINT_RATE are disabled with a
 * reason (ProjectHealth.enforce, idempotent across workers), and every api process is told to drop
 * its cached state of them, so their `sk_` calls answer 403 PROJECT_DISABLED at once.
 */
import { Effect, Layer, Schedule } from "effect"
import { AppConfig } from "../config.ts"
import { ProjectCacheInvalidation } from "../store/ProjectCacheInvalidation.ts"
import { ProjectHealth } from "../store/ProjectHealth.ts"

export const ProtectionMonitorLive = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  const health = yield* ProjectHealth
  const invalidation = yield* ProjectCacheInvalidation
  const round = Effect.gen(function*() {
    const disabled = yield* health.enforce({ maxBounceRate: config.maxBounceRate, maxComplaintRate: config.maxComplaintRate })
    for (const projectId of disabled) {
      yield* Effect.logWarning("project disabled by automatic protection", { projectId })
      yield* invalidation.announce(projectId)
    }
  }).pipe(Effect.catchCause((cause) => Effect.logWarning("protection check failed", cause)))
  yield* Effect.forkScoped(Effect.repeat(round, Schedule.spaced(`${config.protectionCheckSeconds} seconds`)))
})).pipe(Layer.provide(ProjectHealth.layer), Layer.provide(ProjectCacheInvalidation.layer))
