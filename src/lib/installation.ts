/**
 * Where the installation's files are (migrations/, web/dist, the entry point), whether this code runs
 * from its TypeScript sources (src/, type stripping) or compiled into dist/ by scripts/build.ts, where
 * a module may land in any chunk at any depth: the root is the nearest folder above that holds
 * package.json.
 */
import { existsSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const rootAbove = (start: string): string => {
  for (let dir = start;; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return dir
    if (dirname(dir) === dir) throw new Error(`no package.json above ${start}`)
  }
}

const HERE = fileURLToPath(import.meta.url)

export const INSTALL_ROOT = rootAbove(dirname(HERE))

/** True when running the compiled output (dist/), false from the sources. */
export const COMPILED = HERE.endsWith(".js")

/**
 * The entry point of this code, for the processes `all` forks: src/main.ts, or once compiled the
 * bundle's main.js this process was started with (dist/main.js, or a test's build elsewhere).
 */
export const MAIN_ENTRY = COMPILED ? resolve(process.argv[1] ?? join(INSTALL_ROOT, "dist/main.js")) : join(INSTALL_ROOT, "src/main.ts")
