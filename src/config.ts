/**
 * Every environment variable the service reads, in one table: its default, its meaning and what is
 * allowed. The table is read once at start (a bad value stops the process with one line naming the
 * variable, the value and what is allowed) and rendered by `--help`, so the two cannot drift.
 */
import { Config, Context, Data, Effect, Layer, LogLevel, Option, Redacted, Struct } from "effect"
import { isIP } from "node:net"
import { availableParallelism } from "node:os"
import { cidrMatcher } from "./lib/addresses.ts"
import { PREFIX_PATTERN } from "./stream/subjects.ts"

/** What a variable accepts: described for people, parsed for the program. */
interface Rule<A> {
  /** Completes "expected …": `a whole number from 1 to 1024`. */
  readonly allowed: string
  readonly parse: (text: string) => Option.Option<A>
}

/** One environment variable. An empty value counts as unset. */
export interface Variable<A> extends Rule<A> {
  readonly name: string
  readonly meaning: string
  readonly defaultValue: A
  /** The default as people read it (`unset`, `http://localhost:$PORT`). */
  readonly shownDefault: string
  /** The value may hold a password: error messages mask it. */
  readonly secret?: boolean
}

const variable = <A>(spec: Variable<A>): Variable<A> => spec

const optional = <A>(rule: Rule<A>): Rule<A | undefined> => rule

const wholeNumber = (min: number, max?: number): Rule<number> => ({
  allowed: max === undefined ? `a whole number of at least ${min}` : `a whole number from ${min} to ${max}`,
  parse: (text) => {
    const value = Number(text)
    return /^-?\d+$/.test(text) && value >= min && (max === undefined || value <= max) ? Option.some(value) : Option.none()
  }
})

const anyWholeNumber: Rule<number> = {
  allowed: "a whole number (negative allowed)",
  parse: (text) => /^-?\d+$/.test(text) && Number.isSafeInteger(Number(text)) ? Option.some(Number(text)) : Option.none()
}

const number = (min: number, options: { readonly exclusive: boolean }): Rule<number> => ({
  allowed: options.exclusive ? `a number greater than ${min}` : `a number of at least ${min}`,
  parse: (text) => {
    const value = Number(text)
    return /^\d+(\.\d+)?$/.test(text) && (options.exclusive ? value > min : value >= min) ? Option.some(value) : Option.none()
  }
})

const powerOfTwo = (min: number, max: number): Rule<number> => ({
  allowed: `a power of two from ${min} to ${max}`,
  parse: (text) => {
    const value = Number(text)
    return /^\d+$/.test(text) && value >= min && value <= max && (value & (value - 1)) === 0 ? Option.some(value) : Option.none()
  }
})

const logLevel: Rule<LogLevel.LogLevel> = {
  allowed: `one of ${LogLevel.values.join(", ")} (any case)`,
  parse: (text) => Option.fromNullishOr(LogLevel.values.find((level) => level.toLowerCase() === text.toLowerCase()))
}

/** An absolute URL with one of `schemes`, without a trailing slash. */
const url = (schemes: ReadonlyArray<string>): Rule<string> => ({
  allowed: `a ${schemes.map((scheme) => `${scheme}://`).join(" or ")} URL`,
  parse: (text) => {
    if (!URL.canParse(text)) return Option.none()
    const parsed = new URL(text)
    return schemes.includes(parsed.protocol.slice(0, -1)) && parsed.hostname !== "" ? Option.some(text.replace(/\/+$/, "")) : Option.none()
  }
})

const text = (allowed: string, pattern: RegExp = /\S/): Rule<string> => ({
  allowed,
  parse: (value) => pattern.test(value) ? Option.some(value) : Option.none()
})

/** Comma-separated items, each checked by `item` (blanks between commas ignored). */
const listOf = (allowed: string, item: (text: string) => boolean): Rule<ReadonlyArray<string>> => ({
  allowed,
  parse: (value) => {
    const items = value.split(",").map((entry) => entry.trim()).filter((entry) => entry !== "")
    return items.every(item) ? Option.some(items) : Option.none()
  }
})

const port = (text: string | undefined) => text === undefined || (/^\d+$/.test(text) && Number(text) <= 65535)

/** `host[:port]` or `scheme://host[:port]` with a NATS scheme, as the NATS client takes them. */
const isNatsServer = (entry: string) => {
  const withScheme = entry.includes("://") ? entry : `nats://${entry}`
  return URL.canParse(withScheme) && ["nats:", "tls:", "ws:", "wss:"].includes(new URL(withScheme).protocol) &&
    new URL(withScheme).hostname !== ""
}

/** `ip`, `ip:port`, `[ipv6]` or `[ipv6]:port`: what node:dns `setServers` accepts. */
const isResolver = (entry: string) => {
  const bracketed = entry.match(/^\[([^\]]+)\](?::(\d+))?$/)
  if (bracketed) return isIP(bracketed[1]!) === 6 && port(bracketed[2])
  if (isIP(entry) !== 0) return true
  const [host, portText] = entry.split(":")
  return isIP(host ?? "") === 4 && port(portText)
}

/** A range in CIDR notation, or one address: whatever workflow webhooks' matcher accepts. */
const isRange = (entry: string) => {
  try {
    cidrMatcher([entry])
    return true
  } catch {
    return false
  }
}

