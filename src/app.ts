/**
 * The process roles as layers: `api` (src/apiRole.ts), `worker` (src/workerRole.ts), and `all` (both),
 * over the shared infrastructure (src/core.ts). A process running one role imports that role's module
 * only (src/cli/roles.ts); this module gathers them for tests and benchmarks.
 */
import { Layer } from "effect"
import { ApiRoleLive } from "./apiRole.ts"
import { AppConfig } from "./config.ts"
import { ClockLive } from "./lib/clock.ts"
import { CoreLive, InfraLive } from "./core.ts"
import { StandaloneWorkerLive, StreamWorkerLive, WorkerRoleLive } from "./workerRole.ts"

export { ApiRoleLive, CoreLive, InfraLive, StandaloneWorkerLive, StreamWorkerLive, WorkerRoleLive }

export const AllRolesLive = Layer.mergeAll(ApiRoleLive, WorkerRoleLive)

export const withConfig = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
  layer.pipe(Layer.provideMerge(ClockLive), Layer.provideMerge(AppConfig.layer))
