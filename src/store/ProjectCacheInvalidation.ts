/**
 * Keeps every process's cached project keys and state honest: after a key rotation, a project being
 * disabled, enabled or deleted, `announce` tells every process (over the shared Invalidations subject)
 * to forget what it cached of the project, so old keys answer 401 everywhere within moments instead of
 * after the cache's own 5 s expiry. A process that missed messages (reconnect) forgets everything.
 */
import { Context, Effect, Layer } from "effect"
import { Invalidations } from "../stream/Invalidations.ts"
import { Projects } from "./Projects.ts"

const TOPIC = "project"

interface Changed {
  readonly projectId: string
}

export class ProjectCacheInvalidation extends Context.Service<ProjectCacheInvalidation, {
  /** Forgets the project here at once, and on every other process as the message arrives. */
  readonly announce: (projectId: string) => Effect.Effect<void>
}>()("app/store/ProjectCacheInvalidation") {
  static readonly layer = Layer.effect(
    ProjectCacheInvalidation,
    Effect.gen(function*() {
      const invalidations = yield* Invalidations
      const projects = yield* Projects
      yield* invalidations.subscribe<Changed>(TOPIC, {
        onMessage: ({ projectId }) => {
          if (typeof projectId === "string") Effect.runSync(projects.forget(projectId))
        },
        onGap: () => Effect.runSync(projects.forgetAll)
      })
      return ProjectCacheInvalidation.of({
        announce: (projectId) => Effect.andThen(projects.forget(projectId), invalidations.publish(TOPIC, { projectId } satisfies Changed))
      })
    })
  )
}
