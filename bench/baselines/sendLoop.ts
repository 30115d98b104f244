/**
 * The baseline of the mail benchmarks: the same mail rendered (liquidjs), DKIM-signed and sent over a
 * pooled transport of the same size (nodemailer), 64 in flight, with nothing else: no queue, no database.
 */
import { createPrivateKey } from "node:crypto"
import nodemailer from "nodemailer"
import { makeRenderer } from "../../src/mail/render.ts"
import type { SinkProcess } from "../harness/mail.ts"

export const bareSendLoop = async (options: {
  readonly sink: SinkProcess
  readonly key: { readonly key: string; readonly selector: string }
  readonly mail: { readonly subject: string; readonly body: string }
  readonly total: number
}) => {
  const renderer = makeRenderer()
  const subject = renderer.compile(options.mail.subject, "text")
  const body = renderer.compile(options.mail.body, "html")
  const transport = nodemailer.createTransport({
    host: "127.0.0.1",
    port: Number(options.sink.port),
    pool: true,
    maxConnections: 10,
    maxMessages: Infinity
  })
  // Parsed once, as the service does (signing with the PEM text parses it every time).
  const privateKey = createPrivateKey(options.key.key)
  const before = (await options.sink.stats()).count
  const started = Date.now()
  let sent = 0
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (sent < options.total) {
      const n = sent++
      const variables = { name: `User ${n}`, plan: "pro", email: `b${n}@example.org`, unsubscribeUrl: "https://bench.test/u" }
      await transport.sendMail({
        from: { name: "Bench", address: "news@bench.test" },
        to: `b${n}@example.org`,
        subject: await subject.render(variables),
        html: await body.render(variables),
        dkim: { domainName: "bench.test", keySelector: options.key.selector, privateKey: privateKey as unknown as string }
      })
    }
  }))
  const done = await options.sink.waitForCount(before + options.total, 600_000)
  transport.close()
  const seconds = (done.last! - started) / 1000
  return { emails: options.total, emailsPerSecond: Math.round(options.total / seconds), deliverSeconds: seconds }
}
