/**
 * Preloaded into a process under measurement (`BENCH_IMPORT=./bench/harness/sampleMemory.ts`; `--import`
 * runs in worker threads too): every thread appends its heap figures to `$MEM_FILE.<pid>` (default
 * /tmp/memory) every 2 s as JSON lines, so a growing RSS can be placed in a thread and a heap space (or
 * outside the heaps: native memory, buffers). MEM_GC=<seconds>: a full collection first every so often,
 * so that sample's `heapUsed` is what is live, not garbage V8 has not collected yet. SIGUSR2 writes a heap
 * snapshot of the main thread to the working directory.
 */
import { appendFileSync } from "node:fs"
import v8 from "node:v8"
import { runInNewContext } from "node:vm"
import { isMainThread, threadId } from "node:worker_threads"

const file = `${process.env.MEM_FILE ?? "/tmp/memory"}.${process.pid}`
const gcEvery = Number(process.env.MEM_GC ?? 0) * 1000
v8.setFlagsFromString("--expose-gc")
const gc = runInNewContext("gc") as () => void
const mib = (bytes: number) => Math.round(bytes / 2 ** 20 * 10) / 10
let lastGc = Date.now()
const sample = () => {
  const collected = gcEvery > 0 && Date.now() - lastGc >= gcEvery
  if (collected) {
    gc()
    lastGc = Date.now()
  }
  const usage = process.memoryUsage()
  const heap = v8.getHeapStatistics()
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((space) => [space.space_name, mib(space.space_used_size)]))
  appendFileSync(
    file,
    JSON.stringify({
      at: Date.now(),
      thread: threadId,
      collected,
      rss: mib(usage.rss),
      heapTotal: mib(heap.total_heap_size),
      heapUsed: mib(heap.used_heap_size),
      external: mib(heap.external_memory),
      arrayBuffers: mib(usage.arrayBuffers),
      malloced: mib(heap.malloced_memory),
      spaces
    }) + "\n"
  )
}
setInterval(sample, 2_000).unref()
if (isMainThread) process.on("SIGUSR2", () => console.error(`heap snapshot: ${v8.writeHeapSnapshot()}`))
