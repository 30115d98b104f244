/**
 * The long-running roles. `api` and `worker` run on their own, or as processes of `all` (then they
 * report to it instead of announcing themselves); `all` with one api process runs both in this one
 * process. SIGTERM or SIGINT stops a role gracefully: the api stops accepting connections and finishes
 * the requests in flight (10 s at most), the worker hands its partitions over; the process then exits 0.
 */
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { AppConfig } from "../config.ts"
import { endIfThread, exitWithSupervisor, isSupervised, reportReady, stopRequested } from "../process/child.ts"
import { collectStartupGarbage } from "../process/startupGarbage.ts"

/** Builds the role, says it is up (to `all` when `supervised`), and runs until interrupted. */
const serve = <A, E>(
  role: string,
  layer: Layer.Layer<A, E, AppConfig>,
  announce: Effect.Effect<void, never, A>,
  supervised = isSupervised()
) =>
  Effect.gen(function*() {
    if (supervised) yield* exitWithSupervisor
    yield* Effect.scoped(Effect.gen(function*() {
      const context = yield* Layer.build(layer)
      yield* collectStartupGarbage
      if (supervised) {
        yield* reportReady
        yield* Effect.logInfo(`${role} process ready`)
      } else {
        yield* Effect.provideContext(announce, context)
      }
      // A process runs until SIGTERM interrupts it; `all`'s worker thread until `all` asks it to stop.
      yield* stopRequested.pipe(Effect.onInterrupt(() => Effect.logInfo(`${role} stopping`)))
      yield* Effect.logInfo(`${role} stopping`)
    }))
    yield* Effect.logInfo(`${role} stopped`)
    yield* endIfThread
  }).pipe(Effect.onInterrupt(() => Effect.logInfo(`${role} stopped`)))

// A role's layers are imported when it runs, each role its own: the api never loads the worker's
// actors, the worker never loads the HTTP handlers, and the other commands, `all` itself, neither.
const listening = HttpServer.addressFormattedWith((address) => Effect.logInfo(`Listening on ${address}`))

export const runApi = Effect.flatMap(
  Effect.promise(() => import("../apiRole.ts")),
  ({ ApiRoleLive }) => serve("api", ApiRoleLive, listening)
)

/** Alone, the worker serves /metrics on METRICS_PORT; under `all` its metrics reach the api's /metrics. */
export const runWorker = Effect.flatMap(
  Effect.promise(() => import("../workerRole.ts")),
  ({ StandaloneWorkerLive, WorkerRoleLive }) =>
    isSupervised() ? serve("worker", WorkerRoleLive, Effect.void) : serve("worker", StandaloneWorkerLive, Effect.void)
)

/**
 * `all` as one process (API_PROCESSES=1): the api and the worker on one event loop, sharing Postgres,
 * NATS and the repositories; `Listening on` once both are up, /metrics (on PORT or METRICS_PORT) is the
 * process's own. Never a process of a supervisor, whatever started it.
 */
const runAllOnOneLoop = Effect.flatMap(
  Effect.promise(() => Promise.all([import("../apiRole.ts"), import("../workerRole.ts")])),
  ([{ ApiRoleLive }, { WorkerRoleLive }]) => serve("all", Layer.mergeAll(ApiRoleLive, WorkerRoleLive), listening, false)
)

/**
 * `all` as one process with its worker on a thread of its own (WORKER_THREAD): two event loops, so under
 * load the api and the worker each keep a core, where one loop would cap both at one. The api is built
 * first (it migrates the database), then the thread is started; `Listening on` once both are up.
 */
const runAllWithThread = Effect.flatMap(
  Effect.promise(() => Promise.all([import("../apiRole.ts"), import("../process/workerThread.ts")])),
  ([{ ApiRoleLive }, { WorkerThreadLive }]) => serve("all", WorkerThreadLive.pipe(Layer.provideMerge(ApiRoleLive)), listening, false)
)

export const runAllInOne = Effect.gen(function*() {
  const { workerThread } = yield* AppConfig
  return yield* (workerThread ? runAllWithThread : runAllOnOneLoop)
})
