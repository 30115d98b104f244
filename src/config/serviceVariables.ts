/**
 * The variables of how the service runs: its processes and port, Postgres, NATS and the streams,
 * partitions and actors, live updates, rate limits, logging, metrics, DNS, and mail out and in.
 * The service's features have theirs in featureVariables.ts; src/config.ts reads both.
 */
import { LogLevel } from "effect"
import { availableParallelism } from "node:os"
import {
  anyWholeNumber,
  boolean,
  DEFAULT_DATABASE_URL,
  isNatsServer,
  isRange,
  isResolver,
  isSnsTopic,
  listOf,
  logLevel,
  number,
  optional,
  powerOfTwo,
  text,
  url,
  variable,
  wholeNumber
} from "./rules.ts"

/** NATS_PREFIX: it starts every stream, subject, consumer and bucket name, so it holds no dots or wildcards. */
export const PREFIX_PATTERN = /^[A-Za-z0-9_-]{1,32}$/

export const ServiceVariables = {
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
  workerThread: variable({
    name: "WORKER_THREAD",
    ...boolean,
    defaultValue: availableParallelism() >= 2,
    shownDefault: "true with 2 or more CPU cores",
    meaning:
      "with API_PROCESSES=1, `all` runs its worker on a thread of its own: one process, two event loops, so under load the api and the worker each use a core (costs ~40 MiB idle)"
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
  })
}
