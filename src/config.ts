import { Config, Context, Effect, Layer, Redacted } from "effect"

/** Every setting the service reads, each with a default that works on one machine (see README). */
export interface AppConfigShape {
  readonly port: number
  readonly databaseUrl: Redacted.Redacted<string>
  readonly natsUrl: string
  /** Prefix of every stream, consumer, subject and KV bucket name. */
  readonly natsPrefix: string
  /** Stream partitions; fixed per deployment. */
  readonly partitions: number
  /** Lanes per project (a power of two up to 256): how far one project spreads over partitions. */
  readonly lanesPerProject: number
  /** Requests per minute per project; 0 disables the limit. */
  readonly rateLimitPerMinute: number
  readonly idempotencyTtlHours: number
  /** How long a claimed Idempotency-Key stays held without renewal (a crashed request's key is free after it). */
  readonly idempotencyLeaseSeconds: number
  readonly publicUrl: string
  readonly logLevel: string
  /** Resolvers for address verification and domain checks (host:port); empty means the system's. */
  readonly dnsServers: ReadonlyArray<string>
  /** The SMTP relay (`smtp://user:pass@host:port`); unset → mail goes to the file outbox. */
  readonly smtpUrl: string | undefined
  readonly smtpPoolSize: number
  /** Where mail is written when no SMTP relay is configured. */
  readonly outboxDir: string
  /** Default per-project send rate (emails per second); 0 turns the throttle off. */
  readonly sendRatePerSecond: number
  /** How often every sending domain's DNS records are checked again (spec: 5 minutes). */
  readonly domainRecheckSeconds: number
  /** Pins the certificate SNS messages are verified with, instead of fetching SigningCertURL. */
  readonly snsSigningCertFile: string | undefined
  /** SNS topics accepted on /webhooks/ses; empty accepts none, `*` any (signature always required). */
  readonly sesTopicArns: ReadonlyArray<string>
  /** Private ranges workflow webhooks may reach anyway (none by default). */
  readonly webhookAllowCidrs: ReadonlyArray<string>
}

/** A comma-separated variable as a list (empty when unset). */
const list = (name: string) =>
  Config.String(name).pipe(
    Config.withDefault(""),
    Config.map((value) => value.split(",").map((item) => item.trim()).filter((item) => item !== ""))
  )

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("app/AppConfig") {
  static readonly load = Effect.gen(function*() {
    // 0 asks the OS for a free port (tests, benchmarks).
    const port = yield* Config.Int("PORT").pipe(Config.withDefault(3000))
    return AppConfig.of({
      port,
      databaseUrl: yield* Config.Redacted("DATABASE_URL").pipe(
        Config.withDefault(Redacted.make("postgres://postgres@127.0.0.1:5432/postgres"))
      ),
      natsUrl: yield* Config.String("NATS_URL").pipe(Config.withDefault("nats://127.0.0.1:4222")),
      natsPrefix: yield* Config.String("NATS_PREFIX").pipe(Config.withDefault("mailstream")),
      partitions: yield* Config.Int("PARTITIONS").pipe(Config.withDefault(32)),
      lanesPerProject: yield* Config.Int("LANES_PER_PROJECT").pipe(Config.withDefault(16)),
      rateLimitPerMinute: yield* Config.Int("RATE_LIMIT_PER_MINUTE").pipe(Config.withDefault(1000)),
      idempotencyTtlHours: yield* Config.Number("IDEMPOTENCY_TTL_HOURS").pipe(Config.withDefault(24)),
      idempotencyLeaseSeconds: yield* Config.Number("IDEMPOTENCY_LEASE_SECONDS").pipe(Config.withDefault(30)),
      publicUrl: yield* Config.String("PUBLIC_URL").pipe(Config.withDefault(`http://localhost:${port}`)),
      logLevel: yield* Config.String("LOG_LEVEL").pipe(Config.withDefault("Info")),
      smtpUrl: yield* Config.String("SMTP_URL").pipe(Config.withDefault(""), Config.map((url) => url || undefined)),
      smtpPoolSize: yield* Config.Int("SMTP_POOL_SIZE").pipe(Config.withDefault(10)),
      outboxDir: yield* Config.String("OUTBOX_DIR").pipe(Config.withDefault(".data/outbox")),
      sendRatePerSecond: yield* Config.Number("SEND_RATE_PER_SECOND").pipe(Config.withDefault(100)),
      domainRecheckSeconds: yield* Config.Int("DOMAIN_RECHECK_SECONDS").pipe(Config.withDefault(300)),
      snsSigningCertFile: yield* Config.String("SNS_SIGNING_CERT_FILE").pipe(Config.withDefault(""), Config.map((file) => file || undefined)),
      sesTopicArns: yield* list("SES_TOPIC_ARNS"),
      webhookAllowCidrs: yield* list("WEBHOOK_ALLOW_CIDRS"),
      dnsServers: yield* list("DNS_SERVERS")
    })
  })

  static readonly layer = Layer.effect(AppConfig, AppConfig.load)
}
