/**
 * The inbound SMTP receiver (smtp-server) on INBOUND_SMTP_PORT, run by the api role: like /v1/track it is
 * an ingress that holds no state beyond a connection, so it scales with the api processes, which share the
 * port (SO_REUSEPORT, as they share PORT); under `all` every api process runs it.
 *
 * - RCPT TO: only addresses at a domain some project verified; anything else 550 5.1.1. Past
 *   INBOUND_RATE_PER_PROJECT messages a minute for that project: 452 (the sender retries later).
 * - MAIL FROM: past INBOUND_RATE_PER_IP messages a minute from the client's address: 421.
 * - DATA: at most INBOUND_MAX_BYTES (SIZE announced, 552 past it); SPF, DKIM and DMARC checked
 *   (mailauth, DNS_SERVERS), the message parsed, then recorded for each project among its recipients
 *   (InboundMail). 250 only once every project's record committed; a failure answers 451, so the sender
 *   retries and nothing accepted is lost.
 */
import { Effect, Layer } from "effect"
import type { Resolver } from "mailauth"
import type { SMTPServerSession } from "smtp-server"
import { AppConfig } from "../config.ts"
import { isValidEmail, normalizeEmail } from "../domain/email.ts"
import { type AuthenticationResults, checkAuthentication, dnsResolver } from "./authentication.ts"
import { InboundMail } from "./InboundMail.ts"
import { parseInbound } from "./message.ts"

/** An SMTP reply: smtp-server answers an Error with its `responseCode`. */
const reply = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code })

/** Counts per key in fixed one-minute windows: true while `limit` is not reached (0: no limit). */
export const makeMinuteCounter = (limit: number, now: () => number = Date.now) => {
  const windows = new Map<string, { start: number; count: number }>()
  return (key: string): boolean => {
    if (limit === 0) return true
    const at = now()
    let window = windows.get(key)
    if (!window || at - window.start >= 60_000) {
      if (windows.size > 100_000) windows.clear()
      window = { start: at, count: 0 }
      windows.set(key, window)
    }
    if (window.count >= limit) return false
    window.count++
    return true
  }
}

const domainOf = (address: string) => address.slice(address.lastIndexOf("@") + 1).toLowerCase()

export interface ReceiverOptions {
  readonly port: number
  readonly host?: string
  readonly maxBytes: number
  readonly ratePerIp: number
  readonly ratePerProject: number
  /** DNS for SPF, DKIM and DMARC. */
  readonly resolver: Resolver
}

