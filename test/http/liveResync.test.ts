/**
 * Core NATS keeps nothing for a disconnected subscriber, so when an api process gets its NATS connection
 * back, its live-update streams say `resync` (the pages refetch what they show) and go on receiving. Here
 * the test's private nats-server is killed and started again on the same port and store.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { rm } from "node:fs/promises"
import { connect } from "@nats-io/transport-node"
import { describe, expect, it } from "vitest"
import { signUp } from "../accounts/support.ts"
import { freePort, NATS_SERVER } from "../support/nats.ts"
import { openSse } from "../support/sse.ts"
import { createStack, type Stack } from "../support/stack.ts"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("live updates across a NATS reconnect", () => {
  it.skipIf(!NATS_SERVER)("tell the page to resync, then carry events again", async () => {
    const port = await freePort()
    const dir = `/tmp/mailstream-nats-${port}`
    const startNats = () => spawn(NATS_SERVER!, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir], { stdio: "ignore" })
    let nats: ChildProcess = startNats()
    let stack: Stack | undefined
    try {
      await sleep(500)
      stack = await createStack({ NATS_URL: `nats://127.0.0.1:${port}`, RATE_LIMIT_PER_MINUTE: "0" })
      const api = await stack.start("api")
      const { browser } = await signUp(api.url, "owner@example.com")
      const project = (await browser.post("/users/@me/projects", { name: "Resync" })).json
      const stream = await openSse(`${api.url}/projects/${project.id}/live`, { cookie: browser.cookieHeader() })
      await stream.waitFor((event) => event.type === "ready")

      nats.kill("SIGKILL")
      await new Promise((resolve) => nats.once("exit", resolve))
      nats = startNats()
      await stream.waitFor((event) => event.type === "resync", 15_000)

      // Subscribed again: an event emitted now arrives.
      const publisher = await connect({ servers: `nats://127.0.0.1:${port}` })
      const subject = `${stack.natsPrefix}.out.${project.id}.contact.subscribed`
      const event = {
        id: "1",
        projectId: project.id,
        name: "contact.subscribed",
        contactId: "c1",
        email: "",
        data: {},
        at: new Date().toISOString()
      }
      // The api resubscribes as it reconnects; publish until it hears (a message before that is not kept).
      const heard = stream.waitFor((received) => received.type === "event" && received.name === "contact.subscribed", 10_000)
      const publishing = setInterval(() => publisher.publish(subject, JSON.stringify(event)), 200)
      try {
        expect(await heard).toMatchObject({ contactId: "c1" })
      } finally {
        clearInterval(publishing)
        await publisher.close()
        stream.close()
      }
    } finally {
      await stack?.stop()
      nats.kill("SIGKILL")
      await rm(dir, { recursive: true, force: true })
    }
  }, 60_000)
})
