/**
 * The HttpApi contract (src/http/api) is what the web app imports to derive its client, so it must
 * not reach server code: every file reachable from Api.ts, type-only imports included, imports only
 * `effect` and src/domain, and a browser build of it contains nothing from Node.
 */
import { readFileSync } from "node:fs"
import { builtinModules } from "node:module"
import { dirname, join, relative, resolve } from "node:path"
import ts from "typescript-5"
import { build, type Plugin } from "vite"
import { describe, expect, it } from "vitest"

const ROOT = new URL("../../", import.meta.url).pathname
const ENTRY = join(ROOT, "src/http/api/Api.ts")
const ALLOWED_DIRS = ["src/http/api/", "src/domain/"]
const isEffect = (specifier: string) => specifier === "effect" || specifier.startsWith("effect/")

/** Every import and re-export of a file, type-only ones included (the TypeScript scanner reads them all). */
const importsOf = (file: string): Array<string> =>
  ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles.map((imported) => imported.fileName)

/** Walks the import graph from the entry; returns the files reached and the imports that break the rule. */
const walkContract = () => {
  const seen = new Set<string>()
  const violations: Array<string> = []
  const queue = [ENTRY]
  while (queue.length > 0) {
    const file = queue.pop()!
    if (seen.has(file)) continue
    seen.add(file)
    for (const specifier of importsOf(file)) {
      const from = relative(ROOT, file)
      if (isEffect(specifier)) continue
      if (!specifier.startsWith(".")) {
        violations.push(`${from} imports ${specifier}`)
        continue
      }
      const target = resolve(dirname(file), specifier)
      if (!ALLOWED_DIRS.some((dir) => relative(ROOT, target).startsWith(dir))) {
        violations.push(`${from} imports ${relative(ROOT, target)}`)
        continue
      }
      queue.push(target)
    }
  }
  return { files: [...seen].map((file) => relative(ROOT, file)), violations }
}

const NODE_BUILTINS = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]))

describe("the HttpApi contract", () => {
  it("imports only effect and src/domain, type-only imports included", () => {
    const { files, violations } = walkContract()
    // The walk really covered the contract (every group file), not just the entry.
    expect(files).toEqual(expect.arrayContaining(["src/http/api/contacts.ts", "src/http/api/security.ts", "src/http/api/workflows.ts"]))
    expect(violations).toEqual([])
  })

  it("builds for the browser with nothing from Node in its module graph", async () => {
    const modules = new Set<string>()
    const recorder: Plugin = {
      name: "record-modules",
      // Sees every specifier before Vite swaps Node built-ins for its empty browser stub.
      resolveId(source) {
        if (NODE_BUILTINS.has(source)) modules.add(source)
        return null
      },
      buildEnd() {
        for (const id of this.getModuleIds()) modules.add(id)
      }
    }
    await build({
      configFile: false,
      logLevel: "silent",
      root: ROOT,
      plugins: [recorder],
      build: {
        write: false,
        minify: false,
        lib: { entry: ENTRY, formats: ["es"], fileName: "contract" }
      }
    })
    const ids = [...modules]
    expect(ids.some((id) => id.endsWith("src/http/api/Api.ts"))).toBe(true)
    const fromNode = ids.filter((id) => NODE_BUILTINS.has(id) || id.includes("__vite-browser-external"))
    expect(fromNode).toEqual([])
    const serverSide = ids
      .filter((id) => id.startsWith(join(ROOT, "src/")))
      .map((id) => relative(ROOT, id))
      .filter((id) => !ALLOWED_DIRS.some((dir) => id.startsWith(dir)))
    expect(serverSide).toEqual([])
  }, 120_000)
})
