/**
 * Composing and signing off the event loop: a pool of `worker_threads` (src/mail/composeWorker.ts) that
 * turn nodemailer message options into the signed message's bytes, so the MIME building and the RSA
 * signature of each mail (the largest cost of sending) run beside the event loop instead of on it.
 *
 * The threads start on the first message and stop after IDLE_MS without one (an idle worker keeps no
 * thread alive), are unref'd (they never keep the process alive), and are terminated when the pool's
 * scope closes. Each message goes to the thread with the fewest in flight. A thread that dies fails only
 * its own messages (the sender retries them) and is replaced on the next message. With no threads
 * (`threads: 0`) messages are composed on the event loop, the same way.
 */
import { Effect } from "effect"
import nodemailer from "nodemailer"
import { dirname, join } from "node:path"
import { pathToFileURL } from "node:url"
import { Worker } from "node:worker_threads"
import type Mail from "nodemailer/lib/mailer"
import { type Composed, type ComposeOptions, composeRaw, type ComposeReply, type ComposeRequest } from "./composeRaw.ts"
import { COMPILED, MAIN_ENTRY } from "../lib/installation.ts"

/** Threads stop after this long without a message. */
const IDLE_MS = 30_000

/**
 * Each thread's young generation. Left to V8 it grows with the churn of composing (hundreds of MiB of
 * RSS over a few thousand mails); this small it stays flat, and a thread composes as fast.
 */
const YOUNG_GENERATION_MB = 4

/**
 * The thread's entry: beside this module in the sources; once compiled (scripts/build.ts), its own entry
 * beside the bundle's main.js, since this module lands in a chunk of its own elsewhere.
 */
const WORKER_URL = COMPILED
  ? pathToFileURL(join(dirname(MAIN_ENTRY), "composeWorker.js"))
  : new URL("./composeWorker.ts", import.meta.url)

interface Pending {
  readonly resolve: (composed: Composed) => void
  readonly reject: (error: Error) => void
}

interface Thread {
  readonly worker: Worker
  readonly pending: Map<number, Pending>
}

export interface ComposePool {
  /** The message's bytes, composed and (when it has a `dkim` key) signed; rejects when it cannot be composed. */
  readonly compose: (message: Mail.Options, options?: ComposeOptions) => Promise<Composed>
  /** Threads running now (0 when idle). */
  readonly threads: () => number
}

const composeInline = (): ComposePool => {
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true })
  return { compose: (message, options) => composeRaw(transport, message, options), threads: () => 0 }
}

/** A pool of `threads` threads (0: on the event loop), closed with the scope; threads stop after `idleMs` without work. */
export const makeComposePool = (threads: number, idleMs = IDLE_MS) =>
  threads <= 0
    ? Effect.succeed(composeInline())
    : Effect.acquireRelease(Effect.sync(() => startPool(threads, idleMs)), (pool) => Effect.promise(() => pool.close()))

const startPool = (size: number, idleMs: number): ComposePool & { readonly close: () => Promise<void> } => {
  const running: Array<Thread> = []
  let nextId = 0
  let closed = false
  let idleTimer: NodeJS.Timeout | undefined

  const fail = (thread: Thread, error: Error) => {
    const index = running.indexOf(thread)
    if (index !== -1) running.splice(index, 1)
    for (const pending of thread.pending.values()) pending.reject(error)
    thread.pending.clear()
  }

  const start = (): Thread => {
    const worker = new Worker(WORKER_URL, { resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } })
    const thread: Thread = { worker, pending: new Map() }
    worker.unref()
    worker.on("message", (reply: ComposeReply) => {
      const pending = thread.pending.get(reply.id)
      if (!pending) return
      thread.pending.delete(reply.id)
      if (thread.pending.size === 0) scheduleIdle()
      if (reply.error !== undefined) return pending.reject(new Error(reply.error))
      pending.resolve({ raw: Buffer.from(reply.raw.buffer, reply.raw.byteOffset, reply.raw.byteLength), envelope: reply.envelope })
    })
    worker.on("error", (error) => fail(thread, new Error(`the compose thread failed: ${error.message}`)))
    worker.on("exit", (code) => fail(thread, new Error(`the compose thread exited (${code})`)))
    running.push(thread)
    return thread
  }

  /** Stops the threads once none has had work for IDLE_MS. */
  const scheduleIdle = () => {
    if (idleTimer !== undefined) idleTimer.refresh()
    else {
      idleTimer = setTimeout(() => {
        idleTimer = undefined
        if (running.some((thread) => thread.pending.size > 0)) return scheduleIdle()
        for (const thread of running.splice(0)) void thread.worker.terminate()
      }, idleMs)
      idleTimer.unref()
    }
  }

  const pick = (): Thread => {
    let best: Thread | undefined
    for (const thread of running) if (best === undefined || thread.pending.size < best.pending.size) best = thread
    // A new thread while the pool is short of its size and every running thread has work.
    return best !== undefined && (best.pending.size === 0 || running.length >= size) ? best : start()
  }

  return {
    compose: (message, options = {}) =>
      new Promise<Composed>((resolve, reject) => {
        if (closed) return reject(new Error("the compose pool is closed"))
        const thread = pick()
        const id = nextId++
        thread.pending.set(id, { resolve, reject })
        try {
          thread.worker.postMessage({ id, message, options } satisfies ComposeRequest)
        } catch (error) {
          thread.pending.delete(id)
          reject(error instanceof Error ? error : new Error(String(error)))
        }
      }),
    threads: () => running.length,
    close: async () => {
      closed = true
      if (idleTimer !== undefined) clearTimeout(idleTimer)
      await Promise.all(running.splice(0).map((thread) => thread.worker.terminate()))
    }
  }
}
