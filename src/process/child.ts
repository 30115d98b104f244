/**
 * The side of a process that `all` started (it has an IPC channel to `all`): it says when it is ready,
 * shares its metrics with its siblings (an api process renders them all at /metrics), and exits at once
 * when `all` is gone, so killing `all`, even with SIGKILL, leaves no process behind.
 */
import { Effect, Option, Schedule, type Scope } from "effect"
import { type MetricsSnapshot, ownSnapshot, setPeerSnapshot, snapshot } from "../observability/Metrics.ts"
import { type ChildMessage, decodePeerMetrics, type WireMetrics } from "./messages.ts"

/** How often this process's metrics are looked at; sent when its own (`mailstream_*`) changed. */
const METRICS_EVERY = "2 seconds"
/**
 * Node's process metrics (CPU, memory, event-loop lag) change at every look: sent along with the next
 * change, or this often at least, so an idle process does not keep its siblings busy for them.
 */
const PROCESS_METRICS_EVERY_MS = 15_000

export const isSupervised = (): boolean => process.channel !== undefined

const send = (message: ChildMessage) =>
  Effect.sync(() => {
    // The callback keeps a send racing the channel's close from throwing.
    if (process.connected) process.send?.(message, undefined, {}, () => {})
  })

/** From the start: if `all` goes away (its channel closes) this process goes too, like a crash would. */
export const exitWithSupervisor = Effect.sync(() => {
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
