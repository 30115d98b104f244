/**
 * `npm run bench -- inbound`: inbound messages per second through our SMTP receiver (the api role with
 * INBOUND_SMTP_PORT) until each is stored as an `email.received` event by the worker (SPF/DKIM/DMARC
 * checked against the local DNS server, parsed, contact found or created, row and outbox event
 * committed, relayed, applied). Baseline, in the same run: the same client against a bare smtp-server
 * that only reads each message (the mail benchmarks' sink process). The client: nodemailer, pooled,
 * BENCH_INBOUND_CONNECTIONS connections (default 8), BENCH_INBOUND_MESSAGES messages (default 2000) from
 * 200 senders to one verified-domain address.
 */
import nodemailer from "nodemailer"
import { freePort } from "../test/support/mail.ts"
import { SENDING_DOMAIN, withMailEnvironment } from "./harness/mail.ts"
import { cpuWindow, postgresOf, processTree } from "./harness/proc.ts"
import { setting, sleep } from "./harness/settings.ts"
import { ratio } from "./harness/stats.ts"

const message = (i: number) => ({
  from: `Sender ${i % 200} <sender${i % 200}@example.org>`,
  to: `inbox@${SENDING_DOMAIN}`,
  subject: `Question ${i}`,
  text: `Hello, this is message ${i}.\n${"Some ordinary text of a reply. ".repeat(40)}`,
  messageId: `<bench-${i}-${Date.now()}@example.org>`
})

/** Sends `total` messages over `connections` pooled connections; answers when the last got its 250. */
const sendAll = async (port: number, total: number, connections: number) => {
  const transport = nodemailer.createTransport({
    host: "127.0.0.1",
    port,
    secure: false,
    ignoreTLS: true,
    pool: true,
    maxConnections: connections,
    maxMessages: Infinity
  })
  let next = 0
  await Promise.all(Array.from({ length: connections }, async () => {
    while (next < total) await transport.sendMail(message(next++))
  }))
  transport.close()
}

export const run = () =>
  withMailEnvironment(async (env) => {
    const total = setting("BENCH_INBOUND_MESSAGES", 2_000)
    const connections = setting("BENCH_INBOUND_CONNECTIONS", 8)
    const port = await freePort()
    const api = await env.start("api", { INBOUND_SMTP_PORT: String(port), INBOUND_RATE_PER_IP: "0", INBOUND_RATE_PER_PROJECT: "0" })
    const worker = await env.start("worker", { METRICS_PORT: "0" })
    await env.verifyDomain(api)
    const stored = async () =>
      Number((await env.query<{ n: string }>("SELECT count(*) AS n FROM events WHERE name = 'email.received'"))[0]!.n)

    // Warm-up: a few messages through the whole path.
    await sendAll(port, 20, 2)
    while (await stored() < 20) await sleep(100)

    const window = await cpuWindow([
      processTree("api", api.process.pid!),
      processTree("worker", worker.process.pid!),
      postgresOf("postgres", env.query)
    ])
    const started = Date.now()
    await sendAll(port, total, connections)
    const acceptedSeconds = (Date.now() - started) / 1000
    const deadline = Date.now() + 600_000
    while (await stored() < total + 20) {
      if (Date.now() > deadline) throw new Error(`only ${await stored()} of ${total + 20} events stored`)
      await sleep(50)
    }
    const storedSeconds = (Date.now() - started) / 1000
    const cpu = await window.end(total)
    const service = {
      messages: total,
      acceptedPerSecond: Math.round(total / acceptedSeconds),
      storedPerSecond: Math.round(total / storedSeconds),
      storedSeconds,
      cpuMicrosPerMessage: Object.fromEntries(Object.entries(cpu.groups).map(([name, group]) => [name, group.microsPerEvent]))
    }

    const baselineFrom = (await env.sink.stats()).count
    const baselineStarted = Date.now()
    await sendAll(Number(env.sink.port), total, connections)
    await env.sink.waitForCount(baselineFrom + total, 600_000)
    const baselineSeconds = (Date.now() - baselineStarted) / 1000
    const baseline = { messages: total, acceptedPerSecond: Math.round(total / baselineSeconds) }

    return {
      description: "Inbound mail over SMTP to a verified domain until stored as email.received events (auth checks, parse, " +
        "contact, row + outbox event, relay, lane), vs a bare smtp-server that only reads each message; same pooled nodemailer client",
      service,
      baseline,
      ratio: ratio(service.storedPerSecond, baseline.acceptedPerSecond)
    }
  })
