/**
 * How the CLI talks: help asked for goes to stdout; mistakes go to stderr as short lines (no help page
 * around them), so a script that reads stdout (`project create`) never reads help or an error.
 */
import { Console, Effect, Layer } from "effect"
import { CliConfig, CliOutput, GlobalFlag } from "effect/cli"

const usageHint = (commandPath: ReadonlyArray<string>) => `Run "npm run cli -- ${[...commandPath.slice(1), "--help"].join(" ")}" for usage.`

const presenter: CliOutput.Presenter = {
  present: (event) =>
    Effect.gen(function*() {
      const formatter = yield* CliOutput.Formatter
      switch (event._tag) {
        case "Help":
          return yield* Console.log(formatter.formatHelpDoc(event.helpDoc))
        case "Version":
          return yield* Console.log(formatter.formatVersion(event.name, event.version))
        case "InvalidInvocation":
          return yield* Console.error([...event.errors.map((error) => error.message), usageHint(event.commandPath)].join("\n"))
      }
    })
}

/** `formatter`: the default one (colors when stdout is a terminal), or another (the build's help table, ./helpTable.ts). */
export const cliOutputLayer = (formatter: CliOutput.Formatter = CliOutput.defaultFormatter()) =>
  Layer.mergeAll(
    CliOutput.layerPresenter(presenter),
    // A failed command (a bad variable, an unknown project) prints its message alone.
    CliOutput.layer({ ...formatter, formatError: (error) => error.message }),
    // --help and --version; LOG_LEVEL, not a flag, sets the log level.
    CliConfig.layer({ builtIns: [GlobalFlag.Help, GlobalFlag.Version] })
  )

export const CliOutputLive = cliOutputLayer()
