/**
 * An SMTP server for tests (smtp-server) on 127.0.0.1, a random port, no TLS, no auth. Every message
 * it accepts is kept raw and parsed (mailparser). Tests can make recipients fail: `failures.set(rcpt,
 * { code, times })` answers that recipient with `code` for the next `times` attempts.
 */
import { simpleParser, type ParsedMail } from "mailparser"
import type { AddressInfo } from "node:net"
import { SMTPServer } from "smtp-server"

export interface ReceivedMail {
  readonly raw: string
  readonly parsed: ParsedMail
  readonly envelopeTo: ReadonlyArray<string>
  readonly receivedAt: number
}

export interface SmtpSink {
  readonly url: string
  readonly messages: Array<ReceivedMail>
  readonly failures: Map<string, { code: number; times: number }>
  /** Resolves once `count` messages arrived (or rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<Array<ReceivedMail>>
  close(): Promise<void>
}

export const startSmtpSink = async (): Promise<SmtpSink> => {
  const messages: Array<ReceivedMail> = []
  const failures = new Map<string, { code: number; times: number }>()
  const waiters: Array<() => void> = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    size: 60 * 1024 * 1024,
    onRcptTo(address, _session, callback) {
      const failure = failures.get(address.address.toLowerCase())
      if (failure && failure.times > 0) {
        failure.times--
        const error = new Error(`test failure for ${address.address}`) as Error & { responseCode: number }
        error.responseCode = failure.code
        return callback(error)
      }
      callback()
    },
    onData(stream, session, callback) {
      const chunks: Array<Buffer> = []
      stream.on("data", (chunk: Buffer) => chunks.push(chunk))
      stream.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8")
        simpleParser(raw).then((parsed) => {
          messages.push({ raw, parsed, envelopeTo: session.envelope.rcptTo.map((r) => r.address), receivedAt: Date.now() })
          for (const waiter of waiters.splice(0)) waiter()
          callback()
        }, callback)
      })
    }
  })
  // A client killed mid-session (the crash tests) resets its connection; that is not the sink's failure.
  server.on("error", () => undefined)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.server.address() as AddressInfo).port
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    failures,
    waitFor(count, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const deadline = setTimeout(() => reject(new Error(`expected ${count} messages, got ${messages.length}`)), timeoutMs)
        const check = () => {
          if (messages.length >= count) {
            clearTimeout(deadline)
            resolve(messages.slice())
          } else {
            waiters.push(check)
          }
        }
        check()
      })
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
