/**
 * The compiled service (scripts/build.ts): what `npm start`, `npm run cli` and the image run. Built
 * once into a directory of its own, it runs (`--help`, a database command), loads lazily (the entry's
 * static imports hold neither role nor the database; the supervisor's hold neither role), imports
 * only packages a production install has, and is not built again when nothing changed.
 */
import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync
} from "node:fs"
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

const chunkFiles =
  () => [join(OUT, "main.js"), ...readdirSync(join(OUT, "chunks")).filter((f) => f.endsWith(".js")).map((f) => join(OUT, "chunks", f))]
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

  it("an up-to-date look marks the build as current for scripts/cli.js: no input is newer than .build-hash", async () => {
    const inputs = readFileSync(join(OUT, ".build-inputs"), "utf8").split("\n").filter(Boolean)
    expect(inputs).toContain("src")
    const newest = (path: string): number =>
      statSync(path).isDirectory()
        ? Math.max(statSync(path).mtimeMs, ...readdirSync(path).map((entry) => newest(join(path, entry))))
        : statSync(path).mtimeMs
    expect(await buildServer(false, OUT)).toBe("up to date")
    const builtAt = statSync(join(OUT, ".build-hash")).mtimeMs
    for (const input of inputs) expect(newest(join(ROOT, input))).toBeLessThanOrEqual(builtAt)
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
    for (
      const lazy of [
        "chunks/apiRole",
        "chunks/workerRole",
        "chunks/core",
        "chunks/db",
        "chunks/admin",
        "chunks/supervisor",
        "chunks/httpApiScalar"
      ]
    ) {
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
      const { stdout } = await run(process.execPath, [join(OUT, "main.js"), "project", "create", "--name", "compiled"], {
        cwd: ROOT,
        env: stack.env
      })
      expect(JSON.parse(stdout)).toMatchObject({ name: "compiled", publicKey: expect.stringMatching(/^pk_/) })
    })
  })

  describe("scripts/fresh.js: whether the launchers run the build script", () => {
    // A checkout whose build script only notes that it ran, and whose one input is the folder `input`.
    const CHECKOUT = `${OUT}-fresh`
    const builds = () =>
      existsSync(join(CHECKOUT, "builds.log")) ? readFileSync(join(CHECKOUT, "builds.log"), "utf8").split("\n").filter(Boolean) : []
    const launch = () => run(process.execPath, [join(CHECKOUT, "scripts/cli.js"), "--version"], { cwd: CHECKOUT })
    const at = (path: string, seconds: number) => utimesSync(path, seconds, seconds)
    beforeAll(() => {
      mkdirSync(join(CHECKOUT, "scripts"), { recursive: true })
      mkdirSync(join(CHECKOUT, "input"))
      mkdirSync(join(CHECKOUT, "dist"))
      for (const script of ["scripts/cli.js", "scripts/fresh.js"]) copyFileSync(join(ROOT, script), join(CHECKOUT, script))
      writeFileSync(
        join(CHECKOUT, "scripts/build.ts"),
        `import { appendFileSync } from "node:fs"\nappendFileSync(${
          JSON.stringify(join(CHECKOUT, "builds.log"))
        }, process.argv.slice(2).join(" ") + "\\n")\n`
      )
      for (const file of ["main.js", "help.json"]) copyFileSync(join(OUT, file), join(CHECKOUT, "dist", file))
      writeFileSync(join(CHECKOUT, "dist/.build-inputs"), "input\n")
      writeFileSync(join(CHECKOUT, "dist/.build-hash"), "a hash\n")
      writeFileSync(join(CHECKOUT, "input/a.ts"), "a")
      // Inputs last modified at 1000 s, the build looked at them at 2000 s.
      for (const path of ["input/a.ts", "input"]) at(join(CHECKOUT, path), 1_000)
      at(join(CHECKOUT, "dist/.build-hash"), 2_000)
    })
    afterAll(() => rmSync(CHECKOUT, { recursive: true, force: true }))

    it("runs it when an input file or folder is newer than .build-hash, and not otherwise", async () => {
      expect((await launch()).stdout).toMatch(/^mailstream v/)
      expect(builds()).toEqual([])
      at(join(CHECKOUT, "input/a.ts"), 3_000)
      await launch()
      expect(builds()).toEqual(["--server --quiet"])
      at(join(CHECKOUT, "input/a.ts"), 1_000)
      // A file added (however old) modifies its folder.
      writeFileSync(join(CHECKOUT, "input/b.ts"), "b")
      at(join(CHECKOUT, "input/b.ts"), 1_000)
      await launch()
      expect(builds()).toHaveLength(2)
      at(join(CHECKOUT, "input"), 1_000)
      await launch()
      expect(builds()).toHaveLength(2)
      // No record of the inputs: built.
      rmSync(join(CHECKOUT, "dist/.build-inputs"))
      await launch()
      expect(builds()).toHaveLength(3)
    }, 60_000)
  })

  describe("scripts/cli.js (`npm run cli`) on this build", () => {
    // A checkout of its own whose dist/ is this build: the launcher as `npm run cli` runs it.
    const CHECKOUT = `${OUT}-checkout`
    const launch = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
      run(process.execPath, [join(CHECKOUT, "scripts/cli.js"), ...args], { cwd: CHECKOUT, env: { ...process.env, ...env } })
    const direct = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
      run(process.execPath, [join(OUT, "main.js"), ...args], { cwd: ROOT, env: { ...process.env, ...env } })
    let stack: Stack
    beforeAll(async () => {
      mkdirSync(join(CHECKOUT, "scripts"), { recursive: true })
      for (const script of ["scripts/cli.js", "scripts/fresh.js"]) copyFileSync(join(ROOT, script), join(CHECKOUT, script))
      for (const input of ["src", "package-lock.json", "scripts/build.ts", "package.json"])
        symlinkSync(join(ROOT, input), join(CHECKOUT, input))
      symlinkSync(OUT, join(CHECKOUT, "dist"))
      stack = await createStack()
    })
    afterAll(async () => {
      rmSync(CHECKOUT, { recursive: true, force: true })
      await stack?.stop()
    })

    it("prints every help page and the version as the CLI itself does, from the table rendered at build time", async () => {
      const table = JSON.parse(readFileSync(join(OUT, "help.json"), "utf8")) as { pages: Record<string, unknown> }
      const paths = Object.keys(table.pages)
      expect(paths).toEqual(expect.arrayContaining(["", "all", "project", "project create", "project settings", "user create"]))
      for (const path of paths) {
        for (const flag of ["--help", "-h"]) {
          const args = [...path.split(" ").filter(Boolean), flag]
          expect((await launch(args)).stdout, args.join(" ")).toBe((await direct(args)).stdout)
        }
      }
      expect((await launch(["--version"])).stdout).toBe((await direct(["--version"])).stdout)
      expect((await launch(["--version"])).stdout).toMatch(/^mailstream v\d/)
    }, 120_000)

    it("leaves what is not a help page to the CLI: a misplaced --help, a mistake, a command", async () => {
      const misplaced = ["project", "create", "--name", "x", "--help"]
      expect((await launch(misplaced)).stdout).toBe((await direct(misplaced)).stdout)
      expect((await launch(misplaced)).stdout).toContain("mailstream project create")
      // Not a key of the table, though one of every object's (a lookup by `in` would print nothing).
      expect((await launch(["constructor", "--help"])).stdout).toBe((await direct(["constructor", "--help"])).stdout)
      const mistake = await launch(["launch"]).then(() => undefined, (error: { code: number; stdout: string; stderr: string }) => error)
      expect(mistake).toMatchObject({ code: 1, stdout: "" })
      expect(mistake!.stderr).toContain('Unknown subcommand "launch"')
      const { stdout } = await launch(["project", "create", "--name", "launched"], stack.env)
      expect(JSON.parse(stdout)).toMatchObject({ name: "launched", publicKey: expect.stringMatching(/^pk_/) })
    }, 60_000)
  })
})
