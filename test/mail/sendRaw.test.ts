/**
 * A composed message through nodemailer's SMTP pool by its transport interface (src/mail/sendRaw.ts): the
 * relay receives the bytes as composed (a line starting with a dot included), to the envelope's
 * recipients, DKIM still verifying; a refusal rejects with the relay's code; a transport that is not a
 * pool sends through sendMail the same way.
 */
import nodemailer from "nodemailer"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { composeRaw } from "../../src/mail/composeRaw.ts"
import { sendRaw } from "../../src/mail/sendRaw.ts"
import { DKIM_SIGNED_HEADERS } from "../../src/mail/Transport.ts"
import { dkimResults, privateKey } from "../support/dkim.ts"
import { type SmtpSink, startSmtpSink } from "../support/smtp.ts"

let sink: SmtpSink
beforeAll(async () => {
  sink = await startSmtpSink()
})
afterAll(() => sink.close())

/** Line breaks aside (the sink's copy), the same bytes. */
const lines = (raw: string | Buffer) => raw.toString().replace(/\r\n/g, "\n")

const composer = nodemailer.createTransport({ streamTransport: true, buffer: true })
const composed = (n: number, cc = true) =>
  composeRaw(composer, {
    from: { name: "Acme", address: "news@acme.test" },
    to: [{ name: `User ${n}`, address: `u${n}@example.org` }, ...(cc ? [`cc${n}@example.org`] : [])],
    subject: `Hello ${n}`,
    text: `Hi ${n}\n.a line that starts with a dot\n..and two\n`,
    messageId: `<m${n}@acme.test>`,
    dkim: { domainName: "acme.test", keySelector: "s1", privateKey: privateKey as unknown as string, headerFieldNames: DKIM_SIGNED_HEADERS }
  })

describe("sending composed bytes", () => {
  it("goes through the pool's transport interface, the bytes arriving as composed", async () => {
    const pool = nodemailer.createTransport({ host: "127.0.0.1", port: sink.port, pool: true, maxConnections: 2 })
    try {
      const messages = await Promise.all([1, 2, 3].map((n) => composed(n)))
      const before = sink.arrivals.length
      const replies = await Promise.all(messages.map((message, n) => sendRaw(pool, message, `<m${n + 1}@acme.test>`)))
      for (const reply of replies) expect(reply.response).toMatch(/^250/)
      const received = (await sink.waitFor(before + 3)).slice(before)
      for (const [n, message] of messages.entries()) {
        const arrived = received.find((mail) => mail.parsed.messageId === `<m${n + 1}@acme.test>`)!
        expect(arrived.envelopeTo).toEqual([`u${n + 1}@example.org`, `cc${n + 1}@example.org`])
        expect(lines(arrived.raw)).toBe(lines(message.raw))
        expect(arrived.parsed.text).toContain("\n.a line that starts with a dot\n..and two")
        expect(await dkimResults(Buffer.from(arrived.raw))).toEqual(["pass"])
      }
    } finally {
      pool.close()
    }
  })

  it("rejects with the relay's code when it refuses the message", async () => {
    const pool = nodemailer.createTransport({ host: "127.0.0.1", port: sink.port, pool: true, maxConnections: 1 })
    try {
      sink.failures.set("u9@example.org", { code: 550, times: 1 })
      await expect(sendRaw(pool, await composed(9, false), "<m9@acme.test>")).rejects.toMatchObject({ responseCode: 550 })
      // The connection goes on with the next message.
      expect((await sendRaw(pool, await composed(10), "<m10@acme.test>")).response).toMatch(/^250/)
    } finally {
      pool.close()
    }
  })

  it("sends through sendMail when the transport is not a pool", async () => {
    const single = nodemailer.createTransport({ host: "127.0.0.1", port: sink.port })
    const message = await composed(11)
    const before = sink.arrivals.length
    expect((await sendRaw(single, message, "<m11@acme.test>")).response).toMatch(/^250/)
    const [arrived] = (await sink.waitFor(before + 1)).slice(before)
    expect(lines(arrived!.raw)).toBe(lines(message.raw))
    single.close()
  })
})
