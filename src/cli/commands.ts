/**
 * The CLI (`npm run cli -- <command>`, `node src/main.ts <command>`): every command with its flags,
 * help and checks, on effect/cli. Every command that touches the deployment reads and checks the
 * environment first (`--help` lists it): a bad variable stops it with one line.
 */
import { Effect, Option } from "effect"
import { CliError, Command, Flag } from "effect/cli"
import { AppConfig, environmentHelp } from "../config.ts"
import { isValidEmail, normalizeEmail } from "../domain/email.ts"
import { isUuid } from "../domain/uuid.ts"
import { ClockLive } from "../lib/clock.ts"
import { LoggingLive } from "./logging.ts"

/**
 * What a command runs is imported when it runs: `--help` and `project create` never load the server or
 * the worker, and `all` as a supervisor loads neither of them, only what forks its processes.
 */
const lazy = <M, A, E, R>(load: () => Promise<M>, use: (module: M) => Effect.Effect<A, E, R>) => Effect.flatMap(Effect.promise(load), use)
const runSupervisor = lazy(() => import("../process/supervisor.ts"), (module) => module.runAll)
const runAllInOne = lazy(() => import("./roles.ts"), (module) => module.runAllInOne)
/** `all`: one process for one api process (API_PROCESSES=1), else a supervisor of api processes and a worker process. */
const runAll = Effect.gen(function*() {
  const { apiProcesses } = yield* AppConfig
  return yield* (apiProcesses === 1 ? runAllInOne : runSupervisor)
})
const runApi = lazy(() => import("./roles.ts"), (module) => module.runApi)
const runWorker = lazy(() => import("./roles.ts"), (module) => module.runWorker)
const admin = () => import("./admin.ts")

/** Runs `effect` with the checked configuration and JSON logs; `process` labels the log lines (`all`). */
const withConfig = <A, E, R>(effect: Effect.Effect<A, E, R>, process?: string) =>
  AppConfig.load.pipe(
    // The CLI prints a failed command's message alone: here one line per bad variable, then exit 1.
    Effect.mapError((invalid) => new CliError.UserError({ cause: invalid, userMessage: invalid.message })),
    Effect.flatMap((config) =>
      effect.pipe(
        // Every command reads time through Effect's Clock, shifted by CLOCK_OFFSET_MS (src/lib/clock.ts).
        Effect.provide(ClockLive),
        Effect.provideService(AppConfig, config),
        Effect.provide(LoggingLive(config.logLevel, process))
      )
    )
  )

const all = Command.make("all", {}, () => withConfig(runAll, "all")).pipe(
  Command.withShortDescription("the api and the worker together (the default; npm start)"),
  Command.withDescription(
    "Run the service (what `npm start` runs, and the default command). With API_PROCESSES=1 the api and " +
      "the worker run in this one process, the worker on a thread of its own with WORKER_THREAD. With more, API_PROCESSES api processes sharing PORT and one worker " +
      "process, started, logged and stopped together; a process that dies is restarted."
  )
)

const api = Command.make("api", {}, () => withConfig(runApi)).pipe(
  Command.withShortDescription("the HTTP api only"),
  Command.withDescription(
    "Run the HTTP api only: stateless, run as many as you like (they can share PORT). SIGTERM stops accepting " +
      "connections, finishes the requests in flight (10 s at most) and exits 0."
  )
)

const worker = Command.make("worker", {}, () => withConfig(runWorker)).pipe(
  Command.withShortDescription("the stream worker only"),
  Command.withDescription(
    "Run the stream worker only: partition leases, consumers, project actors, outbox relay (run several). " +
      "Serves /metrics on METRICS_PORT when set."
  )
)

const migrate = Command.make("migrate", {}, () => withConfig(lazy(admin, (module) => module.migrate))).pipe(
  Command.withShortDescription("apply database migrations and exit"),
  Command.withDescription("Apply migrations/*.sql and exit (every role also migrates at start-up).")
)

