/**
 * The configuration table (src/config.ts): every variable read and checked at once, each bad value
 * reported as one line naming the variable, the value and what is allowed; and the README's
 * Configuration table lists exactly the variables the table (and so `--help`) lists.
 */
import { ConfigProvider, Effect, Exit, Redacted } from "effect"
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { AppConfig, environmentHelp, InvalidConfig, Variables } from "../../src/config.ts"

const load = (env: Record<string, string>) =>
  Effect.runPromiseExit(AppConfig.load.pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)))))

const problems = async (env: Record<string, string>) => {
  const exit = await load(env)
  if (Exit.isSuccess(exit)) throw new Error(`accepted ${JSON.stringify(env)}`)
  const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error
  expect(error).toBeInstanceOf(InvalidConfig)
  return error instanceof InvalidConfig ? error.message.split("\n") : []
}

const names = Object.values(Variables).map((variable) => variable.name)

describe("configuration", () => {
  it("defaults work on one machine", async () => {
    const exit = await load({})
    expect(Exit.isSuccess(exit)).toBe(true)
    if (!Exit.isSuccess(exit)) return
    const config = exit.value
    expect(config).toMatchObject({
      port: 3000,
      natsUrl: "nats://127.0.0.1:4222",
      natsPrefix: "mailstream",
      natsReplicas: 1,
      partitions: 32,
      lanesPerProject: 16,
      rateLimitPerMinute: 1000,
      logLevel: "Info",
      publicUrl: "http://localhost:3000",
      smtpUrl: undefined,
      metricsPort: undefined,
      dnsServers: [],
      webhookAllowCidrs: [],
      trustedProxies: []
    })
    expect(config.apiProcesses).toBeGreaterThanOrEqual(1)
    expect(Redacted.value(config.databaseUrl)).toBe("postgres://postgres@127.0.0.1:5432/postgres")
  })

  it("parses what it is given; empty means unset", async () => {
    const exit = await load({
      PORT: "8080",
      API_PROCESSES: "3",
      LOG_LEVEL: "debug",
      PUBLIC_URL: "https://mail.example.com/",
      LANES_PER_PROJECT: "64",
      NATS_URL: "nats://a:4222, b:4223",
      DNS_SERVERS: "127.0.0.1:5353,[::1]:53",
      WEBHOOK_ALLOW_CIDRS: "10.0.0.0/8,fd00::/8,127.0.0.2",
      SES_TOPIC_ARNS: "arn:aws:sns:eu-west-1:123456789012:ses-events",
      CLOCK_OFFSET_MS: "-5000",
      SEND_RATE_PER_SECOND: "0.5",
      SMTP_URL: "",
      METRICS_PORT: "0",
      TRUSTED_PROXIES: "172.30.253.0/24, ::1,10.0.0.7"
    })
    expect(Exit.isSuccess(exit)).toBe(true)
    if (!Exit.isSuccess(exit)) return
    expect(exit.value).toMatchObject({
      port: 8080,
      apiProcesses: 3,
      logLevel: "Debug",
      publicUrl: "https://mail.example.com",
      lanesPerProject: 64,
      natsUrl: "nats://a:4222,b:4223",
      dnsServers: ["127.0.0.1:5353", "[::1]:53"],
      webhookAllowCidrs: ["10.0.0.0/8", "fd00::/8", "127.0.0.2"],
      clockOffsetMs: -5000,
      sendRatePerSecond: 0.5,
      smtpUrl: undefined,
      metricsPort: 0,
      trustedProxies: ["172.30.253.0/24", "::1", "10.0.0.7"]
    })
  })

  it.each([
    ["PARTITIONS", "abc", "PARTITIONS=abc: expected a whole number from 1 to 1024"],
    ["PARTITIONS", "0", "PARTITIONS=0: expected a whole number from 1 to 1024"],
    ["PORT", "65536", "PORT=65536: expected a whole number from 0 to 65535"],
    ["PORT", "80.5", "PORT=80.5: expected a whole number from 0 to 65535"],
    ["API_PROCESSES", "0", "API_PROCESSES=0: expected a whole number from 1 to 256"],
    ["LANES_PER_PROJECT", "12", "LANES_PER_PROJECT=12: expected a power of two from 1 to 256"],
    ["LANES_PER_PROJECT", "512", "LANES_PER_PROJECT=512: expected a power of two from 1 to 256"],
    ["RATE_LIMIT_PER_MINUTE", "-1", "RATE_LIMIT_PER_MINUTE=-1: expected a whole number of at least 0"],
    ["IDEMPOTENCY_TTL_HOURS", "0", "IDEMPOTENCY_TTL_HOURS=0: expected a number greater than 0"],
    ["LOG_LEVEL", "loud", "LOG_LEVEL=loud: expected one of All, Fatal, Error, Warn, Info, Debug, Trace, None (any case)"],
    ["DATABASE_URL", "mysql://app:hunter2@db/app", "DATABASE_URL=mysql://app:***@db/app: expected a postgres:// or postgresql:// URL"],
    [
      "NATS_URL",
      "http://nats:4222",
      "NATS_URL=http://nats:4222: expected comma-separated NATS servers (nats://host:port, tls://host:port or host:port)"
    ],
    ["NATS_PREFIX", "my.prefix", "NATS_PREFIX=my.prefix: expected 1 to 32 letters, digits, _ or -"],
    ["NATS_REPLICAS", "2.5", "NATS_REPLICAS=2.5: expected a whole number from 1 to 5"],
    ["PUBLIC_URL", "mail.example.com", "PUBLIC_URL=mail.example.com: expected a http:// or https:// URL"],
    ["SMTP_URL", "smtp//relay", "SMTP_URL=smtp//relay: expected a smtp:// or smtps:// URL"],
    ["SMTP_URL", "http://user:secret@relay:587", "SMTP_URL=http://user:***@relay:587: expected a smtp:// or smtps:// URL"],
    ["METRICS_PORT", "metrics", "METRICS_PORT=metrics: expected a whole number from 0 to 65535"],
    ["METRICS_TOKEN", "short", "METRICS_TOKEN=***: expected at least 16 characters"],
    ["DNS_SERVERS", "dns.local", "DNS_SERVERS=dns.local: expected comma-separated resolver addresses (1.2.3.4, 1.2.3.4:53, [::1]:53)"],
    [
      "WEBHOOK_ALLOW_CIDRS",
      "10.0.0.0/8,10.0.0.0/33",
      "WEBHOOK_ALLOW_CIDRS=10.0.0.0/8,10.0.0.0/33: expected comma-separated IP ranges (10.0.0.0/8, fd00::/8) or addresses"
    ],
    ["TRUSTED_PROXIES", "caddy", "TRUSTED_PROXIES=caddy: expected comma-separated IP ranges (172.16.0.0/12, fd00::/8) or addresses"],
    [
      "TRUSTED_PROXIES",
      "172.30.253.0/33",
      "TRUSTED_PROXIES=172.30.253.0/33: expected comma-separated IP ranges (172.16.0.0/12, fd00::/8) or addresses"
    ],
    [
      "SES_TOPIC_ARNS",
      "ses-events",
      "SES_TOPIC_ARNS=ses-events: expected comma-separated SNS topic ARNs (arn:aws:sns:region:account:name), or * for any"
    ],
    ["SEND_RATE_PER_SECOND", "-3", "SEND_RATE_PER_SECOND=-3: expected a number of at least 0"],
    ["DOMAIN_RECHECK_SECONDS", "0", "DOMAIN_RECHECK_SECONDS=0: expected a whole number of at least 1"],
    ["SMTP_POOL_SIZE", "lots", "SMTP_POOL_SIZE=lots: expected a whole number from 1 to 1000"],
    ["CLOCK_OFFSET_MS", "1e3", "CLOCK_OFFSET_MS=1e3: expected a whole number (negative allowed)"]
  ])("refuses %s=%s with one line", async (name, value, line) => {
    expect(await problems({ [name]: value })).toEqual([line])
  })

  it("keeps secrets Redacted: their values only through Redacted.value, never in the config's printed form", async () => {
    const secrets = {
      SMTP_URL: "smtp://mailer:smtp-pass-1@relay.example.com:587",
      SESSION_SECRET: "session-secret-0123456789-abcdefghijkl",
      GITHUB_CLIENT_SECRET: "github-secret-2",
      GOOGLE_CLIENT_SECRET: "google-secret-3",
      STRIPE_SECRET_KEY: "sk_test_4",
      STRIPE_WEBHOOK_SECRET: "whsec_5",
      S3_SECRET_ACCESS_KEY: "s3-secret-6",
      METRICS_TOKEN: "metrics-token-7-0123456"
    }
    const exit = await load(secrets)
    expect(Exit.isSuccess(exit)).toBe(true)
    if (!Exit.isSuccess(exit)) return
    const config = exit.value
    const values = [
      config.smtpUrl,
      config.sessionSecret,
      config.githubClientSecret,
      config.googleClientSecret,
      config.stripeSecretKey,
      config.stripeWebhookSecret,
      config.s3SecretAccessKey,
      config.metricsToken
    ]
    expect(values.map((value) => Redacted.isRedacted(value) ? Redacted.value(value) : value)).toEqual(Object.values(secrets))
    const printed = `${JSON.stringify(config)} ${String(values)}`
    for (
      const secret of [
        "smtp-pass-1",
        "session-secret",
        "github-secret-2",
        "google-secret-3",
        "sk_test_4",
        "whsec_5",
        "s3-secret-6",
        "metrics-token-7"
      ]
    ) {
      expect(printed).not.toContain(secret)
    }
  })

  it("reports every bad variable at once, one line each", async () => {
    expect(await problems({ PARTITIONS: "many", PORT: "-1", LOG_LEVEL: "Info" })).toEqual([
      "PORT=-1: expected a whole number from 0 to 65535",
      "PARTITIONS=many: expected a whole number from 1 to 1024"
    ])
  })

  it("--help's environment section names every variable with its default and meaning", () => {
    const help = environmentHelp()
    for (const variable of Object.values(Variables)) {
      expect(help).toContain(`  ${variable.name} (default: ${variable.shownDefault})\n`)
      expect(help.replace(/\s+/g, " ")).toContain(`${variable.meaning}. Allowed: ${variable.allowed}.`)
    }
  })

  it("the README's Configuration table lists exactly these variables", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8")
    const section = readme.slice(readme.indexOf("## Configuration"), readme.indexOf("\n## ", readme.indexOf("## Configuration") + 1))
    const documented = [...section.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((match) => match[1])
    expect(documented.sort()).toEqual([...names].sort())
  })
})
