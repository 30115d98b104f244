/**
 * The CLI as users run it (`node src/main.ts …`): help on stdout, mistakes as one line on stderr with
 * exit code 1 and nothing on stdout, a bad environment variable as one line (no stack trace), and the
 * project commands against a real database.
 */
import { spawn } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Variables } from "../../src/config.ts"
import { createStack, type Stack } from "../support/stack.ts"

const ROOT = new URL("../../", import.meta.url).pathname

let stack: Stack
beforeAll(async () => {
  stack = await createStack()
})
afterAll(async () => {
  await stack?.stop()
})

const cli = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ["src/main.ts", ...args], { cwd: ROOT, env: { ...stack.env, ...env } })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

describe("help", () => {
  it("--help lists the commands and every environment variable with its default, on stdout, even with a bad environment", async () => {
    const { code, stdout, stderr } = await cli(["--help"], { PARTITIONS: "abc" })
    expect(code).toBe(0)
    expect(stderr).toBe("")
    for (const command of ["all", "api", "worker", "migrate", "project"]) expect(stdout).toMatch(new RegExp(`^  ${command} `, "m"))
    for (const variable of Object.values(Variables)) expect(stdout).toContain(`${variable.name} (default: ${variable.shownDefault})`)
  })

  it("each command explains itself and its flags", async () => {
    const { code, stdout } = await cli(["project", "settings", "--help"])
    expect(code).toBe(0)
    expect(stdout).toContain("mailstream project settings")
    for (const flag of ["--id", "--send-rate", "--tracking"]) expect(stdout).toContain(flag)
  })
})

describe("mistakes: one line and a pointer to --help on stderr, nothing on stdout, exit 1", () => {
  it.each([
    [["launch"], 'Unknown subcommand "launch" for "mailstream"', "--help"],
    [["project", "create"], "Missing required flag: --name", "project create --help"],
    [["project", "create", "--name", " "], 'Invalid value for flag --name: " ". Expected a non-empty name', "project create --help"],
    [
      ["project", "settings", "--id", "p1", "--tracking", "on"],
      'Invalid value for flag --id: "p1". Expected a project id (a UUID)',
      "project settings --help"
    ],
    [
      ["project", "settings", "--id", "0190a3c2-0000-7000-8000-000000000000", "--tracking", "maybe"],
      "Invalid value for flag --tracking",
      "project settings --help"
    ],
    [
      ["project", "settings", "--id", "0190a3c2-0000-7000-8000-000000000000", "--send-rate", "-2"],
      "Expected a number of emails per second of at least 0, or default",
      "project settings --help"
    ],
    [
      ["project", "settings", "--id", "0190a3c2-0000-7000-8000-000000000000"],
      "Nothing to change: give --send-rate, --tracking or both",
      "project settings --help"
    ]
  ])("%j", async (args, message, help) => {
    const { code, stdout, stderr } = await cli(args)
    expect(code).toBe(1)
    expect(stdout).toBe("")
    const lines = stderr.trimEnd().split("\n")
    expect(lines).toHaveLength(2)
    expect(lines[0]).toContain(message)
    expect(lines[1]).toBe(`Run "npm run cli -- ${help}" for usage.`)
  })

  it("a bad environment variable stops any command with one line naming it, exit 1, no stack trace", async () => {
    for (const args of [["migrate"], ["api"], []]) {
      const { code, stdout, stderr } = await cli(args, { PARTITIONS: "abc" })
      expect({ args, code, stdout, stderr }).toEqual({
        args,
        code: 1,
        stdout: "",
        stderr: "PARTITIONS=abc: expected a whole number from 1 to 1024\n"
      })
    }
  })
})

describe("project commands", () => {
  it("project create prints exactly one JSON object on stdout: { id, name, publicKey, secretKey }", async () => {
    const { code, stdout } = await cli(["project", "create", "--name", "My app"])
    expect(code).toBe(0)
    const project = JSON.parse(stdout)
    expect(Object.keys(project)).toEqual(["id", "name", "publicKey", "secretKey"])
    expect(project).toMatchObject({ name: "My app", publicKey: expect.stringMatching(/^pk_/), secretKey: expect.stringMatching(/^sk_/) })
    expect(stdout).toBe(`${JSON.stringify(project)}\n`)
  })

  it("project settings changes the throttle and tracking and prints them; an unknown project is one line, exit 1", async () => {
    const project = await stack.createProject()
    const changed = await cli(["project", "settings", "--id", project.id, "--send-rate", "2.5", "--tracking", "off"])
    expect(changed.code).toBe(0)
    expect(JSON.parse(changed.stdout)).toEqual({ id: project.id, sendRatePerSecond: 2.5, trackingEnabled: false })
    const reset = await cli(["project", "settings", "--id", project.id, "--send-rate", "default"])
    expect(JSON.parse(reset.stdout)).toEqual({ id: project.id, sendRatePerSecond: null, trackingEnabled: false })
    const [row] = await stack.query<{ rate: string | null; tracking: boolean }>(
      "SELECT send_rate_per_second::text AS rate, tracking_enabled AS tracking FROM projects WHERE id = $1",
      [project.id]
    )
    expect(row).toEqual({ rate: null, tracking: false })

    const unknown = await cli(["project", "settings", "--id", "0190a3c2-0000-7000-8000-000000000000", "--tracking", "on"])
    expect(unknown).toEqual({ code: 1, stdout: "", stderr: "No project 0190a3c2-0000-7000-8000-000000000000\n" })
  })
})
