/**
 * The variables of the service's features: workflow webhooks and destinations, accounts and sign-in,
 * sender protection, billing and uploads. How the service runs has its own in serviceVariables.ts;
 * src/config.ts reads both.
 */
import { boolean, isRange, listOf, mailbox, number, optional, text, url, variable, wholeNumber } from "./rules.ts"

export const FeatureVariables = {
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
