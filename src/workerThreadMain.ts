/**
 * The entry point of `all`'s worker thread (process/workerThread.ts), beside main.ts: the worker role alone, without the CLI
 * that src/main.ts loads (less for the thread to hold). `all` checked the same environment already.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import { runWorker } from "./cli/roles.ts"
import { LoggingLive } from "./cli/logging.ts"
import { AppConfig } from "./config.ts"
import { ClockLive } from "./lib/clock.ts"

NodeRuntime.runMain(
  Effect.gen(function*() {
    const config = yield* AppConfig.load.pipe(Effect.orDie)
    return yield* runWorker.pipe(
      Effect.provide(ClockLive),
      Effect.provideService(AppConfig, config),
      Effect.provide(LoggingLive(config.logLevel))
    )
  })
)
