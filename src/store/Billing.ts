/**
 * Monthly consumption and caps per project and category.
 *
 * Consumption counts the emails the sender actually accepted (`sent_at` set) in the calendar month
 * (UTC): one row per email, so a retried send is never counted twice; and received mail (`inbound`) in
 * the month it arrived. A cap limits what may be
 * *queued* in the month (sent or still pending, failures and suppressed mail excluded), so mail queued
 * but not yet sent counts against it too; `reserve` checks and queues under a per-(project, category)
 * transaction lock, so two concurrent sends cannot both take the last unit.
 *
 * Both also add what a project reset deleted (`billing_carryover`, written by `wipeEmails`), so a reset
 * does not give the month back.
 */
import { Clock, Context, Data, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { mapSqlError, type PersistenceError } from "./PersistenceError.ts"

export const Categories = ["transactional", "campaigns", "workflows", "inbound"] as const
export type Category = typeof Categories[number]

export type Limits = { readonly [K in Category]: number | null }
export type Consumption = { readonly [K in Category]: number }

/**
 * The category of an email row, as SQL over the `emails` columns: the one it names (a campaign's test
 * send), else the one its campaign or workflow implies.
 */
const categoryOf = (sql: SqlClient.SqlClient) =>
  sql.literal(
    `COALESCE(billing_category, CASE WHEN campaign_id IS NOT NULL THEN 'campaigns' WHEN workflow_id IS NOT NULL THEN 'workflows' ELSE 'transactional' END)`
  )

const monthStart = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1))
/** The month's key in `billing_carryover`: its first day, `2026-11-01`. */
const monthKey = (now: Date) => monthStart(now).toISOString().slice(0, 10)

/** The calendar month (UTC) of a timestamp column, as a date. */
const monthOf = (column: string) => `date_trunc('month', ${column} AT TIME ZONE 'UTC')::date`

/**
 * Deletes the project's emails (a reset, in the caller's transaction), first adding what they counted to
 * `billing_carryover`, read from the very rows deleted (DELETE … RETURNING: nothing claimed meanwhile is
 * missed). Counted towards the cap: mail sent or in flight (SENDING: the relay may accept it; its outcome
 * is no longer recorded); queued mail not yet claimed is dropped by the reset, never sent, so not counted.
 * Counted as consumption: mail sent in the month it was queued (as `consumption` counts), and in flight.
 */
export const wipeEmails = (sql: SqlClient.SqlClient, projectId: string) =>
  sql`
    WITH gone AS (
      DELETE FROM emails WHERE project_id = ${projectId}
      RETURNING ${categoryOf(sql)} AS category, status, ${sql.literal(monthOf("created_at"))} AS month,
                ${sql.literal(monthOf("sent_at"))} AS sent_month
    )
    INSERT INTO billing_carryover AS c (project_id, month, category, queued, sent)
    SELECT ${projectId}, month, category,
           count(*) FILTER (WHERE status NOT IN ('PENDING', 'FAILED', 'SUPPRESSED')),
           count(*) FILTER (WHERE status IN ('SENDING', 'RECEIVED') OR sent_month = month)
    FROM gone GROUP BY month, category
    ON CONFLICT (project_id, month, category) DO UPDATE SET queued = c.queued + EXCLUDED.queued, sent = c.sent + EXCLUDED.sent`.pipe(
    Effect.asVoid,
    mapSqlError
  )
/** The start of the next calendar month (UTC), when every cap's count starts again from zero. */
export const monthTurn = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1))

const noLimits: Limits = { transactional: null, campaigns: null, workflows: null, inbound: null }

/** The text recorded on a campaign or workflow held at a cap. */
export const holdReason = (category: Category, limit: number) =>
  `Monthly ${category} email limit (${limit}) reached; queueing resumes when the limit is raised or the month turns`

export class BillingLimitExceeded extends Data.TaggedError("BillingLimitExceeded")<{
  readonly category: Category
  readonly limit: number
  readonly used: number
}> {}

