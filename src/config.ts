/**
 * Every environment variable the service reads, in one table: its default, its meaning and what is
 * allowed. The table is read once at start (a bad value stops the process with one line naming the
 * variable, the value and what is allowed) and rendered by `--help`, so the two cannot drift. The table's
 * rows are written in src/config/ (serviceVariables.ts, featureVariables.ts, with the rules of rules.ts).
 */
import { Config, Context, Data, Effect, Layer, LogLevel, Option, Redacted, Struct } from "effect"
import { availableParallelism } from "node:os"
import type { Variable } from "./config/rules.ts"
import { FeatureVariables } from "./config/featureVariables.ts"
import { ServiceVariables } from "./config/serviceVariables.ts"

/** Every variable, in the order `--help` lists them. */
export const Variables = { ...ServiceVariables, ...FeatureVariables }

/** Every setting the service reads, each with a default that works on one machine (see README). */
export interface AppConfigShape {
  readonly port: number
  /** How many api processes `all` starts (1: none, the api runs in `all`'s own process). */
  readonly apiProcesses: number
  /** `all` with one api process runs its worker on a thread of its own. */
  readonly workerThread: boolean
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
