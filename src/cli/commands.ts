/**
 * The CLI (`npm run cli -- <command>`, `node src/main.ts <command>`): every command with its flags,
 * help and checks, on effect/cli. Every command that touches the deployment reads and checks the
 * environment first (`--help` lists it): a bad variable stops it with one line.
 */
import { Console, Effect, Layer, Option } from "effect"
import { CliError, Command, Flag } from "effect/cli"
import { AppConfig, environmentHelp } from "../config.ts"
import { isUuid } from "../domain/ids.ts"
import { ClockLive } from "../lib/clock.ts"
import { runAll } from "../process/supervisor.ts"
import { DatabaseLive } from "../store/db.ts"
import { Projects } from "../store/Projects.ts"
import { settleFirstUser } from "../accounts/firstUser.ts"
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, hashPassword } from "../accounts/Passwords.ts"
import { isValidEmail, normalizeEmail } from "../domain/email.ts"
import { Members } from "../store/Members.ts"
import { Users } from "../store/Users.ts"
import { LoggingLive } from "./logging.ts"
import { runApi, runWorker } from "./roles.ts"

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
      ))
  )

const ProjectsLive = Projects.layer.pipe(Layer.provideMerge(DatabaseLive))

const all = Command.make("all", {}, () => withConfig(runAll, "all")).pipe(
  Command.withShortDescription("api processes and a worker process together (the default; npm start)"),
  Command.withDescription(
    "Run the service: API_PROCESSES api processes sharing PORT and one worker process, started, logged and " +
      "stopped together (what `npm start` runs, and the default command). A process that dies is restarted."
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

const migrate = Command.make("migrate", {}, () =>
  withConfig(Effect.logInfo("database is migrated").pipe(Effect.provide(DatabaseLive)))).pipe(
    Command.withShortDescription("apply database migrations and exit"),
    Command.withDescription("Apply migrations/*.sql and exit (every role also migrates at start-up).")
  )

const create = Command.make("create", {
  name: Flag.String("name").pipe(
    Flag.withDescription("the project's name"),
    Flag.filterMap((name) => Option.liftPredicate(name.trim(), (trimmed) => trimmed !== ""), () => "Expected a non-empty name")
  )
}, ({ name }) =>
  withConfig(Effect.gen(function*() {
    const project = yield* (yield* Projects).create(name)
    yield* Console.log(JSON.stringify({
      id: project.id,
      name: project.name,
      publicKey: project.publicKey,
      secretKey: project.secretKey
    }))
  }).pipe(Effect.provide(ProjectsLive)))).pipe(
    Command.withShortDescription("create a project; prints { id, name, publicKey, secretKey }"),
    Command.withDescription(
      "Create a project and its two keys. Prints only { id, name, publicKey, secretKey } as JSON on stdout " +
        "(logs go to stderr)."
    ),
    Command.withExamples([{ command: "npm run cli -- project create --name \"My app\"" }])
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
}, ({ id, sendRate, tracking }) =>
  withConfig(Effect.gen(function*() {
    const projects = yield* Projects
    const found = yield* projects.updateMailSettings(id, {
      sendRatePerSecond: Option.match(sendRate, { onNone: () => undefined, onSome: (rate) => rate === "default" ? null : rate }),
      trackingEnabled: Option.match(tracking, { onNone: () => undefined, onSome: (value) => value === "on" })
    })
    if (!found) return yield* new CliError.UserError({ cause: undefined, userMessage: `No project ${id}` })
    const { sendRatePerSecond, trackingEnabled } = yield* projects.mailSettings(id)
    yield* Console.log(JSON.stringify({ id, sendRatePerSecond, trackingEnabled }))
  }).pipe(Effect.provide(ProjectsLive)))).pipe(
    Command.validate(({ sendRate, tracking }) =>
      Option.isNone(sendRate) && Option.isNone(tracking)
        ? Effect.fail(new CliError.ValidationError({ message: "Nothing to change: give --send-rate, --tracking or both" }))
        : Effect.void),
    Command.withShortDescription("a project's send throttle and open/click tracking"),
    Command.withDescription("Change a project's send throttle and open/click tracking; prints its settings as JSON."),
    Command.withExamples([{ command: "npm run cli -- project settings --id <id> --send-rate 20 --tracking off" }])
  )

/** All of standard input, without its final newline (a password piped in by a script). */
const readStdin = Effect.promise(async () => {
  const chunks: Array<Buffer> = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "")
})

const AccountsCliLive = Layer.mergeAll(Users.layer, Members.layer, Projects.layer).pipe(Layer.provideMerge(DatabaseLive))

const createUser = Command.make("create", {
  email: Flag.String("email").pipe(
    Flag.withDescription("the user's email (their sign-in)"),
    Flag.filterMap((email) => Option.liftPredicate(normalizeEmail(email), isValidEmail), () => "Expected a valid email address")
  ),
  passwordStdin: Flag.Boolean("password-stdin").pipe(Flag.withDescription("read the password from standard input (required)"))
}, ({ email, passwordStdin }) =>
  withConfig(Effect.gen(function*() {
    const fail = (userMessage: string) => new CliError.UserError({ cause: undefined, userMessage })
    if (!passwordStdin) return yield* fail("Give --password-stdin and pipe the password in (it never goes on the command line)")
    const password = yield* readStdin
    if (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
      return yield* fail(`The password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`)
    }
    const users = yield* Users
    const first = (yield* users.count) === 0
    // The operator vouches for the address: the user starts verified.
    const user = yield* users.create({ email, passwordHash: yield* hashPassword(password), emailVerified: true }).pipe(
      Effect.catchTag("EmailTaken", () => Effect.fail(fail(`${email} already has an account`)))
    )
    if (first) yield* settleFirstUser(yield* Members, yield* Projects, user.id)
    yield* Console.log(JSON.stringify({ id: user.id, email: user.email }))
  }).pipe(Effect.provide(AccountsCliLive)))).pipe(
    Command.withShortDescription("create a dashboard user; prints { id, email }"),
    Command.withDescription(
      "Create a dashboard user (email verified) for scripted installs; the password is read from standard input. " +
        "The first user of an installation owns the projects created so far (or a first project)."
    ),
    Command.withExamples([{ command: "printf %s \"$PASSWORD\" | npm run cli -- user create --email ops@example.com --password-stdin" }])
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

export const cli = Command.make("mailstream", {}, () => withConfig(runAll, "all")).pipe(
  Command.withDescription(DESCRIPTION),
  Command.withSubcommands([all, api, worker, migrate, project, user]),
  Command.run({ version: "0.1.0" })
)
