/**
 * `npm run cli -- <command>`: the compiled CLI (dist/main.js), built first if its inputs changed
 * (./fresh.js: modification times first, scripts/build.ts only when one is newer). `[command…]
 * --help|-h` and `--version|-v` print their page from dist/help.json, rendered at build time from the
 * CLI's one definition by the CLI itself (src/cli/helpTable.ts), without loading it. Anything else runs
 * dist/main.js in this process, as `node dist/main.js <command>` would. Plain JavaScript, so that it
 * starts as fast as Node does (a .ts file costs each run some 60 ms of type stripping).
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { ensureBuilt, ROOT } from "./fresh.js"

const MAIN = join(ROOT, "dist/main.js")

ensureBuilt("dist", ["main.js", "help.json"], "scripts/build.ts", ["--server", "--quiet"])

const args = process.argv.slice(2)
const table = JSON.parse(readFileSync(join(ROOT, "dist/help.json"), "utf8"))
const asked = args.at(-1)
const words = args.slice(0, -1).join(" ")
const page = asked === "--help" || asked === "-h"
  ? (Object.hasOwn(table.pages, words) ? table.pages[words] : undefined)
  : args.length === 1 && (asked === "--version" || asked === "-v")
  ? table.version
  : undefined

if (page !== undefined) {
  // As the CLI's formatter decides: colors on a terminal, unless NO_COLOR is set.
  const colors = process.stdout.isTTY === true && !process.env.NO_COLOR
  process.stdout.write(`${colors ? page.colored : page.plain}\n`)
} else {
  // The command runs as if started as `node dist/main.js …` (what `all` forks, for one, is argv[1]).
  process.argv[1] = MAIN
  await import(pathToFileURL(MAIN).href)
}
