/** The plain-code group commit: what arrives while flushes are busy goes to the next one; each caller hears once. */
import { describe, expect, it } from "vitest"
import { makeCallbackGroupCommit } from "../../src/lib/CallbackGroupCommit.ts"

/** A promise with its resolve and reject at hand. */
const gate = () => {
  let open!: () => void
  let fail!: (reason: unknown) => void
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve
    fail = reject
  })
  return { promise, open, fail }
}

const outcome = () => {
  const heard: Array<string | undefined> = []
  return { heard, done: (error: string | undefined) => void heard.push(error) }
}

const tick = () => new Promise((resolve) => setImmediate(resolve))

describe("makeCallbackGroupCommit", () => {
  it("flushes this turn's submissions together, then what queued while that flush ran, never splitting one", async () => {
    const flushes: Array<ReadonlyArray<number>> = []
    const first = gate()
    const batcher = makeCallbackGroupCommit<number, string>({
      flush: (items) => {
        flushes.push(items)
        return flushes.length === 1 ? first.promise : Promise.resolve()
      },
      toError: String,
      maxBatch: 4,
      concurrency: 1
    })
    const a = outcome()
    batcher.submit([0], a.done)
    batcher.submit([1], a.done)
    await tick()
    expect(flushes).toEqual([[0, 1]])
    const b = outcome()
    batcher.submit([2, 3, 4], b.done)
    batcher.submit([5, 6], b.done)
    batcher.submit([7, 8, 9, 10, 11], b.done)
    batcher.submit([], b.done)
    // The empty submission is answered at once; the rest wait for the flush in flight.
    expect(b.heard).toEqual([undefined])
    first.open()
    await tick()
    await tick()
    expect(flushes).toEqual([[0, 1], [2, 3, 4], [5, 6], [7, 8, 9, 10, 11]])
    expect(a.heard).toEqual([undefined, undefined])
    expect(b.heard).toEqual([undefined, undefined, undefined, undefined])
    batcher.close()
  })

  it("runs up to `concurrency` flushes at once and fails every submission of a failed flush", async () => {
    const gates = [gate(), gate()]
    let started = 0
    const batcher = makeCallbackGroupCommit<number, string>({
      flush: () => gates[started++]!.promise,
      toError: (reason) => `failed: ${String(reason)}`,
      maxBatch: 1,
      concurrency: 2
    })
    const heard = outcome()
    batcher.submit([1], heard.done)
    batcher.submit([2], heard.done)
    await tick()
    expect(started).toBe(2)
    gates[1]!.fail("down")
    gates[0]!.open()
    await tick()
    expect(heard.heard.sort()).toEqual([undefined, "failed: down"].sort())
    batcher.close()
  })

  it("starts a flush beside a running one only once busyFlushAt items wait", async () => {
    const flushes: Array<ReadonlyArray<number>> = []
    const gates: Array<ReturnType<typeof gate>> = []
    const batcher = makeCallbackGroupCommit<number, string>({
      flush: (items) => {
        flushes.push(items)
        const each = gate()
        gates.push(each)
        return each.promise
      },
      toError: String,
      maxBatch: 10,
      concurrency: 3,
      busyFlushAt: 3
    })
    const heard = outcome()
    batcher.submit([1], heard.done)
    await tick()
    // One flush runs: two items wait for it...
    batcher.submit([2], heard.done)
    batcher.submit([3], heard.done)
    await tick()
    expect(flushes).toEqual([[1]])
    // ...a third makes a backlog, which gets a second flush.
    batcher.submit([4], heard.done)
    await tick()
    expect(flushes).toEqual([[1], [2, 3, 4]])
    batcher.submit([5], heard.done)
    gates[0]!.open()
    await tick()
    // The first flush ended, the second still runs: one item is no backlog, it waits for that one.
    expect(flushes).toEqual([[1], [2, 3, 4]])
    gates[1]!.open()
    await tick()
    expect(flushes).toEqual([[1], [2, 3, 4], [5]])
    gates[2]!.open()
    await tick()
    expect(heard.heard).toEqual([undefined, undefined, undefined, undefined, undefined])
    batcher.close()
  })

  it("answers a submission that waited past maxWait, once, and leaves later ones alone", async () => {
    const stalled = gate()
    let flushes = 0
    const batcher = makeCallbackGroupCommit<number, string>({
      flush: () => (flushes++ === 0 ? stalled.promise : Promise.resolve()),
      toError: String,
      maxBatch: 10,
      concurrency: 1,
      maxWait: { millis: 300, onTimeout: () => "timed out" }
    })
    const started = Date.now()
    let calls = 0
    const waited = await new Promise<{ error: string | undefined; ms: number }>((resolve) =>
      batcher.submit([1], (error) => {
        calls++
        resolve({ error, ms: Date.now() - started })
      })
    )
    expect(waited.error).toBe("timed out")
    expect(waited.ms).toBeGreaterThanOrEqual(300)
    expect(waited.ms).toBeLessThan(300 + 250 + 200)
    const late = outcome()
    batcher.submit([2], late.done)
    // The stalled flush ends after its submission was answered: that one hears nothing more.
    stalled.open()
    await new Promise((resolve) => setTimeout(resolve, 700))
    expect(late.heard).toEqual([undefined])
    expect(calls).toBe(1)
    batcher.close()
  })
})
