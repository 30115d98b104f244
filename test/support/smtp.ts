/**
 * An SMTP server for tests and benchmarks (smtp-server) on 127.0.0.1, a random port, no TLS, no auth.
 * Tests keep every message raw and parsed (mailparser); the benchmarks' sink process (bench/smtpSink.ts)
 * passes `parse: false` and only counts: arrival times and DKIM signatures, so the sink costs little
 * beside the service it measures. Tests can make recipients fail: `failures.set(rcpt, { code, times })`
 * answers that recipient with `code` for the next `times` attempts; `delays.set(rcpt, ms)` makes the relay
 * take that long to accept the recipient (a slow relay).
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
  readonly port: number
  /** Every message accepted, raw and parsed (empty with `parse: false`). */
  readonly messages: Array<ReceivedMail>
  /** When each message was accepted (ms since the epoch), in order. */
  readonly arrivals: Array<number>
  /** How many accepted messages carried a DKIM-Signature header. */
  readonly dkimSigned: () => number
  readonly failures: Map<string, { code: number; times: number }>
  readonly delays: Map<string, number>
  /** Resolves once `count` messages arrived (or rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<Array<ReceivedMail>>
  close(): Promise<void>
}

/** The head of a message is enough to see its DKIM signature (signatures are prepended). */
const HEAD_BYTES = 4096

export const startSmtpSink = async (options: { readonly parse?: boolean } = {}): Promise<SmtpSink> => {
  const parse = options.parse ?? true
  const messages: Array<ReceivedMail> = []
  const arrivals: Array<number> = []
  let dkimSigned = 0
  const failures = new Map<string, { code: number; times: number }>()
  const delays = new Map<string, number>()
  const waiters: Array<() => void> = []
  const accepted = (head: string, at: number) => {
    arrivals.push(at)
    if (/^DKIM-Signature:/im.test(head)) dkimSigned++
    for (const waiter of waiters.splice(0)) waiter()
  }
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    size: 60 * 1024 * 1024,
    onRcptTo(address, _session, callback) {
      const rcpt = address.address.toLowerCase()
      const answer = () => {
        const failure = failures.get(rcpt)
        if (failure && failure.times > 0) {
          failure.times--
          const error = new Error(`test failure for ${address.address}`) as Error & { responseCode: number }
          error.responseCode = failure.code
          return callback(error)
        }
        callback()
      }
      const delay = delays.get(rcpt)
      delays.delete(rcpt)
      if (delay === undefined) answer()
      else setTimeout(answer, delay)
    },
    onData(stream, session, callback) {
      const chunks: Array<Buffer> = []
      let head = ""
      stream.on("data", (chunk: Buffer) => {
        if (parse) chunks.push(chunk)
        else if (head.length < HEAD_BYTES) head += chunk.toString("latin1")
      })
      stream.on("end", () => {
        if (!parse) {
          accepted(head, Date.now())
          return callback()
        }
        const raw = Buffer.concat(chunks).toString("utf8")
        simpleParser(raw).then((parsed) => {
          const receivedAt = Date.now()
          messages.push({ raw, parsed, envelopeTo: session.envelope.rcptTo.map((r) => r.address), receivedAt })
          accepted(raw.slice(0, HEAD_BYTES), receivedAt)
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
    port,
    messages,
    arrivals,
    dkimSigned: () => dkimSigned,
    failures,
    delays,
    waitFor(count, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const deadline = setTimeout(() => reject(new Error(`expected ${count} messages, got ${arrivals.length}`)), timeoutMs)
        const check = () => {
          if (arrivals.length >= count) {
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
