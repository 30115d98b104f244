/**
 * A TCP proxy a test controls, to put a network partition between a service process and a dependency:
 * `cut()` resets every connection through it and leaves new ones hanging unanswered (a peer behind a
 * partition neither accepts nor refuses), `restore()` forwards again (the hanging ones are dropped, so
 * their clients retry on a fresh connection).
 */
import { createServer, connect, type Socket } from "node:net"

export interface TcpProxy {
  /** `host:port` to point the client at. */
  readonly address: string
  readonly port: number
  /** Connections forwarded since the start. */
  readonly connections: () => number
  cut(): void
  restore(): void
  close(): Promise<void>
}

export const startTcpProxy = async (target: { readonly host: string; readonly port: number }): Promise<TcpProxy> => {
  const open = new Set<Socket>()
  const hanging = new Set<Socket>()
  let partitioned = false
  let forwarded = 0
  const server = createServer((client) => {
    client.on("error", () => undefined)
    if (partitioned) {
      hanging.add(client)
      client.once("close", () => hanging.delete(client))
      return
    }
    forwarded++
    const upstream = connect(target.port, target.host)
    upstream.on("error", () => client.resetAndDestroy())
    client.on("error", () => upstream.resetAndDestroy())
    for (const socket of [client, upstream]) {
      open.add(socket)
      socket.once("close", () => open.delete(socket))
    }
    client.once("close", () => upstream.destroy())
    upstream.once("close", () => client.destroy())
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as { port: number }).port
  return {
    address: `127.0.0.1:${port}`,
    port,
    connections: () => forwarded,
    cut() {
      partitioned = true
      for (const socket of open) socket.resetAndDestroy()
    },
    restore() {
      partitioned = false
      for (const socket of hanging) socket.resetAndDestroy()
    },
    close() {
      for (const socket of [...open, ...hanging]) socket.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
