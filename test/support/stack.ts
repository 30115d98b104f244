import { afterAll, beforeAll } from "vitest"
/**
 * Test stack: a fresh Postgres database and NATS prefix per test file, and real service processes
 * (`node <entry> <role>`: the run's compiled service, see serviceBuild.ts) listening on free ports. Everything is removed again in `stop`.
 */
import { connect } from "@nats-io/transport-node"
import { jetstreamManager } from "@nats-io/jetstream"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { promisify } from "node:util"
import { Effect } from "effect"
import { Projects } from "../../src/store/Projects.ts"
import pg, { databaseUrlOf, withSql } from "./pg.ts"

const ROOT = new URL("../../", import.meta.url).pathname
export const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
/** Names the run's migrated template database (test/support/globalSetup.ts); unset outside vitest (benchmarks). */
export const TEMPLATE_DATABASE_ENV = "MS_TEST_TEMPLATE_DATABASE"
/**
 * What the run's service processes execute (test/support/globalSetup.ts): the compiled service, dist/main.js,
 * built once per run from the sources under test, as `npm start` and the image run it. Unset outside vitest
 * (benchmarks), where stacks run src/main.ts unless told otherwise.
 */
export const SERVICE_ENTRY_ENV = "MS_TEST_SERVICE_ENTRY"
const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222"

export interface Service {
  readonly url: string
  readonly process: ChildProcess
  readonly logs: Array<string>
  stop(signal?: NodeJS.Signals): Promise<void>
}

export interface Stack {
  readonly databaseUrl: string
  readonly natsPrefix: string
  readonly env: Record<string, string>
  /** Starts `node [nodeArgs] src/main.ts <role>` and resolves once it is ready. */
  start(role?: "api" | "worker" | "all", env?: Record<string, string>, nodeArgs?: ReadonlyArray<string>): Promise<Service>
  cli(...args: Array<string>): Promise<{ stdout: string; stderr: string }>
  createProject(name?: string): Promise<TestProject>
  query<T = Record<string, unknown>>(text: string, params?: Array<unknown>): Promise<Array<T>>
  stop(): Promise<void>
}

export interface TestProject {
  readonly id: string
  readonly name: string
  readonly publicKey: string
  readonly secretKey: string
}

const run = promisify(execFile)

/**
 * `adminUrl`: another Postgres server than the shared one (a private one a test may stop, support/postgresServer.ts).
 * `entry`: what the processes run, relative to the checkout: the sources (src/main.ts), or the compiled
 * service (dist/main.js, scripts/build.ts), which vitest runs use (SERVICE_ENTRY_ENV) and where production's
 * figures are measured.
 */
