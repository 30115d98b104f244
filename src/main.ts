/**
 * The CLI: `api`, `worker`, `all` (default for `npm start`), `migrate`,
 * `project create --name <name>` (prints `{ id, name, publicKey, secretKey }` on stdout).
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer } from "effect"
import { AllRolesLive, ApiRoleLive, LoggingLive, StandaloneWorkerLive } from "./app.ts"
import { AppConfig } from "./config.ts"
import { DatabaseLive } from "./store/db.ts"
import { Projects } from "./store/Projects.ts"

const USAGE = `usage: npm run cli -- <command>
  api | worker | all         run the HTTP api, the stream worker, or both in one process
  migrate                    apply database migrations and exit
  project create --name N    create a project; prints { id, name, publicKey, secretKey } as JSON
  project settings --id ID [--send-rate N|default] [--tracking on|off]
                             per-project send throttle (emails/s, 0 = off) and open/click tracking`

const [command, ...rest] = process.argv.slice(2)

const option = (name: string): string | undefined => {
  const index = rest.indexOf(`--${name}`)
  return index >= 0 ? rest[index + 1] : rest.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3)
}

const serve = (layer: Layer.Layer<never, unknown, AppConfig>, role: string) =>
  Layer.launch(layer).pipe(Effect.tap(Effect.logInfo(`${role} stopped`)))

const projectSettings = (): Effect.Effect<void, unknown, AppConfig> => {
  const id = option("id")
  const rate = option("send-rate")
  const tracking = option("tracking")
  const sendRatePerSecond = rate === undefined ? undefined : rate === "default" ? null : Number(rate)
  if (
    !id || (rate === undefined && tracking === undefined) ||
    (typeof sendRatePerSecond === "number" && !(sendRatePerSecond >= 0)) ||
    (tracking !== undefined && tracking !== "on" && tracking !== "off")
  ) return Effect.fail(new Error(USAGE))
  return Effect.gen(function*() {
    const projects = yield* Projects
    const found = yield* projects.updateMailSettings(id, {
      sendRatePerSecond,
      trackingEnabled: tracking === undefined ? undefined : tracking === "on"
    })
    if (!found) return yield* Effect.fail(new Error(`no project ${id}`))
    yield* Console.log(JSON.stringify({ id, ...(yield* projects.mailSettings(id)), linkSecret: undefined }))
  }).pipe(Effect.provide(Projects.layer.pipe(Layer.provideMerge(DatabaseLive)))) as Effect.Effect<void, unknown, AppConfig>
}

const program = ((): Effect.Effect<void, unknown, AppConfig> => {
  switch (command) {
    case "api":
      return serve(ApiRoleLive as Layer.Layer<never, unknown, AppConfig>, "api")
    case "worker":
      return serve(StandaloneWorkerLive as Layer.Layer<never, unknown, AppConfig>, "worker")
    case "all":
    case undefined:
      return serve(AllRolesLive as Layer.Layer<never, unknown, AppConfig>, "all")
    case "migrate":
      return Effect.logInfo("database is migrated").pipe(Effect.provide(DatabaseLive)) as Effect.Effect<void, unknown, AppConfig>
    case "project": {
      if (rest[0] === "settings") return projectSettings()
      const name = option("name")
      if (rest[0] !== "create" || !name) return Effect.fail(new Error(USAGE))
      return Effect.gen(function*() {
        const projects = yield* Projects
        const project = yield* projects.create(name)
        yield* Console.log(JSON.stringify({
          id: project.id,
          name: project.name,
          publicKey: project.publicKey,
          secretKey: project.secretKey
        }))
      }).pipe(Effect.provide(Projects.layer.pipe(Layer.provideMerge(DatabaseLive)))) as Effect.Effect<void, unknown, AppConfig>
    }
    default:
      return Effect.fail(new Error(USAGE))
  }
})()

const main = Effect.gen(function*() {
  const config = yield* AppConfig.load
  return yield* program.pipe(
    Effect.provideService(AppConfig, config),
    Effect.provide(LoggingLive(config.logLevel))
  )
})

NodeRuntime.runMain(main)
