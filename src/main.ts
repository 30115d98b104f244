/** Entry point: the CLI (src/cli/commands.ts) on the Node runtime. */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Cause, Effect, Exit, Runtime } from "effect"
import { cli } from "./cli/commands.ts"
import { CliOutputLive } from "./cli/output.ts"

NodeRuntime.runMain(cli.pipe(Effect.provide([CliOutputLive, NodeServices.layer])), {
  // Stopped by SIGTERM/SIGINT after a graceful shutdown: a normal end, exit 0.
  teardown: (exit, onExit) =>
    Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)
})
