/**
 * The compiled service (scripts/build.ts): what `npm start`, `npm run cli` and the image run. Built
 * once into a directory of its own, it runs (`--help`, a database command), loads lazily (the entry's
 * static imports hold neither role nor the database; the supervisor's hold neither role), imports
 * only packages a production install has, and is not built again when nothing changed.
 */
import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { builtinModules } from "node:module"
import { dirname, join, relative } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildServer } from "../../scripts/build.ts"
import { createStack, type Stack } from "../support/stack.ts"

const ROOT = new URL("../../", import.meta.url).pathname
const OUT = join(ROOT, "tmp", `build-test-${randomBytes(4).toString("hex")}`)
const run = promisify(execFile)

let firstBuild: string
beforeAll(async () => {
  firstBuild = await buildServer(true, OUT)
}, 120_000)
afterAll(() => rmSync(OUT, { recursive: true, force: true }))

const chunkFiles = () => [join(OUT, "main.js"), ...readdirSync(join(OUT, "chunks")).filter((f) => f.endsWith(".js")).map((f) => join(OUT, "chunks", f))]
const staticImports = (file: string) =>
  [...readFileSync(file, "utf8").matchAll(/^(?:import|export)\b[^;"']*?(?:from\s*)?["']([^"']+)["']/gm)].map((match) => match[1]!)

/** Every file `file` loads before it runs, through static imports of the bundle's own chunks. */
const staticClosure = (file: string, seen = new Set<string>()): Set<string> => {
  if (seen.has(file)) return seen
  seen.add(file)
  for (const specifier of staticImports(file)) {
    if (specifier.startsWith(".")) staticClosure(join(dirname(file), specifier), seen)
  }
  return seen
}
const names = (files: Set<string>) => [...files].map((file) => relative(OUT, file).replace(/-[\w-]{8}\.js$/, ""))

describe("scripts/build.ts", () => {
  it("bundles src/ into main.js and chunks, and skips the build when nothing changed", async () => {
    expect(firstBuild).toBe("built")
    expect(existsSync(join(OUT, "main.js"))).toBe(true)
    expect(await buildServer(false, OUT)).toBe("up to date")
  })

  it("builds the compose pool's thread as an entry beside main.js, and it composes a message", async () => {
    expect(existsSync(join(OUT, "composeWorker.js"))).toBe(true)
    const script = `
      import { Worker } from "node:worker_threads"
      const worker = new Worker(${JSON.stringify(join(OUT, "composeWorker.js"))})
      worker.on("message", (reply) => { console.log(JSON.stringify({ error: reply.error, text: Buffer.from(reply.raw ?? []).toString() })); worker.terminate() })
      worker.postMessage({ id: 1, message: { from: "a@example.com", to: "b@example.com", subject: "compiled", text: "hello" } })`
    const file = join(OUT, "compose-check.mjs")
    writeFileSync(file, script)
    const { stdout } = await run(process.execPath, [file], { cwd: ROOT })
    const reply = JSON.parse(stdout)
    expect(reply.error).toBeUndefined()
    expect(reply.text).toContain("Subject: compiled")
  })

  it("loads each command's code when it runs: the entry holds neither role nor the database, `all` neither role", () => {
    const entry = names(staticClosure(join(OUT, "main.js")))
    for (const lazy of ["chunks/apiRole", "chunks/workerRole", "chunks/core", "chunks/db", "chunks/admin", "chunks/supervisor", "chunks/httpApiScalar"]) {
      expect(entry).not.toContain(lazy)
    }
    const supervisor = chunkFiles().find((file) => /chunks\/supervisor-/.test(file))!
    const all = names(staticClosure(supervisor))
    for (const lazy of ["chunks/apiRole", "chunks/workerRole", "chunks/core", "chunks/httpApiScalar"]) expect(all).not.toContain(lazy)
    const api = names(staticClosure(chunkFiles().find((file) => /chunks\/apiRole-/.test(file))!))
    expect(api).not.toContain("chunks/workerRole")
    expect(api).not.toContain("chunks/httpApiScalar")
  })

  it("bundles Effect and imports only packages a production install has", () => {
    const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, { dev?: boolean }> }
    const packages = new Set<string>()
    for (const file of chunkFiles()) {
      for (const specifier of staticImports(file)) {
        if (specifier.startsWith(".") || specifier.startsWith("node:") || builtinModules.includes(specifier)) continue
        packages.add(specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/"))
      }
    }
    expect(packages.size).toBeGreaterThan(5)
    expect([...packages].filter((name) => name === "effect" || name.startsWith("@effect/"))).toEqual([])
    // Installed by `npm ci --omit=dev`: a dependency, or a package one of them needs (not dev-only).
    const notInstalled = [...packages].filter((name) => {
      const entry = lock.packages[`node_modules/${name}`]
      return entry === undefined || entry.dev === true
    })
    expect(notInstalled.sort()).toEqual([])
  })

  describe("the bundle runs", () => {
    let stack: Stack
    beforeAll(async () => {
      stack = await createStack()
    })
    afterAll(async () => {
      await stack?.stop()
    })

    it("--help lists the commands", async () => {
      const { stdout } = await run(process.execPath, [join(OUT, "main.js"), "--help"], { cwd: ROOT })
      for (const command of ["all", "api", "worker", "migrate", "project", "user"]) expect(stdout).toContain(command)
    })

    it("project create finds the migrations from its chunk and prints the project", async () => {
      const { stdout } = await run(process.execPath, [join(OUT, "main.js"), "project", "create", "--name", "compiled"], { cwd: ROOT, env: stack.env })
      expect(JSON.parse(stdout)).toMatchObject({ name: "compiled", publicKey: expect.stringMatching(/^pk_/) })
    })
  })
})
