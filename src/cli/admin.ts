/**
 * The bodies of the administration commands (`migrate`, `project create|settings`, `user create`),
 * imported by src/cli/commands.ts only when one of them runs: the database and argon2 stay out of
 * `--help` and of the long-running roles' start.
 */
import { Console, Effect, Layer, Option } from "effect"
import { CliError } from "effect/cli"
import { settleFirstUser } from "../accounts/firstUser.ts"
import { hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "../accounts/Passwords.ts"
import { DatabaseLive } from "../store/db.ts"
import { Members } from "../store/Members.ts"
import { Projects } from "../store/Projects.ts"
import { Users } from "../store/Users.ts"

const ProjectsLive = Projects.layer.pipe(Layer.provideMerge(DatabaseLive))
const AccountsLive = Layer.mergeAll(Users.layer, Members.layer, Projects.layer).pipe(Layer.provideMerge(DatabaseLive))

const userError = (userMessage: string) => new CliError.UserError({ cause: undefined, userMessage })

export const migrate = Effect.logInfo("database is migrated").pipe(Effect.provide(DatabaseLive))

export const createProject = (name: string) =>
  Effect.gen(function*() {
    const project = yield* (yield* Projects).create(name)
    yield* Console.log(JSON.stringify({
      id: project.id,
      name: project.name,
      publicKey: project.publicKey,
      secretKey: project.secretKey
    }))
  }).pipe(Effect.provide(ProjectsLive))

export const projectSettings = (
  id: string,
  sendRate: Option.Option<"default" | number>,
  tracking: Option.Option<"on" | "off">
) =>
  Effect.gen(function*() {
    const projects = yield* Projects
    const found = yield* projects.updateMailSettings(id, {
      sendRatePerSecond: Option.match(sendRate, { onNone: () => undefined, onSome: (rate) => rate === "default" ? null : rate }),
      trackingEnabled: Option.match(tracking, { onNone: () => undefined, onSome: (value) => value === "on" })
    })
    if (!found) return yield* userError(`No project ${id}`)
    const { sendRatePerSecond, trackingEnabled } = yield* projects.mailSettings(id)
    yield* Console.log(JSON.stringify({ id, sendRatePerSecond, trackingEnabled }))
  }).pipe(Effect.provide(ProjectsLive))

/** All of standard input, without its final newline (a password piped in by a script). */
const readStdin = Effect.promise(async () => {
  const chunks: Array<Buffer> = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "")
})

export const createUser = (email: string, passwordStdin: boolean) =>
  Effect.gen(function*() {
    if (!passwordStdin) return yield* userError("Give --password-stdin and pipe the password in (it never goes on the command line)")
    const password = yield* readStdin
    if (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
      return yield* userError(`The password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`)
    }
    const users = yield* Users
    const first = (yield* users.count) === 0
    // The operator vouches for the address: the user starts verified.
    const user = yield* users.create({ email, passwordHash: yield* hashPassword(password), emailVerified: true }).pipe(
      Effect.catchTag("EmailTaken", () => Effect.fail(userError(`${email} already has an account`)))
    )
    if (first) yield* settleFirstUser(yield* Members, yield* Projects, user.id)
    yield* Console.log(JSON.stringify({ id: user.id, email: user.email }))
  }).pipe(Effect.provide(AccountsLive))
