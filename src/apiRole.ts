/** The `api` role as a layer: imported by the api process alone (the worker never loads the HTTP handlers). */
import { Layer } from "effect"
import { MetricsServerLive } from "./observability/MetricsServer.ts"
import { HttpLive } from "./http/server.ts"
import { CoreLive } from "./core.ts"

/** The HTTP api, and /metrics on METRICS_PORT instead of PORT when that is set. */
export const ApiRoleLive = Layer.mergeAll(HttpLive, MetricsServerLive).pipe(Layer.provideMerge(CoreLive))
