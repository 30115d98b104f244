/**
 * Builds the web dashboard (web/) into web/dist when its inputs changed: the app's sources, the contract
 * and domain code it imports, and the locked dependency versions. Their hash is kept in
 * web/dist/.build-hash, so `npm start` and `npm test` pay for a build only after a change (`npm start`,
 * scripts/start.js, looks at modification times first and runs this only when an input is newer than
 * that file; web/dist/.build-inputs lists the inputs for it).
 *
 *   node scripts/build-web.ts          build if needed
 *   node scripts/build-web.ts --force  build anyway
 */
import { createHash } from "node:crypto"
import { existsSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const DIST = join(ROOT, "web/dist")
const HASH_FILE = join(DIST, ".build-hash")
const INPUTS = ["web", "src/http/api", "src/domain", "package-lock.json"]
const SKIPPED_DIRS = new Set(["dist", "node_modules"])

/** The files under `path` (a folder or a file) of `root`, less built and installed trees. */
export const filesUnder = (root: string, path: string): Array<string> => {
  const full = join(root, path)
  if (!existsSync(full)) return []
  if (!statSync(full).isDirectory()) return [full]
  return readdirSync(full, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((file) => !relative(root, file).split("/").some((part) => SKIPPED_DIRS.has(part)))
}

/** One hash over every input file's path and content, in a stable order. */
export const inputHash = (): string => {
  const hash = createHash("sha256")
  for (const file of INPUTS.flatMap((input) => filesUnder(ROOT, input)).sort()) {
    hash.update(relative(ROOT, file)).update("\0").update(readFileSync(file)).update("\0")
  }
  return hash.digest("hex")
}

const log = (message: string) => process.stderr.write(`[build-web] ${message}\n`)

export const buildWeb = async (force: boolean) => {
  const hash = inputHash()
  const built = existsSync(join(DIST, "index.html")) && existsSync(HASH_FILE) ? readFileSync(HASH_FILE, "utf8").trim() : undefined
  if (!force && built === hash && existsSync(join(DIST, ".build-inputs"))) {
    // Looked at now: scripts/start.js (scripts/fresh.js) takes inputs modified before this as built.
    const now = new Date()
    utimesSync(HASH_FILE, now, now)
    return log("up to date, build skipped")
  }
  // Whoever runs this (vitest sets NODE_ENV=test), the build is production's: React's development build is
  // a third larger and slower.
  process.env.NODE_ENV = "production"
  const vite = await import("vite").catch(() => undefined)
  if (vite === undefined) {
    // A production install (npm ci --omit=dev) has no Vite: use the build it came with, if any.
    if (existsSync(join(DIST, "index.html"))) return log("Vite is not installed; serving the existing build")
    throw new Error("web/dist is missing and Vite is not installed: run `npm install` (with dev dependencies) first")
  }
  const started = performance.now()
  await vite.build({ configFile: join(ROOT, "web/vite.config.ts"), logLevel: "warn" })
  writeFileSync(join(DIST, ".build-inputs"), `${INPUTS.join("\n")}\n`)
  // Last: scripts/fresh.js takes a build as current from this file's modification time.
  writeFileSync(HASH_FILE, `${hash}\n`)
  log(`built web/dist in ${((performance.now() - started) / 1000).toFixed(1)} s`)
}

if (import.meta.main) {
  await buildWeb(process.argv.includes("--force")).catch((error) => {
    log(error instanceof Error ? error.message : String(error))
    process.exit(1)
  })
}