export class Billing extends Context.Service<Billing, {
  readonly limits: (projectId: string) => Effect.Effect<Limits, PersistenceError>
  readonly setLimits: (projectId: string, limits: Limits) => Effect.Effect<Limits, PersistenceError>
  readonly consumption: (
    projectId: string,
    now?: Date
  ) => Effect.Effect<{ readonly periodStart: Date; readonly periodEnd: Date; readonly usage: Consumption }, PersistenceError>
  /** How many more emails of the category may be queued this month; null = no cap. */
  readonly remaining: (projectId: string, category: Category) => Effect.Effect<number | null, PersistenceError>
  /**
   * Claims `count` emails of the month's cap; call it inside the transaction that queues them (the lock
   * is held until it commits). Fails with BillingLimitExceeded when they do not all fit.
   */
  readonly reserve: (projectId: string, category: Category, count: number) => Effect.Effect<void, BillingLimitExceeded | PersistenceError>
  /**
   * Locks the category's cap for the caller's transaction and answers the cap and what is left of it
   * this month; null when there is no cap. For callers that hand out the room one email at a time
   * (the workflow engine, whose mail of a batch is inserted only at its end).
   */
  readonly allowance: (
    projectId: string,
    category: Category
  ) => Effect.Effect<{ readonly limit: number; readonly remaining: number } | null, PersistenceError>
  /**
   * Like `reserve`, but grants what fits: the number of emails (0..count) the caller may queue now.
   * For campaign and workflow queueing, which stop at the cap instead of failing.
   */
  readonly grant: (projectId: string, category: Category, count: number) => Effect.Effect<number, PersistenceError>
  /**
   * Records on a campaign or workflow why it stopped queueing (reason), or that it may go on (null).
   * For the engine: set it when `grant` answers less than asked, clear it when a later `grant` succeeds.
   */
  readonly recordHold: (kind: "campaign" | "workflow", id: string, reason: string | null) => Effect.Effect<void, PersistenceError>
  /** The project's Stripe customer, once a checkout created one. */
  readonly customerOf: (projectId: string) => Effect.Effect<string | null, PersistenceError>
  readonly setCustomer: (projectId: string, customerId: string) => Effect.Effect<void, PersistenceError>
  /** Records a subscription's state (from Stripe's webhook) on the project it was bought for. */
  readonly recordSubscription: (
    change: {
      readonly projectId?: string | undefined
      readonly customerId: string
      readonly subscriptionId: string | null
      readonly status: string
    }
  ) => Effect.Effect<void, PersistenceError>
}>()("app/store/Billing") {
  static readonly layer = Layer.effect(
    Billing,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* Clock.Clock

      const limits = Effect.fn("Billing.limits")(function*(projectId: string) {
        const [row] = yield* sql<{ billing_limits: Partial<Record<Category, number | null>> }>`
          SELECT billing_limits FROM projects WHERE id = ${projectId}`
        return { ...noLimits, ...row?.billing_limits }
      }, mapSqlError)

      const setLimits = Effect.fn("Billing.setLimits")(function*(projectId: string, next: Limits) {
        yield* sql`UPDATE projects SET billing_limits = ${JSON.stringify(next)}::jsonb, updated_at = now() WHERE id = ${projectId}`
        return next
      }, mapSqlError)

      const consumption = Effect.fn("Billing.consumption")(
        function*(projectId: string, now: Date = new Date(clock.currentTimeMillisUnsafe())) {
          const periodStart = monthStart(now)
          const periodEnd = monthTurn(now)
          const rows = yield* sql<{ category: Category; n: number }>`
          SELECT category, sum(n)::int AS n FROM (
            SELECT ${categoryOf(sql)} AS category, count(*) AS n FROM emails
            WHERE project_id = ${projectId} AND created_at >= ${periodStart}
              AND (sent_at >= ${periodStart} AND sent_at < ${periodEnd}
                   -- Received mail counts in the month it arrived (inbound).
                   OR direction = 'inbound' AND created_at < ${periodEnd})
            GROUP BY 1
            UNION ALL
            SELECT category, sent FROM billing_carryover WHERE project_id = ${projectId} AND month = ${monthKey(now)}::date
          ) counted GROUP BY category`
          const usage: Record<Category, number> = { transactional: 0, campaigns: 0, workflows: 0, inbound: 0 }
          for (const row of rows) usage[row.category] = row.n
          return { periodStart, periodEnd, usage }
        },
        mapSqlError
      )

      /** What the month's cap already holds: sent or still queued mail of the category, and what resets deleted. */
      const used = (projectId: string, category: Category) => {
        const now = new Date(clock.currentTimeMillisUnsafe())
        return sql<{ n: number }>`
          SELECT ((SELECT count(*) FROM emails
                   WHERE project_id = ${projectId} AND created_at >= ${monthStart(now)}
                     AND status NOT IN ('FAILED', 'SUPPRESSED') AND ${categoryOf(sql)} = ${category})
                + COALESCE((SELECT queued FROM billing_carryover
                            WHERE project_id = ${projectId} AND month = ${monthKey(now)}::date AND category = ${category}), 0))::int AS n`
          .pipe(
            Effect.map((rows) => rows[0]!.n)
          )
      }

      const lock = (projectId: string, category: Category) =>
        sql`SELECT pg_advisory_xact_lock(hashtext(${`billing:${projectId}:${category}`}))`

      const remaining = Effect.fn("Billing.remaining")(function*(projectId: string, category: Category) {
        const cap = (yield* limits(projectId))[category]
        if (cap === null) return null
        return Math.max(0, cap - (yield* used(projectId, category)))
      }, mapSqlError)

      const allowance = Effect.fn("Billing.allowance")(function*(projectId: string, category: Category) {
        const cap = (yield* limits(projectId))[category]
        if (cap === null) return null
        yield* lock(projectId, category)
        return { limit: cap, remaining: Math.max(0, cap - (yield* used(projectId, category))) }
      }, mapSqlError)

      const grant = (projectId: string, category: Category, count: number) =>
        Effect.map(allowance(projectId, category), (room) => (room === null ? count : Math.min(count, room.remaining)))

      const reserve = Effect.fn("Billing.reserve")(function*(projectId: string, category: Category, count: number) {
        const cap = (yield* limits(projectId))[category]
        if (cap === null) return
        yield* lock(projectId, category)
        const taken = yield* used(projectId, category)
        if (taken + count > cap) return yield* Effect.fail(new BillingLimitExceeded({ category, limit: cap, used: taken }))
      }, mapSqlError)

      const recordHold = (kind: "campaign" | "workflow", id: string, reason: string | null) =>
        (kind === "campaign"
          ? sql`UPDATE campaigns SET billing_hold = ${reason} WHERE id = ${id}`
          : sql`UPDATE workflows SET billing_hold = ${reason} WHERE id = ${id}`).pipe(Effect.asVoid, mapSqlError)

      const customerOf = (projectId: string) =>
        sql<{ stripe_customer_id: string | null }>`SELECT stripe_customer_id FROM projects WHERE id = ${projectId}`.pipe(
          Effect.map((rows) => rows[0]?.stripe_customer_id ?? null),
          mapSqlError
        )
      const setCustomer = (projectId: string, customerId: string) =>
        sql`UPDATE projects SET stripe_customer_id = ${customerId}, updated_at = now() WHERE id = ${projectId}`.pipe(
          Effect.asVoid,
          mapSqlError
        )
      const recordSubscription = (change: {
        readonly projectId?: string | undefined
        readonly customerId: string
        readonly subscriptionId: string | null
        readonly status: string
      }) =>
        sql`UPDATE projects SET stripe_customer_id = ${change.customerId},
              stripe_subscription_id = COALESCE(${change.subscriptionId}, stripe_subscription_id),
              subscription_status = ${change.status}, updated_at = now()
            WHERE ${change.projectId ? sql`id = ${change.projectId}` : sql`stripe_customer_id = ${change.customerId}`}`.pipe(
          Effect.asVoid,
          mapSqlError
        )

      return Billing.of({
        limits,
        setLimits,
        consumption,
        remaining,
        reserve,
        allowance,
        grant,
        recordHold,
        customerOf,
        setCustomer,
        recordSubscription
      })
    })
  )
}