const boolean: Rule<boolean> = {
  allowed: "true or false",
  parse: (text) => /^(true|false)$/i.test(text) ? Option.some(text.toLowerCase() === "true") : Option.none()
}

/** `address@domain` or `Name <address@domain>`, as a From header takes it. */
const mailbox = text("an email address, optionally as `Name <address@domain>`", /^(?:[^<>]*<[^\s@<>]+@[^\s@<>]+>|[^\s@<>]+@[^\s@<>]+)$/)

const isSnsTopic = (entry: string) => /^arn:[^:\s]+:sns:[^:\s]*:[^:\s]*:[^:\s]+$/.test(entry)

const DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/postgres"

/** The table: every variable, in the order `--help` and the README list them. */
export const Variables = {
  port: variable({
    name: "PORT",
    ...wholeNumber(0, 65535),
    defaultValue: 3000,
    shownDefault: "3000",
    meaning: "HTTP port (0 picks a free one)"
  }),
  apiProcesses: variable({
    name: "API_PROCESSES",
    ...wholeNumber(1, 256),
    defaultValue: Math.max(1, availableParallelism() - 1),
    shownDefault: "CPU cores - 1 (at least 1)",
    meaning:
      "api processes `all` runs beside its worker process, sharing PORT; with 1, `all` runs the api and the worker in its own one process"
  }),
  databaseUrl: variable({
    name: "DATABASE_URL",
    ...url(["postgres", "postgresql"]),
    secret: true,
    defaultValue: DEFAULT_DATABASE_URL,
    shownDefault: DEFAULT_DATABASE_URL,
    meaning: "Postgres"
  }),
  natsUrl: variable({
    name: "NATS_URL",
    ...listOf("comma-separated NATS servers (nats://host:port, tls://host:port or host:port)", isNatsServer),
    defaultValue: ["nats://127.0.0.1:4222"],
    shownDefault: "nats://127.0.0.1:4222",
    meaning: "NATS with JetStream (comma-separated for a cluster)"
  }),
  natsPrefix: variable({
    name: "NATS_PREFIX",
    ...text("1 to 32 letters, digits, _ or -", PREFIX_PATTERN),
    defaultValue: "mailstream",
    shownDefault: "mailstream",
    meaning: "prefix of every stream, subject, consumer and KV bucket name, so several deployments or test runs share one NATS server"
  }),
  natsReplicas: variable({
    name: "NATS_REPLICAS",
    ...wholeNumber(1, 5),
    defaultValue: 1,
    shownDefault: "1",
    meaning:
      "replicas of every stream and consumer the service creates on NATS (3 on a three-node cluster survives a node lost); a stream found with fewer or more is changed to this many at start"
  }),
  streamMaxAgeHours: variable({
    name: "STREAM_MAX_AGE_HOURS",
    ...number(0, { exclusive: false }),
    defaultValue: 168,
    shownDefault: "168",
    meaning:
      "the oldest a message in streams IN and OUT may get before NATS drops it, applied or not: a safety limit, far above the worker's purges (STREAM_PURGE_SECONDS); a stream found with another limit is changed to this one at start; 0 = no limit"
  }),
  streamPurgeSeconds: variable({
    name: "STREAM_PURGE_SECONDS",
    ...number(0, { exclusive: true }),
    defaultValue: 30,
    shownDefault: "30",
    meaning:
      "how often a worker purges from streams IN and OUT what is applied (each leased partition below its saved watermarks) and what every durable reader acked"
  }),
  partitions: variable({
    name: "PARTITIONS",
    ...wholeNumber(1, 1024),
    defaultValue: 32,
    shownDefault: "32",
    meaning: "stream partitions; fixed per deployment"
  }),
  lanesPerProject: variable({
    name: "LANES_PER_PROJECT",
    ...powerOfTwo(1, 256),
    defaultValue: 16,
    shownDefault: "16",
    meaning:
      "lanes a project's stream traffic is split into by contact, so one project spreads over partitions and workers; fixed per deployment"
  }),
  batchReadAhead: variable({
    name: "BATCH_READ_AHEAD",
    ...boolean,
    defaultValue: false,
    shownDefault: "false",
    meaning:
      "a lane's next batch of tracked events starts (on a second connection) while the batch before it commits; worth it with Postgres across a network and cores to spare, not with everything on a few local cores (BENCHMARKS.md)"
  }),
  trackMaxInFlight: variable({
    name: "TRACK_MAX_IN_FLIGHT",
    ...wholeNumber(0),
    defaultValue: 1024,
    shownDefault: "1024",
    meaning:
      "/v1/track requests one api process works on at once; past it, new ones answer 503 SERVICE_UNAVAILABLE with Retry-After at once instead of waiting in a growing queue (load shedding); 0 = no limit"
  }),
  liveMaxClients: variable({
    name: "LIVE_MAX_CLIENTS",
    ...wholeNumber(0),
    defaultValue: 1000,
    shownDefault: "1000",
    meaning:
      "live-update streams (GET /projects/:id/live, server-sent events) one api process serves at once; past it a new one answers 429 TOO_MANY_LIVE_STREAMS; 0 turns live updates off"
  }),
  liveMaxClientsPerUser: variable({
    name: "LIVE_MAX_CLIENTS_PER_USER",
    ...wholeNumber(1),
    defaultValue: 10,
    shownDefault: "10",
    meaning:
      "live-update streams one dashboard user may hold open on one api process (one per browser tab); past it a new one answers 429 TOO_MANY_LIVE_STREAMS"
  }),
  liveClientBuffer: variable({
    name: "LIVE_CLIENT_BUFFER",
    ...wholeNumber(1),
    defaultValue: 256,
    shownDefault: "256",
    meaning:
      "live events waiting for one stream's client to read them; a client that falls this far behind is disconnected (it reconnects and refetches) rather than buffered without bound"
  }),
  liveHeartbeatSeconds: variable({
    name: "LIVE_HEARTBEAT_SECONDS",
    ...wholeNumber(1, 300),
    defaultValue: 15,
    shownDefault: "15",
    meaning: "how often an idle live-update stream carries a comment line, so proxies keep the connection and a vanished client is noticed"
  }),
  workerMaxPendingEvents: variable({
    name: "WORKER_MAX_PENDING_EVENTS",
    ...wholeNumber(1),
    defaultValue: 50_000,
    shownDefault: "50000",
    meaning:
      "events a worker holds delivered from the stream and not yet applied; past it its consumers wait, so a backlog stays in the stream instead of in the worker's memory"
  }),
  factsCacheContacts: variable({
    name: "FACTS_CACHE_CONTACTS",
    ...wholeNumber(0),
    defaultValue: 50_000,
    shownDefault: "50000",
    meaning:
      "contacts whose segment facts (event counts, windowed times, memberships) a worker keeps between batches, about 1 KiB each, so a batch reads them from Postgres only for contacts it has not seen; 0 turns it off"
  }),
  rateLimitPerMinute: variable({
    name: "RATE_LIMIT_PER_MINUTE",
    ...wholeNumber(0),
    defaultValue: 1000,
    shownDefault: "1000",
    meaning: "requests per minute per project, across all api processes (a /v1/track/batch counts one per accepted event); 0 disables"
  }),
  idempotencyTtlHours: variable({
    name: "IDEMPOTENCY_TTL_HOURS",
    ...number(0, { exclusive: true }),
    defaultValue: 24,
    shownDefault: "24",
    meaning: "how long an Idempotency-Key is remembered"
  }),
  idempotencyLeaseSeconds: variable({
    name: "IDEMPOTENCY_LEASE_SECONDS",
    ...number(0, { exclusive: true }),
    defaultValue: 30,
    shownDefault: "30",
    meaning: "how long a claimed Idempotency-Key stays held without renewal; a crashed request's key is free after it"
  }),
  logLevel: variable<LogLevel.LogLevel>({
    name: "LOG_LEVEL",
    ...logLevel,
    defaultValue: "Info",
    shownDefault: "Info",
    meaning: "JSON log lines on stderr from this level up"
  }),
  publicUrl: variable({
    name: "PUBLIC_URL",
    ...optional(url(["http", "https"])),
    defaultValue: undefined,
    shownDefault: "http://localhost:$PORT",
    meaning: "base of links the service puts in emails"
  }),
  trustedProxies: variable({
    name: "TRUSTED_PROXIES",
    ...listOf("comma-separated IP ranges (172.16.0.0/12, fd00::/8) or addresses", isRange),
    defaultValue: [],
    shownDefault: "unset",
    meaning:
      "reverse proxies whose X-Forwarded-For is believed: a request's client address is the right-most entry not added by one of them (sign-in throttling); unset, it is always the connection's peer, and X-Forwarded-For is ignored"
  }),
  metricsPort: variable({
    name: "METRICS_PORT",
    ...optional(wholeNumber(0, 65535)),
    defaultValue: undefined,
    shownDefault: "unset",
    meaning:
      "/metrics is served on this port instead of PORT (by an api, and by each api process of `all`, sharing it) and by a standalone worker, which has no other"
  }),
  metricsToken: variable({
    name: "METRICS_TOKEN",
    ...optional(text("at least 16 characters", /^\S{16,}$/)),
    secret: true,
    defaultValue: undefined,
    shownDefault: "unset",
    meaning:
      "when set, /metrics answers only with Authorization: Bearer <token>; unset, only requests made directly (no X-Forwarded-For, Forwarded or X-Real-IP) from a loopback or private address"
  }),
  clockOffsetMs: variable({
    name: "CLOCK_OFFSET_MS",
    ...anyWholeNumber,
    defaultValue: 0,
    shownDefault: "0",
    meaning:
      "shifts the clock the service reads time through (segment time windows, timers, timestamps); tests use it, never needed in production"
  }),
  dnsServers: variable({
    name: "DNS_SERVERS",
    ...listOf("comma-separated resolver addresses (1.2.3.4, 1.2.3.4:53, [::1]:53)", isResolver),
    defaultValue: [],
    shownDefault: "unset (the system's resolvers)",
    meaning: "resolvers for /v1/verify and domain checks"
  }),
  smtpUrl: variable({
    name: "SMTP_URL",
    ...optional(url(["smtp", "smtps"])),
    secret: true,
    defaultValue: undefined,
    shownDefault: "unset",
    meaning:
      "the SMTP relay, e.g. smtp://user:pass@relay:587 (smtps:// for TLS on connect); unset, mail is not sent but written to OUTBOX_DIR (local delivery: no sender domain needs verifying; read the mail on the dashboard's Emails page)"
  }),
  outboxDir: variable({
    name: "OUTBOX_DIR",
    ...text("a directory path"),
    defaultValue: ".data/outbox",
    shownDefault: ".data/outbox",
    meaning: "the file outbox used without SMTP_URL"
  }),
  emailContentRetentionDays: variable({
    name: "EMAIL_CONTENT_RETENTION_DAYS",
    ...wholeNumber(0),
    defaultValue: 30,
    shownDefault: "30",
    meaning:
      "days the rendered content of sent mail (HTML, headers, attachments: what the dashboard's Emails page shows and downloads) is kept; past it only the email's record stays (status, timeline); 0 keeps it forever"
  }),
  smtpPoolSize: variable({
    name: "SMTP_POOL_SIZE",
    ...wholeNumber(1, 1000),
    defaultValue: 10,
    shownDefault: "10",
    meaning: "pooled SMTP connections per worker"
  }),
  mailThreads: variable({
    name: "MAIL_THREADS",
    ...optional(wholeNumber(0, 64)),
    defaultValue: undefined,
    shownDefault: "the number of cores",
    meaning:
      "threads per worker that compose and DKIM-sign outgoing mail (started on the first mail, stopped when idle); 0 = on the event loop"
  }),
  sendRatePerSecond: variable({
    name: "SEND_RATE_PER_SECOND",
    ...number(0, { exclusive: false }),
    defaultValue: 100,
    shownDefault: "100",
    meaning: "default send throttle per project (emails/s; 0 = unthrottled)"
  }),
  domainRecheckSeconds: variable({
    name: "DOMAIN_RECHECK_SECONDS",
    ...wholeNumber(1),
    defaultValue: 300,
    shownDefault: "300",
    meaning: "how often workers check every sending domain's DNS records again"
  }),
  snsSigningCertFile: variable({
    name: "SNS_SIGNING_CERT_FILE",
    ...optional(text("a file path")),
    defaultValue: undefined,
    shownDefault: "unset",
    meaning: "pins the certificate SES/SNS notifications are verified with, instead of fetching SigningCertURL"
  }),
  sesTopicArns: variable({
    name: "SES_TOPIC_ARNS",
    ...listOf(
      "comma-separated SNS topic ARNs (arn:aws:sns:region:account:name), or * for any",
      (topic) => topic === "*" || isSnsTopic(topic)
    ),
    defaultValue: [],
    shownDefault: "unset",
    meaning: "SNS topics accepted on /webhooks/ses (unset: none; * any topic, the signature still checked)"
  }),
  inboundSmtpPort: variable({
    name: "INBOUND_SMTP_PORT",
    ...optional(wholeNumber(0, 65535)),
    defaultValue: undefined as number | undefined,
    shownDefault: "unset (off)",
    meaning: "port of the inbound SMTP receiver, run by every api process (they share it; under `all` too): mail to a project's " +
      "verified domains becomes an email.received event on its sender's contact; other recipients are refused at RCPT TO (0 picks a free port)"
  }),
  inboundMaxBytes: variable({
    name: "INBOUND_MAX_BYTES",
    ...wholeNumber(1024, 50 * 1024 * 1024),
    defaultValue: 10 * 1024 * 1024,
    shownDefault: "10485760",
    meaning: "largest message the inbound SMTP receiver accepts (announced in EHLO SIZE; larger is refused with 552)"
  }),
  inboundRatePerIp: variable({
    name: "INBOUND_RATE_PER_IP",
    ...wholeNumber(0),
    defaultValue: 120,
    shownDefault: "120",
    meaning:
      "messages per minute one client address may deliver to an api process's inbound receiver (past it 421 at MAIL FROM); 0 = no limit"
  }),
  inboundRatePerProject: variable({
    name: "INBOUND_RATE_PER_PROJECT",
    ...wholeNumber(0),
    defaultValue: 600,
    shownDefault: "600",
    meaning: "inbound messages per minute one project may receive through an api process (past it 452 at RCPT TO); 0 = no limit"
  }),
  webhookAllowCidrs: variable({
    name: "WEBHOOK_ALLOW_CIDRS",
    ...listOf("comma-separated IP ranges (10.0.0.0/8, fd00::/8) or addresses", isRange),
    defaultValue: [],
    shownDefault: "unset",
    meaning: "private ranges workflow WEBHOOK steps may call anyway; unset, only public unicast addresses"
  }),
  destinationRetryHours: variable({
    name: "DESTINATION_RETRY_HOURS",
    ...number(0, { exclusive: true }),
    defaultValue: 24,
    shownDefault: "24",
    meaning: "how long an event destination's failing delivery is retried (exponential backoff) before it is parked"
  }),
  destinationRetryBaseMs: variable({
    name: "DESTINATION_RETRY_BASE_MS",
    ...wholeNumber(1),
    defaultValue: 5000,
    shownDefault: "5000",
    meaning: "the wait after a destination delivery's first failed attempt; doubled after each further one, up to DESTINATION_RETRY_MAX_MS"
  }),
  destinationRetryMaxMs: variable({
    name: "DESTINATION_RETRY_MAX_MS",
    ...wholeNumber(1),
    defaultValue: 3_600_000,
    shownDefault: "3600000",
    meaning: "the longest wait between two attempts of a destination delivery"
  }),
  destinationTimeoutMs: variable({
    name: "DESTINATION_TIMEOUT_MS",
    ...wholeNumber(100, 120_000),
    defaultValue: 10_000,
    shownDefault: "10000",
    meaning: "how long one delivery attempt to an event destination may take (connect, answer, body) before it counts as failed"
  }),
  destinationConcurrency: variable({
    name: "DESTINATION_CONCURRENCY",
    ...wholeNumber(1, 1000),
    defaultValue: 64,
    shownDefault: "64",
    meaning:
      "delivery attempts one worker makes to one event destination at once (each destination has its own, so a slow one holds up only itself)"
  }),
  destinationDbConnections: variable({
    name: "DESTINATION_DB_CONNECTIONS",
    ...wholeNumber(0, 100),
    defaultValue: 0,
    shownDefault: "0",
    meaning:
      "Postgres connections of a pool of its own for a worker's event destination engine, beside the worker's 20 (its recordings, claims and settlements then do not queue behind workflow and ingest statements); 0 shares the worker's pool"
  }),
  destinationDisableAfterFailures: variable({
    name: "DESTINATION_DISABLE_AFTER_FAILURES",
    ...wholeNumber(0),
    defaultValue: 100,
    shownDefault: "100",
    meaning: "failed delivery attempts in a row after which an event destination is disabled (the dashboard says why); 0 never disables"
  }),
  destinationLogRetentionDays: variable({
    name: "DESTINATION_LOG_RETENTION_DAYS",
    ...wholeNumber(0),
    defaultValue: 14,
    shownDefault: "14",
    meaning:
      "days an event destination's finished deliveries (succeeded, parked) stay in its delivery log (and can be replayed); 0 keeps them forever"
  }),
  disableSignups: variable({
    name: "DISABLE_SIGNUPS",
    ...boolean,
    defaultValue: false,
    shownDefault: "false",
    meaning: "refuse POST /auth/signup (403), except the very first user of an empty installation"
  }),
  requireEmailVerification: variable({
    name: "REQUIRE_EMAIL_VERIFICATION",
    ...boolean,
    defaultValue: false,
    shownDefault: "false",
    meaning: "users who have not verified their email can sign in but not send campaigns or emails from the dashboard"
  }),
  platformFrom: variable({
    name: "PLATFORM_FROM",
    ...mailbox,
    defaultValue: "mailstream <noreply@localhost>",
    shownDefault: "mailstream <noreply@localhost>",
    meaning: "sender of the platform's own mail (email verification, password reset, invitations)"
  }),
  sessionSecret: variable({
    name: "SESSION_SECRET",
    ...text("at least 32 characters", /^.{32,}$/),
    secret: true,
    defaultValue: undefined as string | undefined,
    shownDefault: "unset (generated once and kept in Postgres)",
    meaning: "key signing session cookies (HS256); every api process must share it"
  }),
  sessionTtlHours: variable({
    name: "SESSION_TTL_HOURS",
    ...wholeNumber(1, 8760),
    defaultValue: 168,
    shownDefault: "168",
    meaning: "how long a dashboard session lasts"
  }),
  githubClientId: variable({
    name: "GITHUB_CLIENT_ID",
    ...optional(text("a client id")),
    defaultValue: undefined,
    shownDefault: "unset",
    meaning: "GitHub OAuth app client id (with GITHUB_CLIENT_SECRET: enables GitHub sign-in)"
  }),
  githubClientSecret: variable({
    name: "GITHUB_CLIENT_SECRET",
    ...optional(text("a client secret")),
    secret: true,
    defaultValue: undefined,
    shownDefault: "unset",
    meaning: "GitHub OAuth app client secret"
  }),
  githubUrl: variable({
    name: "GITHUB_URL",
    ...url(["http", "https"]),
    defaultValue: "https://github.com",
    shownDefault: "https://github.com",
    meaning: "GitHub's web address for OAuth (GitHub Enterprise: your server)"
  }),
  githubApiUrl: variable({
    name: "GITHUB_API_URL",
    ...url(["http", "https"]),
    defaultValue: "https://api.github.com",
    shownDefault: "https://api.github.com",
    meaning: "GitHub's API address (GitHub Enterprise: https://host/api/v3)"
  }),
  googleClientId: variable({
    name: "GOOGLE_CLIENT_ID",
    ...optional(text("a client id")),
    defaultValue: undefined,
    shownDefault: "unset",
    meaning: "Google OAuth client id (with GOOGLE_CLIENT_SECRET: enables Google sign-in)"
  }),
  googleClientSecret: variable({
    name: "GOOGLE_CLIENT_SECRET",
    ...optional(text("a client secret")),
    secret: true,
    defaultValue: undefined,
    shownDefault: "unset",
    meaning: "Google OAuth client secret"
  }),
  googleIssuer: variable({
    name: "GOOGLE_ISSUER",
    ...url(["http", "https"]),
    defaultValue: "https://accounts.google.com",
    shownDefault: "https://accounts.google.com",
    meaning: "the OpenID Connect issuer Google sign-in uses (its discovery document is read from it)"
  }),
  maxBounceRate: variable({
    name: "MAX_BOUNCE_RATE",
    ...number(0, { exclusive: true }),
    defaultValue: 5,
    shownDefault: "5",
    meaning: "percent of a project's emails over 7 days that may bounce (checked from 100 sends on) before the project is disabled"
  }),
  maxComplaintRate: variable({
    name: "MAX_COMPLAINT_RATE",
    ...number(0, { exclusive: true }),
    defaultValue: 0.1,
    shownDefault: "0.1",
    meaning: "percent of a project's emails over 7 days that may draw a complaint before the project is disabled"
  }),
  protectionCheckSeconds: variable({
    name: "PROTECTION_CHECK_SECONDS",
    ...wholeNumber(1),
    defaultValue: 60,
    shownDefault: "60",
    meaning: "how often workers check every project's bounce and complaint rates"
  }),
  heldMailCheckSeconds: variable({
    name: "HELD_MAIL_CHECK_SECONDS",
    ...wholeNumber(1),
    defaultValue: 60,
    shownDefault: "60",
    meaning:
      "how often workers resume campaigns and workflow sends held at a monthly billing limit once there is room (the month turned, queued mail failed)"
  }),
  campaignTestSendsPerHour: variable({
    name: "CAMPAIGN_TEST_SENDS_PER_HOUR",
    ...wholeNumber(0),
    defaultValue: 50,
    shownDefault: "50",
    meaning:
      "campaign test sends (POST /campaigns/:id/test, to any address) a project may queue in any hour, beside the campaigns cap they count against; 0 disables the limit"
  }),
  stripeSecretKey: variable({
    name: "STRIPE_SECRET_KEY",
    ...optional(text("a Stripe secret key")),
    secret: true,
    defaultValue: undefined,
    shownDefault: "unset",
    meaning: "Stripe API key; with STRIPE_WEBHOOK_SECRET enables checkout, the billing portal and invoices (unset: billing is off)"
  }),
  stripeWebhookSecret: variable({
    name: "STRIPE_WEBHOOK_SECRET",
    ...optional(text("a webhook signing secret")),
    secret: true,
    defaultValue: undefined,
    shownDefault: "unset",
    meaning: "signing secret of the endpoint POST /webhooks/incoming/stripe"
  }),
  stripePriceId: variable({
    name: "STRIPE_PRICE_ID",
    ...optional(text("a Stripe price id")),
    defaultValue: undefined,
    shownDefault: "unset",
    meaning: "the subscription price checkout sells"
  }),
  stripeApiUrl: variable({
    name: "STRIPE_API_URL",
    ...optional(url(["http", "https"])),
    defaultValue: undefined,
    shownDefault: "unset (Stripe's own)",
    meaning: "another address for the Stripe API (tests point it at a local server)"
  }),
  s3Bucket: variable({
    name: "S3_BUCKET",
    ...optional(text("a bucket name", /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/)),
    defaultValue: undefined,
    shownDefault: "unset",
    meaning: "store uploaded images in this S3-compatible bucket instead of Postgres"
  }),
  s3Endpoint: variable({
    name: "S3_ENDPOINT",
    ...optional(url(["http", "https"])),
    defaultValue: undefined,
    shownDefault: "unset (AWS: https://s3.<S3_REGION>.amazonaws.com)",
    meaning: "the S3-compatible service (MinIO, R2, ...); objects are addressed path-style, <endpoint>/<bucket>/<key>"
  }),
  s3Region: variable({
    name: "S3_REGION",
    ...text("a region name", /^[a-z0-9-]+$/),
    defaultValue: "us-east-1",
    shownDefault: "us-east-1",
    meaning: "the bucket's region (request signing)"
  }),
  s3AccessKeyId: variable({
    name: "S3_ACCESS_KEY_ID",
    ...optional(text("an access key id")),
    defaultValue: undefined,
    shownDefault: "unset",
    meaning: "S3 access key id"
  }),
  s3SecretAccessKey: variable({
    name: "S3_SECRET_ACCESS_KEY",
    ...optional(text("a secret access key")),
    secret: true,
    defaultValue: undefined,
    shownDefault: "unset",
    meaning: "S3 secret access key"
  }),
  uploadMaxBytes: variable({
    name: "UPLOAD_MAX_BYTES",
    ...wholeNumber(1, 50 * 1024 * 1024),
    defaultValue: 5 * 1024 * 1024,
    shownDefault: "5242880",
    meaning: "largest image POST /uploads/image accepts"
  })
}