/** Starts the receiver in the current scope; answers the port it listens on. */
export const startReceiver = (options: ReceiverOptions) =>
  Effect.gen(function*() {
    const inbound = yield* InboundMail
    const run = Effect.runPromiseWith(yield* Effect.context<never>())
    const perIp = makeMinuteCounter(options.ratePerIp)
    const perProject = makeMinuteCounter(options.ratePerProject)

    /** Each accepted recipient's projects, grouped by project. */
    const recipientsByProject = async (session: SMTPServerSession) => {
      const byProject = new Map<string, Array<string>>()
      for (const { address } of session.envelope.rcptTo) {
        for (const projectId of await run(inbound.projectsOf(domainOf(address)))) {
          const list = byProject.get(projectId) ?? []
          list.push(normalizeEmail(address))
          byProject.set(projectId, list)
        }
      }
      return byProject
    }

    const deliver = async (raw: Buffer, session: SMTPServerSession) => {
      const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : ""
      // An IPv4 client of a dual-stack socket, as SPF reads it.
      const ip = session.remoteAddress.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "")
      const [message, authentication] = await Promise.all([
        parseInbound(raw),
        checkAuthentication(raw, { ip, helo: session.hostNameAppearsAs, sender: envelopeFrom || undefined }, options.resolver)
          .catch((error): AuthenticationResults => {
            void run(Effect.logWarning("inbound authentication checks failed", { error: String(error) }))
            return { spf: "temperror", dkim: "temperror", dkimDomains: [], dmarc: "temperror" }
          })
      ])
      const sender = message.from ?? (isValidEmail(envelopeFrom) ? normalizeEmail(envelopeFrom) : undefined)
      if (sender === undefined) throw reply(550, "5.1.7 The message has no valid sender address (From or MAIL FROM)")
      for (const [projectId, recipients] of await recipientsByProject(session)) {
        await run(
          inbound.record({ projectId, recipients, sender, message, authentication, raw, via: "smtp" }).pipe(
            Effect.catchTag(
              "BillingLimitExceeded",
              () => Effect.fail(reply(452, "4.2.2 The recipient's monthly inbound mail limit is reached"))
            )
          )
        )
      }
    }

    // Loaded when INBOUND_SMTP_PORT is set: without it the api never loads smtp-server.
    const { SMTPServer } = yield* Effect.promise(() => import("smtp-server"))
    const server = new SMTPServer({
      name: "mailstream",
      banner: "mailstream inbound",
      authOptional: true,
      disabledCommands: ["AUTH", "STARTTLS"],
      disableReverseLookup: true,
      logger: false,
      size: options.maxBytes,
      closeTimeout: 5_000,
      onMailFrom(_address, session, callback) {
        if (!perIp(session.remoteAddress)) return callback(reply(421, "4.7.0 Too many messages from your address; try again later"))
        callback()
      },
      onRcptTo(address, session, callback) {
        const rcpt = address.address
        if (!isValidEmail(rcpt)) return callback(reply(553, "5.1.3 Not a valid recipient address"))
        run(inbound.projectsOf(domainOf(rcpt))).then(async (projects) => {
          if (projects.length === 0) return callback(reply(550, `5.1.1 <${rcpt}>: mail for this domain is not accepted here`))
          // A message counts once per project, at its first recipient there.
          const earlier = await recipientsByProject(session)
          for (const projectId of projects) {
            if (!earlier.has(projectId) && !perProject(projectId)) {
              return callback(reply(452, "4.5.3 Too many messages for this recipient's project; try again later"))
            }
          }
          callback()
        }, (error) => {
          void run(Effect.logWarning("inbound recipient lookup failed", { error: String(error) }))
          callback(reply(451, "4.3.0 Temporary failure; try again later"))
        })
      },
      onData(stream, session, callback) {
        const chunks: Array<Buffer> = []
        stream.on("data", (chunk: Buffer) => chunks.push(chunk))
        stream.on("error", (error) => callback(error))
        stream.on("end", () => {
          if (stream.sizeExceeded) return callback(reply(552, `5.3.4 The message exceeds the limit of ${options.maxBytes} bytes`))
          deliver(Buffer.concat(chunks), session).then(() => callback(), (error: unknown) => {
            if (error instanceof Error && "responseCode" in error) return callback(error)
            void run(Effect.logWarning("inbound message not recorded; answered 451", { error: String(error) }))
            callback(reply(451, "4.3.0 The message could not be stored; try again later"))
          })
        })
      }
    })
    server.on("error", (error) => void run(Effect.logWarning("inbound SMTP error", { error: String(error) })))

    const port = yield* Effect.callback<number, Error>((resume) => {
      const onError = (error: Error) => resume(Effect.fail(error))
      server.server.once("error", onError)
      server.listen({ port: options.port, host: options.host ?? "::", reusePort: options.port !== 0 }, () => {
        server.server.off("error", onError)
        resume(Effect.succeed((server.server.address() as { port: number }).port))
      })
    })
    yield* Effect.addFinalizer(() => Effect.callback<void>((resume) => server.close(() => resume(Effect.void))))
    return port
  })

/** The receiver when INBOUND_SMTP_PORT is set; nothing otherwise. */
export const SmtpReceiverLive = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  if (config.inboundSmtpPort === undefined) return
  const port = yield* startReceiver({
    port: config.inboundSmtpPort,
    maxBytes: config.inboundMaxBytes,
    ratePerIp: config.inboundRatePerIp,
    ratePerProject: config.inboundRatePerProject,
    resolver: dnsResolver(config.dnsServers)
  }).pipe(Effect.orDie)
  yield* Effect.logInfo(`Inbound SMTP listening on port ${port}`)
}))
