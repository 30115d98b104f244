/**
 * `all` (what `npm start` runs): the api processes (API_PROCESSES, sharing PORT) and one worker process
 * as children of this one, so a busy api event loop never holds back the worker, or the other way
 * round. Started together (`Listening on …` once every child is up), logged together (each line names
 * its process), stopped together (SIGTERM/SIGINT reach every child, which stop gracefully; then exit 0).
 * A child that dies is restarted with a growing delay; if this process dies, even by SIGKILL, the
 * children notice their IPC channel close and exit (see ./child.ts).
 */
import { Deferred, Effect, Layer, Option } from "effect"
import { type ChildProcess, fork } from "node:child_process"
import { AppConfig } from "../config.ts"
import { MAIN_ENTRY } from "../lib/installation.ts"
import { relayLines } from "./lines.ts"
import { decodeChildMessage, type PeerMetrics, type WireMetrics as MetricsSnapshot } from "./messages.ts"
import { reservePort } from "./port.ts"
import { type Child, type ExitInfo, supervise } from "./supervise.ts"

/** The children run the same code as this process: src/main.ts, or dist/main.js once compiled. */
const MAIN = MAIN_ENTRY

interface ChildSpec {
  readonly name: string
  readonly role: "api" | "worker"
}

const send = (child: ChildProcess, message: PeerMetrics) => {
  // The callback keeps a send racing the child's exit from throwing.
  if (child.connected) child.send(message, undefined, {}, () => {})
}

/** Each process's latest metrics, handed to every api process so any of them renders them all. */
class MetricsExchange {
  private readonly latest = new Map<string, MetricsSnapshot>()
  private readonly apis = new Map<string, ChildProcess>()

  publish(from: string, snapshot: MetricsSnapshot) {
    this.latest.set(from, snapshot)
    for (const [name, api] of this.apis) if (name !== from) send(api, { _tag: "PeerMetrics", peer: from, snapshot })
  }

  join(name: string, api: ChildProcess) {
    this.apis.set(name, api)
    for (const [peer, snapshot] of this.latest) if (peer !== name) send(api, { _tag: "PeerMetrics", peer, snapshot })
  }

  leave(name: string) {
    this.apis.delete(name)
    this.latest.delete(name)
    for (const api of this.apis.values()) send(api, { _tag: "PeerMetrics", peer: name })
  }
}

/** One run of a child process, its output relayed, its messages read. */
const spawnChild = (spec: ChildSpec, port: number, metrics: MetricsExchange) =>
  Effect.sync((): Child & { readonly process: ChildProcess } => {
    const child = fork(MAIN, [spec.role], {
      env: { ...process.env, PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe", "ipc"]
    })
    if (child.stdout) relayLines(child.stdout, process.stdout, spec.name)
    if (child.stderr) relayLines(child.stderr, process.stderr, spec.name)
    const ready = new Promise<void>((resolve) => {
      child.on("message", (raw) => {
        Option.map(
          decodeChildMessage(raw),
          (message) => message._tag === "Ready" ? resolve() : metrics.publish(spec.name, message.snapshot)
        )
      })
    })
    const exited = new Promise<ExitInfo>((resolve) => {
      child.once("exit", (code, signal) => resolve({ code, signal }))
      // A child that could not be spawned at all emits "error" and no "exit".
      child.once("error", () => resolve({ code: child.exitCode, signal: child.signalCode }))
    })
    return {
      process: child,
      id: { pid: child.pid },
      ready,
      exited,
      running: () => child.exitCode === null && child.signalCode === null,
      requestStop: () => child.kill("SIGTERM"),
      kill: () => child.kill("SIGKILL")
    }
  })

export const runAll = Effect.scoped(Effect.gen(function*() {
  const config = yield* AppConfig
  // Migrated here first: children starting together on a new database would race to create its tables.
  // The database layer is imported for that alone: the supervisor keeps nothing else of the service.
  const { DatabaseLive } = yield* Effect.promise(() => import("../store/db.ts"))
  yield* Effect.scoped(Layer.build(DatabaseLive))
  const reservation = config.port === 0 ? Option.some(yield* reservePort) : Option.none()
  const port = Option.match(reservation, { onNone: () => config.port, onSome: (held) => held.port })
  const specs: ReadonlyArray<ChildSpec> = [
    ...Array.from({ length: config.apiProcesses }, (_, index): ChildSpec => ({ name: `api-${index + 1}`, role: "api" })),
    { name: "worker", role: "worker" }
  ]
  const metrics = new MetricsExchange()
  const allReady = yield* Deferred.make<void>()
  let starting = specs.length
  const onFirstReady = Effect.suspend(() => --starting === 0 ? Deferred.succeed(allReady, undefined) : Effect.void)

  yield* Deferred.await(allReady).pipe(
    Effect.andThen(Option.match(reservation, { onNone: () => Effect.void, onSome: (held) => held.release })),
    Effect.andThen(Effect.logInfo(`Listening on http://0.0.0.0:${port}`, { apiProcesses: config.apiProcesses })),
    Effect.forkScoped
  )
  const supervised = (spec: ChildSpec) =>
    supervise({
      name: spec.name,
      start: spawnChild(spec, port, metrics),
      joined: (child) => {
        if (spec.role === "api") metrics.join(spec.name, child.process)
      },
      left: () => metrics.leave(spec.name)
    }, onFirstReady)
  return yield* Effect.forEach(specs, supervised, {
    concurrency: "unbounded",
    discard: true
  })
})).pipe(Effect.onInterrupt(() => Effect.logInfo("all stopped")))
