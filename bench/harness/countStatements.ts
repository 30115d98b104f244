/**
 * Preloaded into a process under measurement (`BENCH_IMPORT=./bench/harness/countStatements.ts`, which the
 * environment passes as `--import` to every role it starts): counts the statements it sends to Postgres, by
 * text (extended protocol: each Bind counted under its Parse's text; simple queries as `Q <text>`), into
 * `$STMT_FILE.<pid>` (default /tmp/statements) every second, most frequent first. For finding which
 * statements a benchmark's work costs per unit; the counts cover the process's whole life.
 */
import { writeFileSync } from "node:fs"
import net from "node:net"
import { isMainThread } from "node:worker_threads"

const file = `${process.env.STMT_FILE ?? "/tmp/statements"}.${process.pid}`
const port = Number(process.env.PG_PORT ?? 5432)
const texts = new Map<string, string>()
const counts = new Map<string, number>()
const bump = (text: string) => counts.set(text, (counts.get(text) ?? 0) + 1)
const cString = (buffer: Buffer, at: number): [string, number] => {
  const end = buffer.indexOf(0, at)
  return [buffer.toString("utf8", at, end), end + 1]
}
const short = (text: string, length: number) => text.replace(/\s+/g, " ").trim().slice(0, length)

/** The protocol messages of one write (a message split over writes is not counted). */
const scan = (buffer: Buffer) => {
  let at = 0
  while (at + 5 <= buffer.length) {
    const type = buffer[at]
    const body = at + 5
    if (type === 0x50) { // Parse: name, text
      const [name, next] = cString(buffer, body)
      texts.set(name, short(cString(buffer, next)[0], 110))
    } else if (type === 0x42) { // Bind: portal, statement name
      const [, next] = cString(buffer, body)
      const [name] = cString(buffer, next)
      bump(texts.get(name) ?? `?${name}`)
    } else if (type === 0x51) { // Query
      bump(`Q ${short(cString(buffer, body)[0], 100)}`)
    }
    at = body + buffer.readInt32BE(at + 1) - 4
  }
}

const write = net.Socket.prototype.write
net.Socket.prototype.write = function(this: net.Socket, chunk: unknown, ...rest: Array<unknown>) {
  if (this.remotePort === port) {
    try {
      if (typeof chunk === "string") scan(Buffer.from(chunk))
      else if (chunk instanceof Uint8Array) scan(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength))
    } catch {
      // A message cut at the end of a write: the rest of this write is not counted.
    }
  }
  return (write as (...args: Array<unknown>) => boolean).call(this, chunk, ...rest)
} as typeof net.Socket.prototype.write
// `--import` runs in a process's worker threads too (the compose pool's): only the main thread writes the file.
if (isMainThread) setInterval(() => writeFileSync(file, JSON.stringify([...counts].sort((a, b) => b[1] - a[1]))), 1000).unref()
