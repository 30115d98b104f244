/**
 * `npm run cli -- <command>`: the compiled CLI (dist/main.js), built first if its inputs changed.
 * Plain JavaScript, so that it starts as fast as Node does: a .ts file costs each run some 60 ms of
 * type stripping before its first line, and this runs before every command.
 *
 * 1. Up to date? dist/.build-hash was written (or touched) by scripts/build.ts after its last look at
 *    the inputs it lists in dist/.build-inputs; if no input file or folder was modified since (adding,
 *    removing or renaming a file modifies its folder), the build is current. Otherwise scripts/build.ts
 *    runs, which compares the inputs' contents and builds only if they changed. A file put back with an
 *    older modification time goes unnoticed here: `npm run build` builds then.
 * 2. `[command…] --help|-h` and `--version|-v` print their page from dist/help.json, rendered at build
 *    time from the CLI's one definition by the CLI itself (src/cli/helpTable.ts), without loading it.
 * 3. Anything else runs dist/main.js in this process, as `node dist/main.js <command>` would.
 */
import { spawnSync } from "node:child_process"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const DIST = join(ROOT, "dist")
const MAIN = join(DIST, "main.js")
const HASH_FILE = join(DIST, ".build-hash")
const INPUTS_FILE = join(DIST, ".build-inputs")
const HELP_FILE = join(DIST, "help.json")

/** The latest modification (ms) of `path` and, for a folder, of everything under it. */
const modifiedLast = (path) => {
  if (!existsSync(path)) return Infinity
  let latest = statSync(path).mtimeMs
  if (statSync(path).isDirectory()) {
    for (const entry of readdirSync(path, { recursive: true, withFileTypes: true })) {
      latest = Math.max(latest, statSync(join(entry.parentPath, entry.name)).mtimeMs)
    }
  }
  return latest
}

const upToDate = () => {
  if (![MAIN, HASH_FILE, INPUTS_FILE, HELP_FILE].every((file) => existsSync(file))) return false
  const builtAt = statSync(HASH_FILE).mtimeMs
  const inputs = readFileSync(INPUTS_FILE, "utf8").split("\n").filter(Boolean)
  return inputs.every((input) => modifiedLast(join(ROOT, input)) <= builtAt)
}

if (!upToDate()) {
  const build = spawnSync(process.execPath, [join(ROOT, "scripts/build.ts"), "--server", "--quiet"], { stdio: "inherit" })
  if (build.status !== 0) process.exit(build.status ?? 1)
}

const args = process.argv.slice(2)
const table = JSON.parse(readFileSync(HELP_FILE, "utf8"))
const asked = args.at(-1)
const page = asked === "--help" || asked === "-h"
  ? (Object.hasOwn(table.pages, args.slice(0, -1).join(" ")) ? table.pages[args.slice(0, -1).join(" ")] : undefined)
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