export const createStack = async (
  env: Record<string, string> = {},
  options: { readonly adminUrl?: string; readonly entry?: string } = {}
): Promise<Stack> => {
  const entry = options.entry ?? process.env[SERVICE_ENTRY_ENV] ?? "src/main.ts"
  const suffix = randomBytes(5).toString("hex")
  const database = `ms_test_${suffix}`
  const adminUrl = options.adminUrl ?? ADMIN_URL
  // The run's migrated template lives on the shared server only.
  const template = options.adminUrl === undefined ? process.env[TEMPLATE_DATABASE_ENV] : undefined
  await pg.exec(adminUrl, template ? `CREATE DATABASE ${database} TEMPLATE ${template}` : `CREATE DATABASE ${database}`)
  const databaseUrl = databaseUrlOf(adminUrl, database)
  const natsPrefix = `t${suffix}`
  const baseEnv: Record<string, string> = {
    ...process.env as Record<string, string>,
    DATABASE_URL: databaseUrl,
    NATS_URL,
    NATS_PREFIX: natsPrefix,
    PORT: "0",
    // `all` runs this many api processes beside its worker process: one keeps the suite's CPU cost down.
    API_PROCESSES: "1",
    LOG_LEVEL: "Info",
    ...env
  }
  const services: Array<Service> = []

  const cli = async (...args: Array<string>) => {
    const { stdout, stderr } = await run(process.execPath, [entry, ...args], { cwd: ROOT, env: baseEnv })
    return { stdout, stderr }
  }
  // Migrate once up front so parallel starts do not race on an empty database (a copy of the run's
  // template is migrated already).
  if (!template)
    await cli("migrate").catch(async (error) => {
      await pg.close(databaseUrl)
      await pg.exec(adminUrl, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
      throw error
    })

  const start = (role: "api" | "worker" | "all" = "all", extra: Record<string, string> = {}, nodeArgs: ReadonlyArray<string> = []) =>
    new Promise<Service>((resolve, reject) => {
      const child = spawn(process.execPath, [...nodeArgs, entry, role], {
        cwd: ROOT,
        env: { ...baseEnv, ...extra },
        stdio: ["ignore", "pipe", "pipe"]
      })
      const logs: Array<string> = []
      let settled = false
      const exited = new Promise<void>((done) => child.once("exit", () => done()))
      const service: Service = {
        url: "",
        process: child,
        logs,
        async stop(signal = "SIGTERM") {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal)
          // A graceful stop that hangs is a bug worth seeing, but must not wedge the whole suite.
          const timer = setTimeout(() => {
            console.warn(`${role} did not exit 15 s after ${signal}; killing it. Last logs:\n${logs.slice(-10).join("\n")}`)
            child.kill("SIGKILL")
          }, 15_000)
          await exited
          clearTimeout(timer)
        }
      }
      const onLine = (line: string) => {
        logs.push(line)
        const match = line.match(/Listening on http:\/\/[^:]+:(\d+)/)
        if (match && !settled) {
          settled = true
          ;(service as { url: string }).url = `http://127.0.0.1:${match[1]}`
          services.push(service)
          resolve(service)
        }
        if (role === "worker" && line.includes("worker started") && !settled) {
          settled = true
          services.push(service)
          resolve(service)
        }
      }
      let buffer = ""
      const onData = (chunk: Buffer) => {
        buffer += chunk.toString()
        let index
        while ((index = buffer.indexOf("\n")) >= 0) {
          onLine(buffer.slice(0, index))
          buffer = buffer.slice(index + 1)
        }
      }
      child.stdout!.on("data", onData)
      child.stderr!.on("data", onData)
      child.once("exit", (code) => {
        if (!settled) {
          settled = true
          reject(new Error(`${role} exited with ${code} before it was ready:\n${logs.join("\n")}`))
        }
      })
    })

  const query = <T>(text: string, params: Array<unknown> = []) => pg.query<T>(databaseUrl, text, params)

  return {
    databaseUrl,
    natsPrefix,
    env: baseEnv,
    start,
    cli,
    query,
    // In this process, as `project create` does it (test/cli covers the command): a CLI process per
    // project cost the suite seconds each.
    async createProject(name = "Test project") {
      const { id, publicKey, secretKey } = await withSql(
        databaseUrl,
        Effect.flatMap(Effect.service(Projects), (projects) => projects.create(name)).pipe(Effect.provide(Projects.layer))
      )
      return { id, name, publicKey, secretKey }
    },
    async stop() {
      await Promise.all(services.map((service) => service.stop()))
      await pg.close(databaseUrl)
      await pg.exec(adminUrl, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
      // A private server's pool goes with it (the shared server's is closed once, by the global setup).
      if (options.adminUrl !== undefined) await pg.close(adminUrl)
      const nc = await connect({ servers: NATS_URL })
      const jsm = await jetstreamManager(nc)
      for await (const stream of jsm.streams.list()) {
        if (stream.config.name.startsWith(`${natsPrefix}_`)) await jsm.streams.delete(stream.config.name)
      }
      await nc.close()
    }
  }
}

/** JSON over HTTP with a bearer key. */
export const request = async (
  base: string,
  method: string,
  path: string,
  options: { key?: string | undefined; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {}
) => {
  const headers: Record<string, string> = { ...options.headers }
  if (options.key) headers.authorization = `Bearer ${options.key}`
  let body: string | undefined
  if (options.rawBody !== undefined) body = options.rawBody
  else if (options.body !== undefined) body = JSON.stringify(options.body)
  if (body !== undefined && !headers["content-type"]) headers["content-type"] = "application/json"
  return readResponse(await fetch(`${base}${path}`, { method, headers, body }))
}

/** A response's status, headers, text and JSON (undefined when the body is empty or not JSON). */
export const readResponse = async (response: Response) => {
  const text = await response.text()
  let json: any
  try {
    json = text === "" ? undefined : JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, headers: response.headers, json, text }
}

export interface StackContext {
  readonly stack: Stack
  readonly api: Service
  readonly project: TestProject
}

/**
 * The usual test-file set-up: a stack with the rate limit off, one service process (`role`) and one
 * project, created before the file's tests and removed after them. `use` receives them.
 */
export const withStack = (role: "api" | "all", use: (context: StackContext) => void) => {
  let stack: Stack | undefined
  beforeAll(async () => {
    stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
    use({ stack, api: await stack.start(role), project: await stack.createProject() })
  })
  afterAll(async () => {
    await stack?.stop()
  })
}
