import { it } from "vitest"
import { NATS_SERVER } from "../support/nats.ts"
import { runFault } from "./harness.ts"

it.skipIf(!NATS_SERVER)("nats-server SIGKILLed and restarted under load, a campaign sending", async () => {
  await runFault({
    down: "nats",
    begin: ({ nats }) => nats.kill(),
    end: ({ nats }) => nats.start()
  })
}, 300_000)
