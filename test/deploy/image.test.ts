/**
 * The production image, checked without a Docker engine: the Dockerfile is parsed and linted
 * (dockerfile-ast / dockerfile-utils, the parser of VS Code's Docker support), its runtime stage is held
 * to production dependencies, a non-root user and an init process, and its HEALTHCHECK command is run
 * against a real api.
 */
import { type Copy, DockerfileParser, type Instruction } from "dockerfile-ast"
import { validate } from "dockerfile-utils"
import { execFile } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { builtinModules } from "node:module"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../support/mail.ts"
import { createStack, type Service, type Stack } from "../support/stack.ts"

const ROOT = new URL("../../", import.meta.url).pathname
const text = readFileSync(join(ROOT, "Dockerfile"), "utf8")
const dockerfile = DockerfileParser.parse(text)
const run = promisify(execFile)

/** The instructions of each stage, by stage name. */
const stages = new Map<string, Array<Instruction>>()
let current: Array<Instruction> = []
for (const instruction of dockerfile.getInstructions()) {
  if (instruction.getKeyword() === "FROM") {
    current = []
    stages.set(
      dockerfile.getFROMs().find((from) => from.getRange().start.line === instruction.getRange().start.line)!.getBuildStage() ?? "",
      current
    )
  }
  current.push(instruction)
}
const finalStage = [...stages.values()].at(-1)!
const keyword = (stage: ReadonlyArray<Instruction>, name: string) => stage.filter((instruction) => instruction.getKeyword() === name)
const argumentsOf = (instruction: Instruction) => instruction.getArgumentsContent() ?? ""
/** The JSON (exec) form of ENTRYPOINT, CMD or HEALTHCHECK CMD. */
const execForm = (instruction: Instruction) => JSON.parse(argumentsOf(instruction).replace(/^CMD\s+/, "")) as Array<string>

describe("the Dockerfile", () => {
  it("lints clean", () => {
    expect(validate(text).map((diagnostic) => diagnostic.message)).toEqual([])
  })

  it("builds in one stage and runs from another, both on Node 24's Debian slim image", () => {
    expect(dockerfile.getFROMs().map((from) => [from.getImageName(), from.getImageTag(), from.getBuildStage()])).toEqual([
      ["node", "24-bookworm-slim", "build"],
      ["node", "24-bookworm-slim", "runtime"]
    ])
  })

  it("installs only production dependencies in the runtime stage", () => {
    const installs = keyword(finalStage, "RUN").map(argumentsOf).filter((command) => /\bnpm\s+(ci|install|i)\b/.test(command))
    expect(installs.length).toBeGreaterThan(0)
    for (const command of installs) expect(command).toMatch(/\bnpm ci --omit=dev\b/)
    // Nothing installed elsewhere comes along: only the compiled service, migrations and the built dashboard are copied from the build.
    const copies = keyword(finalStage, "COPY").map((copy) => ({
      from: (copy as Copy).getFromFlag()?.getValue() ?? undefined,
      args: copy.getArguments().map((arg) => arg.getValue())
    }))
    for (const copy of copies) {
      expect(copy.args.join(" ")).not.toMatch(/node_modules/)
      if (copy.from === undefined) expect(copy.args.slice(0, -1)).toEqual(["package.json", "package-lock.json"])
    }
    expect(copies.filter((copy) => copy.from === "build").map((copy) => copy.args[0])).toEqual([
      "/app/dist",
      "/app/migrations",
      "/app/web/dist"
    ])
  })

  it("builds the service and the web dashboard in the build stage, after the sources are in place", () => {
    const build = stages.get("build")!
    const runs = keyword(build, "RUN").map(argumentsOf)
    expect(runs).toContain("node scripts/build.ts --force")
    const copyAll = build.findIndex((instruction) => instruction.getKeyword() === "COPY" && argumentsOf(instruction) === ". .")
    const buildAll = build.findIndex((instruction) => argumentsOf(instruction) === "node scripts/build.ts --force")
    expect(copyAll).toBeGreaterThan(-1)
    expect(buildAll).toBeGreaterThan(copyAll)
  })

  it("runs node from the base image on the compiled service, as a non-root user under tini", () => {
    const users = keyword(finalStage, "USER").map(argumentsOf)
    expect(users.at(-1)).toBe("node")
    expect(keyword(finalStage, "RUN").map(argumentsOf).join("\n")).toMatch(/apt-get install -y --no-install-recommends tini/)
    const entrypoint = execForm(keyword(finalStage, "ENTRYPOINT")[0]!)
    // tini is PID 1 and forwards SIGTERM to node; node is the image's (npm would pin the `node` package's).
    expect(entrypoint).toEqual(["tini", "--", "node", "dist/main.js"])
    expect(execForm(keyword(finalStage, "CMD")[0]!)).toEqual(["all"])
  })

  describe("HEALTHCHECK", () => {
    let stack: Stack
    let api: Service
    beforeAll(async () => {
      stack = await createStack()
      api = await stack.start("api")
    })
    afterAll(async () => {
      await stack?.stop()
    })

    const healthcheck = () => {
      const [instruction] = keyword(finalStage, "HEALTHCHECK")
      expect(argumentsOf(instruction!)).toContain("/readyz")
      const [command, ...args] = execForm(instruction!)
      expect(command).toBe("node")
      return (port: string) =>
        run(process.execPath, args, { env: { ...process.env, PORT: port }, timeout: 10_000 }).then(() => 0, (error) => error.code as number)
    }

    it("passes against a ready api on PORT", async () => {
      expect(await healthcheck()(new URL(api.url).port)).toBe(0)
    })

    it("fails when nothing answers on PORT", async () => {
      expect(await healthcheck()(String(await freePort()))).toBe(1)
    })
  })
})

describe(".dockerignore", () => {
  const patterns = readFileSync(join(ROOT, ".dockerignore"), "utf8").split("\n").map((line) => line.trim()).filter((line) =>
    line && !line.startsWith("#")
  )

  it("keeps local state, installed trees, results and secrets out of the build context", () => {
    for (const pattern of ["**/node_modules", ".data", ".git", "bench/results", ".env"]) expect(patterns).toContain(pattern)
  })

  it("keeps local builds of the dashboard and the service out (the build stage makes its own)", () => {
    expect(patterns).toContain("web/dist")
    expect(patterns).toContain("dist")
  })
})

describe("package.json", () => {
  const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))
  const sourceFiles = (dir: string): Array<string> =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
    )
  const packageOf = (specifier: string) => specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/")

  it("lists every package src/ loads under dependencies (the image installs nothing else)", () => {
    const imported = new Set<string>()
    for (const file of sourceFiles(join(ROOT, "src"))) {
      const source = readFileSync(file, "utf8")
      const statements = source.matchAll(/^(?:import|export)\b(?:[^;"]*?\bfrom)?\s*"([^".][^"\n]*)"/gm)
      const calls = source.matchAll(/\b(?:import|require)\(\s*"([^".][^"\n]*)"\s*\)/g)
      for (const match of [...statements, ...calls]) {
        const name = packageOf(match[1]!)
        if (!name.startsWith("node:") && !builtinModules.includes(name)) imported.add(name)
      }
    }
    expect(imported.size).toBeGreaterThan(5)
    expect([...imported].filter((name) => !(name in manifest.dependencies)).sort()).toEqual([])
  })
})
