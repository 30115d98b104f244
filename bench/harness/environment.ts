/**
 * A benchmark's throw-away environment: test/support's stack (its own database and NATS prefix,
 * migrated, service processes started and stopped by role), one project, the bare INSERT baseline
 * server, helper processes, and clean-up of all of it.
 */
import { createStack, type Service, type Stack, type TestProject } from "../../test/support/stack.ts"
import { type StartedProcess, startProcess, stopProcess } from "./processes.ts"
import { ROOT } from "./settings.ts"

export type Role = "api" | "worker" | "all"

/** Every benchmark's service: the limiter stays on (its cost is part of the request path), just out of reach. */
export const SERVICE_ENV: Record<string, string> = { RATE_LIMIT_PER_MINUTE: "100000000" }

export interface BenchEnvironment {
  readonly stack: Stack
  readonly project: TestProject
  readonly databaseUrl: string
  readonly natsPrefix: string
  /**
   * Starts a role; BENCH_PROFILE=<role>[,<role>] writes a CPU profile of it to bench/results/profiles/, and
   * BENCH_IMPORT=<module> preloads a module into it (e.g. ./bench/harness/countStatements.ts).
   */
  start(role: Role, env?: Record<string, string>, nodeArgs?: ReadonlyArray<string>): Promise<Service>
  /** Starts the bare node:http + pg server (one INSERT per request); its URL and process id. */
  baseline(): Promise<{ readonly url: string; readonly pid: number }>
  /** Starts a helper process (`node <args>`), stopped at clean-up. */
  helper(args: ReadonlyArray<string>, ready: RegExp, env?: Record<string, string>): Promise<StartedProcess>
  query<T = Record<string, unknown>>(text: string, params?: Array<unknown>): Promise<Array<T>>
}

/** The environment over a stack that is already created; `close` stops what the stack does not own. */
export const environmentOn = async (stack: Stack) => {
  const helpers: Array<StartedProcess> = []
  const project = await stack.createProject("bench")
  const helper = async (args: ReadonlyArray<string>, ready: RegExp, env: Record<string, string> = {}) => {
    const started = await startProcess(args, env, ready)
    helpers.push(started)
    return started
  }
  const environment: BenchEnvironment = {
    stack,
    project,
    databaseUrl: stack.databaseUrl,
    natsPrefix: stack.natsPrefix,
    start: (role, env = {}, nodeArgs = []) =>
      stack.start(role, env, [
        ...nodeArgs,
        ...(process.env.BENCH_IMPORT ? ["--import", process.env.BENCH_IMPORT] : []),
        ...((process.env.BENCH_PROFILE ?? "").split(",").includes(role)
          ? ["--cpu-prof", `--cpu-prof-dir=${ROOT}/bench/results/profiles`]
          : [])
      ]),
    baseline: async () => {
      const started = await helper(["bench/baselines/insertServer.ts", stack.databaseUrl], /port=(\d+)/)
      return { url: `http://127.0.0.1:${started.match[1]}`, pid: started.child.pid! }
    },
    helper,
    query: (text, params) => stack.query(text, params)
  }
  return { environment, close: () => Promise.all(helpers.map(({ child }) => stopProcess(child))) }
}

/** Runs `use` in a fresh environment and cleans up after it, whatever happens. */
export const withEnvironment = async <A>(
  use: (environment: BenchEnvironment) => Promise<A>,
  options: { readonly entry?: string } = {}
): Promise<A> => {
  const stack = await createStack(SERVICE_ENV, options)
  try {
    const { environment, close } = await environmentOn(stack)
    try {
      return await use(environment)
    } finally {
      await close()
    }
  } finally {
    await stack.stop()
  }
}