/** Every setting the service reads, each with a default that works on one machine (see README). */
export interface AppConfigShape {
  readonly port: number
  /** How many api processes `all` starts (1: none, the api runs in `all`'s own process). */
  readonly apiProcesses: number
  readonly databaseUrl: Redacted.Redacted<string>
  /** Comma-separated NATS servers. */
  readonly natsUrl: string
  /** Prefix of every stream, consumer, subject and KV bucket name. */
  readonly natsPrefix: string
  /** Replicas of every stream and consumer on NATS (R3 on a three-node cluster). */
  readonly natsReplicas: number
  /** max_age of streams IN and OUT, in hours; 0: none. */
  readonly streamMaxAgeHours: number
  /** How often a worker purges what is applied from streams IN and OUT (actors/StreamPurge.ts). */
  readonly streamPurgeSeconds: number
  /** Stream partitions; fixed per deployment. */
  readonly partitions: number
  /** Lanes a project's stream traffic is split into by contact; fixed per deployment. */
  readonly lanesPerProject: number
  /** A lane's next batch of tracked events starts while the one before it commits (actors/readAhead.ts). */
  readonly batchReadAhead: boolean
  /** /v1/track requests an api process works on at once before it sheds new ones (503); 0: no limit. */
  readonly trackMaxInFlight: number
  /** Live-update streams per api process (http/live/LiveHub.ts); 0: none. */
  readonly liveMaxClients: number
  /** Live-update streams per dashboard user per api process. */
  readonly liveMaxClientsPerUser: number
  /** Events queued for one live stream before its client is dropped. */
  readonly liveClientBuffer: number
  /** Seconds between heartbeats on a live stream. */
  readonly liveHeartbeatSeconds: number
  /** Events a worker holds delivered and not yet applied before its consumers wait (actors/deliveryBudget.ts). */
  readonly workerMaxPendingEvents: number
  /** Contacts whose segment facts a worker keeps between batches (actors/laneFacts.ts); 0: none. */
  readonly factsCacheContacts: number
  /** Requests per minute per project; 0 disables the limit. */
  readonly rateLimitPerMinute: number
  readonly idempotencyTtlHours: number
  /** How long a claimed Idempotency-Key stays held without renewal (a crashed request's key is free after it). */
  readonly idempotencyLeaseSeconds: number
  /** Base of links in emails, without a trailing slash. */
  readonly publicUrl: string
  readonly logLevel: LogLevel.LogLevel
  /** Proxies whose X-Forwarded-For names the client (CIDR ranges or addresses). */
  readonly trustedProxies: ReadonlyArray<string>
  /** Where /metrics is served instead of PORT (api), or at all (standalone worker). */
  readonly metricsPort: number | undefined
  /** Bearer token /metrics requires; unset → only direct requests from private addresses. */
  readonly metricsToken: Redacted.Redacted<string> | undefined
  readonly clockOffsetMs: number
  /** Resolvers for address verification and domain checks (host:port); empty means the system's. */
  readonly dnsServers: ReadonlyArray<string>
  /** The SMTP relay (`smtp://user:pass@host:port`); unset → mail goes to the file outbox. */
  readonly smtpUrl: Redacted.Redacted<string> | undefined
  readonly smtpPoolSize: number
  /** Threads composing and signing mail (src/mail/composePool.ts); 0: on the event loop. */
  readonly mailThreads: number
  /** Where mail is written when no SMTP relay is configured. */
  readonly outboxDir: string
  /** Days sent mail keeps its rendered content (src/mail/contentRetention.ts); 0: forever. */
  readonly emailContentRetentionDays: number
  /** Default per-project send rate (emails per second); 0 turns the throttle off. */
  readonly sendRatePerSecond: number
  /** How often every sending domain's DNS records are checked again (spec: 5 minutes). */
  readonly domainRecheckSeconds: number
  /** Pins the certificate SNS messages are verified with, instead of fetching SigningCertURL. */
  readonly snsSigningCertFile: string | undefined
  /** SNS topics accepted on /webhooks/ses; empty accepts none, `*` any (signature always required). */
  readonly sesTopicArns: ReadonlyArray<string>
  /** The inbound SMTP receiver's port (src/inbound/SmtpReceiver.ts); undefined: no receiver. */
  readonly inboundSmtpPort: number | undefined
  /** Largest inbound message. */
  readonly inboundMaxBytes: number
  /** Inbound messages per minute per client address, per process; 0: no limit. */
  readonly inboundRatePerIp: number
  /** Inbound messages per minute per project, per process; 0: no limit. */
  readonly inboundRatePerProject: number
  /** Private ranges workflow webhooks may reach anyway (none by default). */
  readonly webhookAllowCidrs: ReadonlyArray<string>
  /** Event destinations (src/destinations): retry period, backoff, attempt timeout, per-destination concurrency, auto-disable. */
  readonly destinationRetryHours: number
  readonly destinationRetryBaseMs: number
  readonly destinationRetryMaxMs: number
  readonly destinationTimeoutMs: number
  readonly destinationConcurrency: number
  /** The engine's own Postgres pool (src/store/db.ts DestinationsPgLive); 0: the process' pool. */
  readonly destinationDbConnections: number
  readonly destinationDisableAfterFailures: number
  readonly destinationLogRetentionDays: number
  /** Signups refused (403) except the very first user of an empty installation. */
  readonly disableSignups: boolean
  /** Unverified users cannot send campaigns or emails from the dashboard. */
  readonly requireEmailVerification: boolean
  /** From header of the platform's own mail. */
  readonly platformFrom: string
  /** Session signing key; unset → generated once and kept in Postgres. */
  readonly sessionSecret: Redacted.Redacted<string> | undefined
  readonly sessionTtlHours: number
  readonly githubClientId: string | undefined
  readonly githubClientSecret: Redacted.Redacted<string> | undefined
  readonly githubUrl: string
  readonly githubApiUrl: string
  readonly googleClientId: string | undefined
  readonly googleClientSecret: Redacted.Redacted<string> | undefined
  readonly googleIssuer: string
  /** Percentages. */
  readonly maxBounceRate: number
  readonly maxComplaintRate: number
  readonly protectionCheckSeconds: number
  readonly heldMailCheckSeconds: number
  readonly campaignTestSendsPerHour: number
  readonly stripeSecretKey: Redacted.Redacted<string> | undefined
  readonly stripeWebhookSecret: Redacted.Redacted<string> | undefined
  readonly stripePriceId: string | undefined
  readonly stripeApiUrl: string | undefined
  readonly uploadMaxBytes: number
  /** Uploaded images go to this bucket when set (else Postgres). */
  readonly s3Bucket: string | undefined
  readonly s3Endpoint: string | undefined
  readonly s3Region: string
  readonly s3AccessKeyId: string | undefined
  readonly s3SecretAccessKey: Redacted.Redacted<string> | undefined
}

