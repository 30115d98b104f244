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
  /** Requests per minute per project; 0 disables the limit. */
  readonly rateLimitPerMinute: number
  readonly idempotencyTtlHours: number
  readonly publicUrl: string
  readonly logLevel: string
  /** Resolvers for address verification and domain checks (host:port); empty means the system's. */
  readonly dnsServers: ReadonlyArray<string>
}

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
      rateLimitPerMinute: yield* Config.Int("RATE_LIMIT_PER_MINUTE").pipe(Config.withDefault(1000)),
      idempotencyTtlHours: yield* Config.Number("IDEMPOTENCY_TTL_HOURS").pipe(Config.withDefault(24)),
      publicUrl: yield* Config.String("PUBLIC_URL").pipe(Config.withDefault(`http://localhost:${port}`)),
      logLevel: yield* Config.String("LOG_LEVEL").pipe(Config.withDefault("Info")),
      dnsServers: (yield* Config.String("DNS_SERVERS").pipe(Config.withDefault(""))).split(",").map((s) => s.trim()).filter((s) => s !== "")
    })
  })

  static readonly layer = Layer.effect(AppConfig, AppConfig.load)
}
