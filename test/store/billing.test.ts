/**
 * The Billing repository at the layer level, against a real migrated Postgres of its own (no service
 * processes): caps per category (none by default), what is left of them this month (sent or queued
 * mail of the category, failures excluded), `reserve` refusing what does not fit (BillingLimitExceeded)
 * where `grant` hands out what fits, consumption counting mail actually sent, what a project reset
 * deleted still counted, and the Stripe customer.
 */
import { assert, describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../../src/domain/ids.ts"
import { Billing, BillingLimitExceeded, type Limits, wipeEmails } from "../../src/store/Billing.ts"
import { insertProject, TestDatabase } from "../support/database.ts"

const Repositories = Billing.layer.pipe(Layer.provideMerge(TestDatabase))

const noLimits: Limits = { transactional: null, campaigns: null, workflows: null, inbound: null }

/**
 * Mail of the project, in this status (sent_at set when SENT): transactional, or of a campaign, or a
 * campaign's test send (no campaign, its category named); queued `monthsAgo` calendar months back.
 */
const insertMail = (
  projectId: string,
  status: "PENDING" | "SENDING" | "SENT" | "FAILED",
  count: number,
  options: { readonly kind?: "transactional" | "campaign" | "testSend"; readonly monthsAgo?: number } = {}
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const at = sql`now() - ${`${options.monthsAgo ?? 0} months`}::interval`
    for (let i = 0; i < count; i++) {
      const id = uuidv7()
      yield* sql`INSERT INTO emails (id, project_id, partition, to_email, from_email, subject, html, type, priority, message_id, status,
                                     created_at, sent_at, campaign_id, billing_category)
                 VALUES (${id}, ${projectId}, 0, 'reader@example.org', 'news@mail.example.com', 's', 'h', 'TRANSACTIONAL', 0,
                         ${`${id}@mail.example.com`}, ${status}, ${at}, ${status === "SENT" ? at : null},
                         ${options.kind === "campaign" ? uuidv7() : null}, ${options.kind === "testSend" ? "campaigns" : null})`
    }
  })

layer(Repositories, { timeout: 60_000, excludeTestServices: true })("Billing", (it) => {
  describe("caps", () => {
    it.effect("no cap by default; a cap counts sent and queued mail of its category, not failures", () =>
      Effect.gen(function*() {
        const billing = yield* Billing
        const project = yield* insertProject
        expect(yield* billing.limits(project)).toEqual(noLimits)
        expect(yield* billing.remaining(project, "transactional")).toBeNull()
        expect(yield* billing.allowance(project, "transactional")).toBeNull()
        expect(yield* billing.grant(project, "transactional", 7)).toBe(7)

        const limits = { ...noLimits, transactional: 5 }
        expect(yield* billing.setLimits(project, limits)).toEqual(limits)
        expect(yield* billing.limits(project)).toEqual(limits)
        yield* insertMail(project, "SENT", 2)
        yield* insertMail(project, "PENDING", 1)
        yield* insertMail(project, "FAILED", 3)
        expect(yield* billing.remaining(project, "transactional")).toBe(2)
        expect(yield* billing.remaining(project, "campaigns")).toBeNull()
        expect(yield* billing.allowance(project, "transactional")).toEqual({ limit: 5, remaining: 2 })
        expect(yield* billing.grant(project, "transactional", 3)).toBe(2)

        yield* billing.reserve(project, "transactional", 2)
        const refused = yield* Effect.flip(billing.reserve(project, "transactional", 3))
        assert.instanceOf(refused, BillingLimitExceeded)
        expect({ ...refused }).toMatchObject({ category: "transactional", limit: 5, used: 3 })
      }))

    it.effect("consumption counts the mail sent this month, per category", () =>
      Effect.gen(function*() {
        const billing = yield* Billing
        const project = yield* insertProject
        yield* insertMail(project, "SENT", 2)
        yield* insertMail(project, "PENDING", 4)
        const now = new Date()
        const { periodStart, periodEnd, usage } = yield* billing.consumption(project, now)
        expect(usage).toEqual({ transactional: 2, campaigns: 0, workflows: 0, inbound: 0 })
        expect(periodStart.toISOString()).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString())
        expect(periodEnd.toISOString()).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString())
      }))
  })

  describe("a project reset", () => {
    it.effect("wipes the emails but not what they counted: sent and in-flight mail stays counted, unsent queued mail does not", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const billing = yield* Billing
        const project = yield* insertProject
        yield* billing.setLimits(project, { ...noLimits, transactional: 10, campaigns: 10 })
        yield* insertMail(project, "SENT", 2)
        yield* insertMail(project, "SENDING", 1) // the relay may be taking it as the reset runs
        yield* insertMail(project, "PENDING", 3) // dropped by the reset before any send: never goes out
        yield* insertMail(project, "FAILED", 1)
        yield* insertMail(project, "SENT", 1, { kind: "campaign" })
        yield* insertMail(project, "SENT", 1, { kind: "testSend" })
        yield* insertMail(project, "SENT", 4, { monthsAgo: 1 })
        expect(yield* billing.remaining(project, "transactional")).toBe(4)
        expect(yield* billing.remaining(project, "campaigns")).toBe(8)

        yield* sql.withTransaction(wipeEmails(sql, project))
        expect(yield* sql`SELECT 1 FROM emails WHERE project_id = ${project}`).toHaveLength(0)
        expect(yield* billing.remaining(project, "transactional")).toBe(7)
        expect(yield* billing.remaining(project, "campaigns")).toBe(8)
        expect((yield* billing.consumption(project)).usage).toEqual({ transactional: 3, campaigns: 2, workflows: 0, inbound: 0 })

        // A second reset adds to the first; last month's mail counts for last month only.
        yield* insertMail(project, "SENT", 1)
        yield* sql.withTransaction(wipeEmails(sql, project))
        expect(yield* billing.remaining(project, "transactional")).toBe(6)
        expect((yield* billing.consumption(project)).usage.transactional).toBe(4)
        const lastMonth = new Date()
        lastMonth.setUTCDate(1)
        lastMonth.setUTCMonth(lastMonth.getUTCMonth() - 1)
        expect((yield* billing.consumption(project, lastMonth)).usage.transactional).toBe(4)
      }))
  })

  describe("customers", () => {
    it.effect("records the Stripe customer and the subscription's state, by project or by customer", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const billing = yield* Billing
        const project = yield* insertProject
        expect(yield* billing.customerOf(project)).toBeNull()
        yield* billing.setCustomer(project, "cus_1")
        expect(yield* billing.customerOf(project)).toBe("cus_1")
        yield* billing.recordSubscription({ customerId: "cus_1", subscriptionId: "sub_1", status: "active" })
        yield* billing.recordSubscription({ projectId: project, customerId: "cus_1", subscriptionId: null, status: "past_due" })
        const [row] = yield* sql<{ stripe_subscription_id: string | null; subscription_status: string | null }>`
          SELECT stripe_subscription_id, subscription_status FROM projects WHERE id = ${project}`
        expect(row).toEqual({ stripe_subscription_id: "sub_1", subscription_status: "past_due" })
      }))
  })
})
