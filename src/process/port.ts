/**
 * PORT=0 under `all`: every api process must listen on the same port, so the supervisor picks one and
 * holds it (SO_REUSEPORT, like the api processes) until they all listen on it, then lets go. Holding it
 * means no other program can take the port between the pick and the api processes' bind.
 */
import { Effect } from "effect"
import { createServer, type Server } from "node:net"

export interface PortReservation {
  readonly port: number
  readonly release: Effect.Effect<void>
}

const close = (server: Server) =>
  Effect.callback<void>((resume) => {
    if (!server.listening) return resume(Effect.void)
    server.close(() => resume(Effect.void))
  })

/** A free port, held until `release` or the end of the scope. */
export const reservePort = Effect.acquireRelease(
  Effect.callback<Server, Error>((resume) => {
    // Nothing should connect before the api processes announce the port; if anything does, refuse it.
    const server = createServer((socket) => socket.destroy())
    server.once("error", (error) => resume(Effect.fail(error)))
    server.listen({ port: 0, host: "0.0.0.0", reusePort: true }, () => resume(Effect.succeed(server)))
  }),
  close
).pipe(Effect.flatMap((server) => {
  const address = server.address()
  return typeof address === "object" && address !== null
    ? Effect.succeed<PortReservation>({ port: address.port, release: close(server) })
    : Effect.die(new Error("the reserved port has no address"))
}))
