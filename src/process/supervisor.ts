/**
 * `all` (what `npm start` runs): the api processes (API_PROCESSES, sharing PORT) and one worker process
 * as children of this one, so a busy api event loop never holds back the worker, or the other way
 * round. Started together (`Listening on …` once every child is up), logged together (each line names
 * its process), stopped together (SIGTERM/SIGINT reach every child, which stop gracefully; then exit 0).
 * A child that dies is restarted with a growing delay; if this process dies, even by SIGKILL, the
 * children notice their IPC channel close and exit (see ./child.ts).
 */
import { Data, Deferred, Duration, Effect, Layer, Option } from "effect"
import { type ChildProcess, fork } from "node:child_process"
import { AppConfig } from "../config.ts"
import { MAIN_ENTRY } from "../lib/installation.ts"
import { relayLines } from "./lines.ts"
import { decodeChildMessage, type PeerMetrics, type WireMetrics as MetricsSnapshot } from "./messages.ts"
import { reservePort } from "./port.ts"

/** The children run the same code as this process: src/main.ts, or dist/main.js once compiled. */
const MAIN = MAIN_ENTRY
/** After SIGTERM a child has this long (the api finishes requests in flight within 10 s), then SIGKILL. */
const STOP_TIMEOUT = Duration.seconds(12)
/** Restart delays double from the first to the longest; a child that lived a minute starts over. */
const FIRST_RESTART_DELAY_MS = 500
const LONGEST_RESTART_DELAY_MS = 30_000
const STABLE_AFTER_MS = 60_000

interface ChildSpec {
  readonly name: string
  readonly role: "api" | "worker"
}

interface ExitInfo {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export class ChildFailedToStart extends Data.TaggedError("ChildFailedToStart")<{ readonly name: string } & ExitInfo> {
  override get message() {
    return `${this.name} exited before it was ready (${this.signal ?? `code ${this.code}`})`
  }
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

/** One run of a child process: its readiness and its exit as promises, its output relayed. */
interface Child {
  readonly process: ChildProcess
  readonly ready: Promise<void>
  readonly exited: Promise<ExitInfo>
}

const spawnChild = (spec: ChildSpec, port: number, metrics: MetricsExchange) =>
  Effect.sync((): Child => {
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
    return { process: child, ready, exited }
  })

/** SIGTERM, a bounded wait for the graceful stop, then SIGKILL. */
const stopChild = (spec: ChildSpec, child: Child) =>
  Effect.gen(function*() {
    if (child.process.exitCode !== null || child.process.signalCode !== null) return
    child.process.kill("SIGTERM")
    const exited = yield* Effect.promise(() => child.exited).pipe(Effect.timeoutOption(STOP_TIMEOUT))
    if (Option.isSome(exited)) return
    yield* Effect.logWarning(`${spec.name} did not stop within ${Duration.format(STOP_TIMEOUT)}; killing it`)
    child.process.kill("SIGKILL")
    yield* Effect.promise(() => child.exited)
  })

/** Runs one child until it exits: whether it got ready, how it exited and how long it lived. */
const runChild = (spec: ChildSpec, port: number, metrics: MetricsExchange, onReady: Effect.Effect<void>) =>
  Effect.scoped(Effect.gen(function*() {
    const child = yield* Effect.acquireRelease(spawnChild(spec, port, metrics), (child) => stopChild(spec, child))
    const startedAt = Date.now()
    yield* Effect.logInfo(`started process ${spec.name}`, { child: spec.name, pid: child.process.pid })
    const ready = yield* Effect.raceFirst(
      Effect.promise(() => child.ready).pipe(Effect.as(true)),
      Effect.promise(() => child.exited).pipe(Effect.as(false))
    )
    if (ready) {
      if (spec.role === "api") metrics.join(spec.name, child.process)
      yield* onReady
    }
    const exit = yield* Effect.promise(() => child.exited)
    metrics.leave(spec.name)
    return { ready, exit, livedMs: Date.now() - startedAt }
  }))

/**
 * Keeps one child running. Until it was first ready a failure is the whole start's (bad database URL,
 * port taken): it fails `all`. After that, a child that exits is restarted with backoff.
 */
const supervise = (spec: ChildSpec, port: number, metrics: MetricsExchange, onFirstReady: Effect.Effect<void>) =>
  Effect.gen(function*() {
    let everReady = false
    let quickExits = 0
    while (true) {
      const run = yield* runChild(spec, port, metrics, everReady ? Effect.logInfo(`${spec.name} restarted`) : onFirstReady)
      if (!everReady && !run.ready) return yield* new ChildFailedToStart({ name: spec.name, ...run.exit })
      everReady = true
      quickExits = run.livedMs >= STABLE_AFTER_MS ? 1 : quickExits + 1
      const delayMs = Math.min(LONGEST_RESTART_DELAY_MS, FIRST_RESTART_DELAY_MS * 2 ** (quickExits - 1))
      yield* Effect.logWarning(`${spec.name} exited unexpectedly; restarting it in ${delayMs} ms`, {
        child: spec.name,
        code: run.exit.code,
        signal: run.exit.signal
      })
      yield* Effect.sleep(delayMs)
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
  return yield* Effect.forEach(specs, (spec) => supervise(spec, port, metrics, onFirstReady), {
    concurrency: "unbounded",
    discard: true
  })
})).pipe(Effect.onInterrupt(() => Effect.logInfo("all stopped")))