const create = Command.make("create", {
  name: Flag.String("name").pipe(
    Flag.withDescription("the project's name"),
    Flag.filterMap((name) => Option.liftPredicate(name.trim(), (trimmed) => trimmed !== ""), () => "Expected a non-empty name")
  )
}, ({ name }) => withConfig(lazy(admin, (module) => module.createProject(name)))).pipe(
  Command.withShortDescription("create a project; prints { id, name, publicKey, secretKey }"),
  Command.withDescription(
    "Create a project and its two keys. Prints only { id, name, publicKey, secretKey } as JSON on stdout " +
      "(logs go to stderr)."
  ),
  Command.withExamples([{ command: 'npm run cli -- project create --name "My app"' }])
)

/** `default` (the deployment's SEND_RATE_PER_SECOND) or emails per second, 0 meaning unthrottled. */
const sendRate = (text: string): Option.Option<"default" | number> =>
  text === "default" ? Option.some("default") : /^\d+(\.\d+)?$/.test(text) ? Option.some(Number(text)) : Option.none()

const settings = Command.make("settings", {
  id: Flag.String("id").pipe(
    Flag.withDescription("the project's id"),
    Flag.filterMap((id) => Option.liftPredicate(id, isUuid), () => "Expected a project id (a UUID)")
  ),
  sendRate: Flag.String("send-rate").pipe(
    Flag.withMetavar("N|default"),
    Flag.withDescription("emails per second (0 = unthrottled), or default for SEND_RATE_PER_SECOND"),
    Flag.filterMap(sendRate, () => "Expected a number of emails per second of at least 0, or default"),
    Flag.optional
  ),
  tracking: Flag.Literals("tracking", ["on", "off"]).pipe(
    Flag.withDescription("open and click tracking in the project's emails"),
    Flag.optional
  )
}, ({ id, sendRate, tracking }) => withConfig(lazy(admin, (module) => module.projectSettings(id, sendRate, tracking)))).pipe(
  Command.validate(({ sendRate, tracking }) =>
    Option.isNone(sendRate) && Option.isNone(tracking)
      ? Effect.fail(new CliError.ValidationError({ message: "Nothing to change: give --send-rate, --tracking or both" }))
      : Effect.void
  ),
  Command.withShortDescription("a project's send throttle and open/click tracking"),
  Command.withDescription("Change a project's send throttle and open/click tracking; prints its settings as JSON."),
  Command.withExamples([{ command: "npm run cli -- project settings --id <id> --send-rate 20 --tracking off" }])
)

const createUser = Command.make("create", {
  email: Flag.String("email").pipe(
    Flag.withDescription("the user's email (their sign-in)"),
    Flag.filterMap((email) => Option.liftPredicate(normalizeEmail(email), isValidEmail), () => "Expected a valid email address")
  ),
  passwordStdin: Flag.Boolean("password-stdin").pipe(Flag.withDescription("read the password from standard input (required)"))
}, ({ email, passwordStdin }) => withConfig(lazy(admin, (module) => module.createUser(email, passwordStdin)))).pipe(
  Command.withShortDescription("create a dashboard user; prints { id, email }"),
  Command.withDescription(
    "Create a dashboard user (email verified) for scripted installs; the password is read from standard input. " +
      "The first user of an installation owns the projects created so far (or a first project)."
  ),
  Command.withExamples([{ command: 'printf %s "$PASSWORD" | npm run cli -- user create --email ops@example.com --password-stdin' }])
)

const user = Command.make("user").pipe(
  Command.withDescription("Create dashboard users."),
  Command.withSubcommands([createUser])
)

const project = Command.make("project").pipe(
  Command.withDescription("Create projects and change their settings."),
  Command.withSubcommands([create, settings])
)

const DESCRIPTION = `mailstream: a self-hostable email engagement platform. Without a command it runs \`all\`.

ENVIRONMENT (read and checked at start; a bad value stops the command with one line naming it; empty = unset)
${environmentHelp()}`

export const VERSION = "0.1.0"

/** The whole CLI: run by src/main.ts; its help pages are also rendered at build time (./helpTable.ts). */
export const command = Command.make("mailstream", {}, () => withConfig(runAll, "all")).pipe(
  Command.withDescription(DESCRIPTION),
  Command.withSubcommands([all, api, worker, migrate, project, user])
)

export const cli = Command.run(command, { version: VERSION })
