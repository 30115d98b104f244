/**
 * Keeping one of `all`'s children running: a child process (supervisor.ts) or the worker's thread
 * (workerThread.ts), restarted with a growing delay when it exits. Until it was first ready a failure is
 * the whole start's (bad database URL, port taken): it fails `all`.
 */
import { Data, Duration, Effect, Option } from "effect"

/** After a stop request a child has this long (the api finishes requests in flight within 10 s), then it is killed. */
export const STOP_TIMEOUT = Duration.seconds(12)
/** Restart delays double from the first to the longest; a child that lived a minute starts over. */
const FIRST_RESTART_DELAY_MS = 500
const LONGEST_RESTART_DELAY_MS = 30_000
const STABLE_AFTER_MS = 60_000

export interface ExitInfo {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export class ChildFailedToStart extends Data.TaggedError("ChildFailedToStart")<{ readonly name: string } & ExitInfo> {
  override get message() {
    return `${this.name} exited before it was ready (${this.signal ?? `code ${this.code}`})`
  }
}

/** One run of a child: its readiness and its exit as promises, and how to stop it. */
export interface Child {
  /** For the log line that says it started. */
  readonly id: Record<string, number | undefined>
  readonly ready: Promise<void>
  readonly exited: Promise<ExitInfo>
  readonly running: () => boolean
  /** Asks for the graceful stop (SIGTERM, or a message to a thread). */
  readonly requestStop: () => void
  /** Ends it at once (SIGKILL, or terminating a thread). */
  readonly kill: () => void
}

/** A bounded wait for the graceful stop, then the kill. */
const stopChild = (name: string, child: Child) =>
  Effect.gen(function*() {
    if (!child.running()) return
    child.requestStop()
    const exited = yield* Effect.promise(() => child.exited).pipe(Effect.timeoutOption(STOP_TIMEOUT))
    if (Option.isSome(exited)) return
    yield* Effect.logWarning(`${name} did not stop within ${Duration.format(STOP_TIMEOUT)}; killing it`)
    child.kill()
    yield* Effect.promise(() => child.exited)
  })

export interface SupervisedChild<C extends Child> {
  readonly name: string
  readonly start: Effect.Effect<C>
  /** Once a run of it is ready (e.g. an api process joins the metrics exchange). */
  readonly joined?: (child: C) => void
  /** Once a run of it exited. */
  readonly left?: () => void
}

/** Runs one child until it exits: whether it got ready, how it exited and how long it lived. */
const runChild = <C extends Child>(spec: SupervisedChild<C>, onReady: Effect.Effect<void>) =>
  Effect.scoped(Effect.gen(function*() {
    const child = yield* Effect.acquireRelease(spec.start, (child) => stopChild(spec.name, child))
    const startedAt = Date.now()
    yield* Effect.logInfo(`started process ${spec.name}`, { child: spec.name, ...child.id })
    const ready = yield* Effect.raceFirst(
      Effect.promise(() => child.ready).pipe(Effect.as(true)),
      Effect.promise(() => child.exited).pipe(Effect.as(false))
    )
    if (ready) {
      spec.joined?.(child)
      yield* onReady
    }
    const exit = yield* Effect.promise(() => child.exited)
    spec.left?.()
    return { ready, exit, livedMs: Date.now() - startedAt }
  }))

/** Keeps one child running; fails if it exits before it was first ready. */
export const supervise = <C extends Child>(spec: SupervisedChild<C>, onFirstReady: Effect.Effect<void>) =>
  Effect.gen(function*() {
    let everReady = false
    let quickExits = 0
    while (true) {
      const run = yield* runChild(spec, everReady ? Effect.logInfo(`${spec.name} restarted`) : onFirstReady)
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
