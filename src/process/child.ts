/**
 * The side of a process that `all` started (it has an IPC channel to `all`), or of `all`'s worker thread
 * (workerThread.ts): it says when it is ready, shares its metrics with its siblings (an api process
 * renders them all at /metrics), and exits at once when `all` is gone, so killing `all`, even with
 * SIGKILL, leaves no process behind. A thread gets no signals: `all` asks it to stop with a message.
 */
import { Effect, Option, Schedule, type Scope } from "effect"
import { isMainThread, parentPort, workerData } from "node:worker_threads"
import { type MetricsSnapshot, ownSnapshot, setPeerSnapshot, snapshot } from "../observability/Metrics.ts"
import { type ChildMessage, decodePeerMetrics, type WireMetrics } from "./messages.ts"

/** How often this process's metrics are looked at; sent when its own (`mailstream_*`) changed. */
const METRICS_EVERY = "2 seconds"
/**
 * Node's process metrics (CPU, memory, event-loop lag) change at every look: sent along with the next
 * change, or this often at least, so an idle process does not keep its siblings busy for them.
 */
const PROCESS_METRICS_EVERY_MS = 15_000

/** What `all` hands its worker thread (workerThread.ts). */
export interface ThreadData {
  readonly supervisedThread: true
}

/** `all`'s worker thread: its channel is the thread's port (dies with the process, needs no watching). */
const threadPort = !isMainThread && (workerData as Partial<ThreadData> | undefined)?.supervisedThread === true
  ? parentPort
  : null

export const isSupervised = (): boolean => threadPort !== null || process.channel !== undefined

const send = (message: ChildMessage) =>
  Effect.sync(() => {
    if (threadPort) return threadPort.postMessage(message)
    // The callback keeps a send racing the channel's close from throwing.
    if (process.connected) process.send?.(message, undefined, {}, () => {})
  })

/** What `all` sends its worker thread to stop it gracefully (a process gets SIGTERM instead). */
export const STOP_MESSAGE = { _tag: "Stop" } as const

/** Until `all` asks this thread to stop; never for a process (SIGTERM interrupts it). */
export const stopRequested: Effect.Effect<void> = Effect.callback<void>((resume) => {
  if (!threadPort) return
  const port = threadPort
  const onMessage = (message: unknown) => {
    if ((message as { _tag?: unknown } | null)?._tag === STOP_MESSAGE._tag) resume(Effect.void)
  }
  port.on("message", onMessage)
  return Effect.sync(() => port.off("message", onMessage))
})

/**
 * Once the role stopped: a thread ends here (a process ends when its event loop drains, or at SIGTERM's
 * exit; a thread's loop may still hold a timer of a library that Node would wait for).
 */
export const endIfThread = Effect.sync(() => {
  if (threadPort) process.exit(0)
})

/** From the start: if `all` goes away (its channel closes) this process goes too, like a crash would. */
export const exitWithSupervisor = Effect.sync(() => {
  if (threadPort) return
  if (!process.connected) process.exit(1)
  process.once("disconnect", () => process.exit(1))
  process.on("message", (message) => {
    Option.map(decodePeerMetrics(message), (peer) => setPeerSnapshot(peer.peer, peer.snapshot as unknown as MetricsSnapshot | undefined))
  })
})

/** Once the role is up: ready, then this process's metrics whenever they changed. */
export const reportReady: Effect.Effect<void, never, Scope.Scope> = Effect.gen(function*() {
  yield* send({ _tag: "Ready" })
  let last = ""
  let sentAt = 0
  // Every look reads this process's own metrics only; all of them (Node's too) are collected when sent.
  yield* Effect.promise(async () => {
    const own = JSON.stringify(await ownSnapshot())
    if (own === last && Date.now() - sentAt < PROCESS_METRICS_EVERY_MS) return undefined
    last = own
    sentAt = Date.now()
    return await snapshot()
  }).pipe(
    Effect.flatMap((current) =>
      current === undefined ? Effect.void : send({ _tag: "Metrics", snapshot: current as unknown as WireMetrics })
    ),
    Effect.repeat(Schedule.spaced(METRICS_EVERY)),
    Effect.forkScoped
  )
})