/** A value shown back to its owner, its password (if any) masked. */
const shown = (variable: Variable<unknown>, value: string) =>
  !variable.secret ? value : variable.name.endsWith("_URL") ? value.replace(/\/\/([^:/@]*):[^@/]*@/, "//$1:***@") : "***"

/** One variable set to a value it does not accept. */
export interface ConfigProblem {
  readonly name: string
  readonly value: string
  readonly allowed: string
}

/** The process cannot start: one line per bad variable, `PARTITIONS=abc: expected a whole number from 1 to 1024`. */
export class InvalidConfig extends Data.TaggedError("InvalidConfig")<{ readonly problems: ReadonlyArray<ConfigProblem> }> {
  override get message() {
    return this.problems.map((problem) => `${problem.name}=${problem.value}: expected ${problem.allowed}`).join("\n")
  }
}

/** Reads one variable, recording a bad value in `problems` (and carrying on with the default). */
interface ReadVariable extends Struct.Lambda {
  <A>(variable: Variable<A>): Effect.Effect<A>
  readonly "~lambda.out": this["~lambda.in"] extends Variable<infer A> ? Effect.Effect<A> : never
}

const reader = (problems: Array<ConfigProblem>) =>
  Struct.lambda<ReadVariable>(<A>(variable: Variable<A>) =>
    Config.option(Config.String(variable.name)).pipe(
      // Kept a defect: a missing variable is None here; only the provider itself failing at start-up fails it.
      Effect.orDie,
      Effect.map((raw) => {
        const value = Option.getOrUndefined(raw)?.trim() ?? ""
        if (value === "") return variable.defaultValue
        const parsed = variable.parse(value)
        if (Option.isSome(parsed)) return parsed.value
        problems.push({ name: variable.name, value: shown(variable, value), allowed: variable.allowed })
        return variable.defaultValue
      })
    )
  )

