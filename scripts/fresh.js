/**
 * Whether a build is current, from modification times alone, for the launchers (scripts/cli.js,
 * scripts/start.js: plain JavaScript, so that nothing is type-stripped before a command). A build's
 * hash file (dist/.build-hash, web/dist/.build-hash) is written or touched by its build script after
 * each look at the inputs the script lists beside it (.build-inputs); if no input file or folder was
 * modified since (adding, removing or renaming a file modifies its folder), the build is current.
 * Otherwise the build script runs, which compares the inputs' contents and builds only if they changed.
 * A file put back with an older modification time goes unnoticed here: `npm run build` builds then.
 */
import { spawnSync } from "node:child_process"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

export const ROOT = fileURLToPath(new URL("..", import.meta.url))
/** Never inputs: built and installed trees (as scripts/build-web.ts's filesUnder skips them). */
const SKIPPED = new Set(["dist", "node_modules"])

/** The latest modification (ms) of `path` and, for a folder, of everything under it. */
const modifiedLast = (path) => {
  if (!existsSync(path)) return Infinity
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  let latest = stat.mtimeMs
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    if (!SKIPPED.has(entry.name)) latest = Math.max(latest, modifiedLast(join(path, entry.name)))
  }
  return latest
}

/** `dir`'s build is current if it holds every file of `required` and no input is newer than its hash. */
const current = (dir, required) => {
  const hashFile = join(dir, ".build-hash")
  const inputsFile = join(dir, ".build-inputs")
  if (![hashFile, inputsFile, ...required.map((file) => join(dir, file))].every((file) => existsSync(file))) return false
  const builtAt = statSync(hashFile).mtimeMs
  const inputs = readFileSync(inputsFile, "utf8").split("\n").filter(Boolean)
  return inputs.every((input) => modifiedLast(join(ROOT, input)) <= builtAt)
}

/** Runs `script` (with `args`) unless the build in `dir` is current; exits as the script did if it failed. */
export const ensureBuilt = (dir, required, script, args) => {
  if (current(join(ROOT, dir), required)) return
  const build = spawnSync(process.execPath, [join(ROOT, script), ...args], { stdio: "inherit" })
  if (build.status !== 0) process.exit(build.status ?? 1)
}
