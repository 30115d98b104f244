/**
 * A network partition between the worker and NATS: the worker reaches NATS through a TCP proxy the test
 * controls, which cuts every connection and leaves new ones unanswered for FAULT_MS, then forwards again.
 * The api's own dependencies stay up (its /readyz stays ready); events pile up in the stream meanwhile.
 */
import { it } from "vitest"
import { NATS_SERVER } from "../support/nats.ts"
import { startTcpProxy, type TcpProxy } from "../support/tcpProxy.ts"
import { runFault } from "./harness.ts"

it.skipIf(!NATS_SERVER)("the worker cut off from NATS under load, a campaign sending", async () => {
  let proxy: TcpProxy | undefined
  try {
    await runFault({
      begin: async () => proxy!.cut(),
      end: async () => proxy!.restore()
    }, {
      workerNatsUrl: async (nats) => {
        proxy = await startTcpProxy({ host: "127.0.0.1", port: nats.port })
        return `nats://${proxy.address}`
      }
    })
  } finally {
    await proxy?.close()
  }
}, 300_000)