const wrap = (text: string, indent: string, width = 100): string => {
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(" ")) {
    if (line !== "" && indent.length + line.length + 1 + word.length > width) {
      lines.push(line)
      line = word
    } else line = line === "" ? word : `${line} ${word}`
  }
  return [...lines, line].map((each) => indent + each).join("\n")
}

/** The variables for `--help`: name, default and meaning, with what each accepts. */
export const environmentHelp = (): string =>
  Object.values(Variables).map((variable: Variable<unknown>) =>
    `  ${variable.name} (default: ${variable.shownDefault})\n${wrap(`${variable.meaning}. Allowed: ${variable.allowed}.`, "      ")}`
  ).join("\n")

const secret = (value: string | undefined) => (value === undefined ? undefined : Redacted.make(value))

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("app/AppConfig") {
  /** Every variable read and checked at once: a process with a bad value does not start. */
  static readonly load: Effect.Effect<AppConfigShape, InvalidConfig> = Effect.gen(function*() {
    const problems: Array<ConfigProblem> = []
    const values = yield* Effect.all(Struct.map(Variables, reader(problems)))
    if (problems.length > 0) return yield* new InvalidConfig({ problems })
    return AppConfig.of({
      ...values,
      // Secrets stay Redacted (logs and inspection show <redacted>) until the one place that uses them.
      databaseUrl: Redacted.make(values.databaseUrl),
      smtpUrl: secret(values.smtpUrl),
      sessionSecret: secret(values.sessionSecret),
      githubClientSecret: secret(values.githubClientSecret),
      googleClientSecret: secret(values.googleClientSecret),
      stripeSecretKey: secret(values.stripeSecretKey),
      stripeWebhookSecret: secret(values.stripeWebhookSecret),
      s3SecretAccessKey: secret(values.s3SecretAccessKey),
      metricsToken: secret(values.metricsToken),
      natsUrl: values.natsUrl.join(","),
      publicUrl: values.publicUrl ?? `http://localhost:${values.port}`,
      mailThreads: values.mailThreads ?? availableParallelism()
    })
  })

  static readonly layer = Layer.effect(AppConfig, AppConfig.load)
}
