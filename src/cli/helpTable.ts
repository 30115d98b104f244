/**
 * The CLI's help and version pages as a table, rendered when the service is built (scripts/build.ts
 * writes it to dist/help.json) from the one CLI definition (./commands.ts), through the CLI's own
 * parser and presenter (./output.ts): `npm run cli -- [command…] --help` prints a page from it
 * (scripts/cli.js) without loading the CLI, Effect or anything else. Each page is kept twice, plain and
 * colored, because the formatter colors a terminal's output (stdout a TTY and NO_COLOR unset).
 */
import { NodeServices } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { CliOutput, Command } from "effect/cli"
import { command, VERSION } from "./commands.ts"
import { cliOutputLayer } from "./output.ts"

export interface HelpPage {
  readonly plain: string
  readonly colored: string
}

/**
 * `pages`: by the words typed before `--help` or `-h` ("" for the root, "project create"); `version`:
 * the page of `--version` or `-v`. Each page is printed as it is, with a newline after it.
 */
export interface HelpTable {
  readonly pages: Record<string, HelpPage>
  readonly version: HelpPage
}

/** Every command path of `cli`: [], ["all"], …, ["project", "create"], … */
const commandPaths = (cli: Command.Command.Any, prefix: ReadonlyArray<string> = []): Array<ReadonlyArray<string>> => [
  prefix,
  ...cli.subcommands.flatMap((group) => group.commands.flatMap((sub) => commandPaths(sub, [...prefix, sub.name])))
]

/** What the CLI prints on stdout for `args`; anything on stderr means `args` is no page, and fails. */
const printed = (args: ReadonlyArray<string>, colors: boolean) =>
  Effect.gen(function*() {
    const out: Array<string> = []
    const errors: Array<string> = []
    const text = (parts: ReadonlyArray<unknown>) => parts.map(String).join(" ")
    const capture: Console.Console = Object.assign(Object.create(globalThis.console) as Console.Console, {
      log: (...parts: ReadonlyArray<unknown>) => void out.push(text(parts)),
      error: (...parts: ReadonlyArray<unknown>) => void errors.push(text(parts))
    })
    yield* Command.runWith(command, { version: VERSION })(args).pipe(
      Effect.provide(cliOutputLayer(CliOutput.defaultFormatter({ colors }))),
      Effect.provideService(Console.Console, capture),
      Effect.provide(NodeServices.layer)
    )
    if (errors.length > 0 || out.length !== 1) {
      return yield* Effect.die(new Error(`\`${args.join(" ")}\` printed ${out.length} lines and the errors ${JSON.stringify(errors)}`))
    }
    return out[0]!
  })

const page = (args: ReadonlyArray<string>) => Effect.all({ plain: printed(args, false), colored: printed(args, true) })

export const helpTable: Effect.Effect<HelpTable> = Effect.gen(function*() {
  const pages: Record<string, HelpPage> = {}
  for (const path of commandPaths(command)) pages[path.join(" ")] = yield* page([...path, "--help"])
  return { pages, version: yield* page(["--version"]) }
}).pipe(Effect.orDie)

/** For scripts/build.ts. */
export const renderHelpTable = (): Promise<HelpTable> => Effect.runPromise(helpTable)
