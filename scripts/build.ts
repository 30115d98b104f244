/**
 * Compiles the service (src/) into dist/ when its inputs changed, so `npm start`, `npm run cli` and the
 * Docker image run JavaScript: no TypeScript stripping at run time, and one bundle in which Effect is
 * tree-shaken (Rolldown; effect and @effect/* are bundled, every other package stays in node_modules).
 * Each dynamic `import()` of src/ becomes its own chunk, loaded when it runs: `--help` loads neither the
 * server nor the worker. The inputs' hash is kept in dist/.build-hash, so a start after no change costs
 * one hash of src/ (milliseconds; `npm start` and `npm run cli`, scripts/start.js and scripts/cli.js, look at
 * modification times first and run this only when one is newer than dist/.build-hash). The CLI's help pages are rendered into dist/help.json
 * (src/cli/helpTable.ts), for scripts/cli.js to print without loading the CLI. The dashboard (web/dist) is checked too (scripts/build-web.ts).
 * Development and the tests keep running src/ directly (`node src/main.ts`).
 *
 *   node scripts/build.ts            build what is out of date (the service and the dashboard)
 *   node scripts/build.ts --force    build both anyway
 *   node scripts/build.ts --server   the service only
 *   --quiet                          says nothing when nothing was built (`npm run cli`)
 */
import { createHash } from "node:crypto"
import { existsSync, readFileSync, utimesSync, writeFileSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { buildWeb, filesUnder } from "./build-web.ts"

const ROOT = fileURLToPath(new URL("..", import.meta.url))
export const DIST = join(ROOT, "dist")
const INPUTS = ["src", "package-lock.json", "scripts/build.ts"]

const log = (message: string) => process.stderr.write(`[build] ${message}\n`)
const quiet = process.argv.includes("--quiet")

/** One hash over every input file's path and content, in a stable order. */
export const serverInputHash = (): string => {
  const hash = createHash("sha256")
  for (const file of INPUTS.flatMap((input) => filesUnder(ROOT, input)).sort()) {
    hash.update(relative(ROOT, file)).update("\0").update(readFileSync(file)).update("\0")
  }
  return hash.digest("hex")
}

/** Bundled into dist/: Effect's own packages, ESM and free of side effects, so only what is used ships. */
const BUNDLED = /^(effect|@effect\/[^/]+)(\/|$)/

/** Builds the service into `outDir` (dist/) unless it holds a build of the same inputs; says which it did. */
export const buildServer = async (force: boolean, outDir = DIST): Promise<"built" | "up to date" | "kept"> => {
  const hashFile = join(outDir, ".build-hash")
  const hash = serverInputHash()
  const built = existsSync(join(outDir, "main.js")) && existsSync(hashFile) ? readFileSync(hashFile, "utf8").trim() : undefined
  if (!force && built === hash && existsSync(join(outDir, "help.json"))) {
    // Looked at now: scripts/cli.js takes inputs modified before this as built.
    const now = new Date()
    utimesSync(hashFile, now, now)
    if (!quiet) log(`${relative(ROOT, outDir)}/ up to date, build skipped`)
    return "up to date"
  }
  const rolldown = await import("rolldown").catch(() => undefined)
  if (rolldown === undefined) {
    // A production install (npm ci --omit=dev) has no Rolldown: use the build it came with, if any.
    if (!existsSync(join(outDir, "main.js"))) {
      throw new Error("dist/ is missing and Rolldown is not installed: run `npm install` (with dev dependencies) first")
    }
    log("Rolldown is not installed; running the existing dist/")
    return "kept"
  }
  const started = performance.now()
  await rolldown.build({
    cwd: ROOT,
    // The threads are entries of their own (src/mail/composePool.ts, src/process/workerThread.ts load them beside main.js).
    input: {
      main: join(ROOT, "src/main.ts"),
      composeWorker: join(ROOT, "src/mail/composeWorker.ts"),
      workerThread: join(ROOT, "src/workerThreadMain.ts")
    },
    platform: "node",
    // Packages other than Effect's are loaded from node_modules, as from the sources (native addons, CommonJS).
    external: (id) => !id.startsWith(".") && !id.startsWith("/") && !BUNDLED.test(id),
    output: { dir: outDir, format: "esm", chunkFileNames: "chunks/[name]-[hash].js", cleanDir: true, sourcemap: true },
    logLevel: "warn"
  })
  // The CLI's help pages, for scripts/cli.js to print without loading the CLI.
  const { renderHelpTable } = await import("../src/cli/helpTable.ts")
  writeFileSync(join(outDir, "help.json"), JSON.stringify(await renderHelpTable()))
  writeFileSync(join(outDir, ".build-inputs"), `${INPUTS.join("\n")}\n`)
  // Last: scripts/cli.js takes a build as current from this file's modification time.
  writeFileSync(hashFile, `${hash}\n`)
  log(`built ${relative(ROOT, outDir)}/ in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  return "built"
}

if (import.meta.main) {
  const force = process.argv.includes("--force")
  try {
    await buildServer(force)
    if (!process.argv.includes("--server")) await buildWeb(force)
  } catch (error) {
    log(error instanceof Error ? error.message : String(error))
    process.exit(1)
  }
}
