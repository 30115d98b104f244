/**
 * `all`'s worker on a thread of its own (WORKER_THREAD, with API_PROCESSES=1): the same entry point as a
 * worker process (`main worker`), run by `node:worker_threads` in this process, so the api's event loop
 * and the worker's each have a core under load, for a fraction of a second process's memory. It says it
 * is ready and sends its metrics as a worker process does (child.ts), over the thread's port; its log
 * lines are relayed labelled `worker`; it is stopped by a message (threads get no signals) and restarted
 * with backoff if it dies, like a child process (supervise.ts).
 */
import { Deferred, Effect, Fiber, Layer, Option } from "effect"
import { Worker } from "node:worker_threads"
import { dirname, join } from "node:path"
import { pathToFileURL } from "node:url"
import { COMPILED, MAIN_ENTRY } from "../lib/installation.ts"
import { type MetricsSnapshot, setPeerSnapshot } from "../observability/Metrics.ts"
import { STOP_MESSAGE, type ThreadData } from "./child.ts"
import { relayLines } from "./lines.ts"
import { decodeChildMessage } from "./messages.ts"
import { type Child, type ExitInfo, supervise } from "./supervise.ts"

const NAME = "worker"

/** The thread's entry: src/workerThreadMain.ts, beside main.ts; once compiled (scripts/build.ts), beside main.js. */
const THREAD_ENTRY = COMPILED
  ? pathToFileURL(join(dirname(MAIN_ENTRY), "workerThread.js"))
  : new URL("../workerThreadMain.ts", import.meta.url)

/**
 * The thread's young generation: V8's default for a thread holds ~20 MiB more of an idle `all`'s memory;
 * this is the main thread's own size, so the worker collects as often as it would in a process.
 */
const YOUNG_GENERATION_MB = 16

/** One run of the worker thread. */
const spawnThread = Effect.sync((): Child => {
  const data: ThreadData = { supervisedThread: true }
  const thread = new Worker(THREAD_ENTRY, {
    workerData: data,
    stdout: true,
    stderr: true,
    resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB }
  })
  relayLines(thread.stdout, process.stdout, NAME)
  relayLines(thread.stderr, process.stderr, NAME)
  let running = true
  const ready = new Promise<void>((resolve) => {
    thread.on("message", (raw) => {
      Option.map(decodeChildMessage(raw), (message) => {
        if (message._tag === "Ready") resolve()
        else setPeerSnapshot(NAME, message.snapshot as unknown as MetricsSnapshot)
      })
    })
  })
  const exited = new Promise<ExitInfo>((resolve) => {
    thread.once("exit", (code) => {
      running = false
      setPeerSnapshot(NAME, undefined)
      resolve({ code, signal: null })
    })
  })
  // An uncaught error ends the thread (its "exit" follows); said here since its stderr may not have it.
  thread.on("error", (error) => {
    Effect.runFork(Effect.logError(`${NAME} thread failed`, error))
  })
  return {
    id: { threadId: thread.threadId },
    ready,
    exited,
    running: () => running,
    requestStop: () => thread.postMessage(STOP_MESSAGE),
    kill: () => void thread.terminate()
  }
})

/** The worker thread, supervised: built once it is first ready (or failed if it never was), stopped with the layer. */
export const WorkerThreadLive = Layer.effectDiscard(Effect.gen(function*() {
  const firstReady = yield* Deferred.make<void>()
  const supervising = yield* supervise({ name: NAME, start: spawnThread }, Deferred.succeed(firstReady, undefined)).pipe(
    Effect.forkScoped
  )
  yield* Effect.raceFirst(Deferred.await(firstReady), Fiber.join(supervising))
}))
