/**
 * Preloaded into a process under measurement (`node --import ./bench/harness/countPgWrites.ts`): counts
 * the messages it writes to Postgres sockets (one per statement the client sends: a round trip), and
 * the COMMITs among them (one per transaction), into the file named by PG_WRITES_FILE every 250 ms.
 */
import { writeFileSync } from "node:fs"
import net from "node:net"

const file = process.env.PG_WRITES_FILE
const port = Number(process.env.PG_PORT ?? 5432)
let writes = 0
let commits = 0
const COMMIT = Buffer.from("COMMIT")
const write = net.Socket.prototype.write
net.Socket.prototype.write = function(this: net.Socket, chunk: unknown, ...rest: Array<unknown>) {
  if (this.remotePort === port) {
    writes++
    const bytes = chunk instanceof Uint8Array ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : undefined
    if ((typeof chunk === "string" && chunk.includes("COMMIT")) || bytes?.includes(COMMIT)) commits++
  }
  return (write as (...args: Array<unknown>) => boolean).call(this, chunk, ...rest)
} as typeof net.Socket.prototype.write
if (file) setInterval(() => writeFileSync(file, JSON.stringify({ writes, commits })), 250).unref()
