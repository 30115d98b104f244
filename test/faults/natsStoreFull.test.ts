/**
 * JetStream's store full. A real full disk (a small tmpfs under -sd, filled) was tried first: nats-server
 * 2.9.10 then answers no JetStream request at all (publishes and stream info time out) and does not come
 * back once space is freed, short of a restart. What a client meets when a JetStream store is full is the
 * server's storage limit: here the account's (max_file) lowered below what the streams hold by a config
 * reload, so every write is refused ("resource limits exceeded"), and raised again (the volume grown).
 */
import { it } from "vitest"
import { NATS_SERVER } from "../support/nats.ts"
import { runFault } from "./harness.ts"

it.skipIf(!NATS_SERVER)("JetStream's store full under load, a campaign sending", async () => {
  await runFault({
    down: "nats",
    begin: ({ nats }) => nats.setStoreLimit(1024),
    end: ({ nats }) => nats.setStoreLimit(-1)
  })
}, 300_000)
