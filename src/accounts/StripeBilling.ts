/**
 * Paid plans through Stripe (the official `stripe` package): checkout, the billing portal, invoices and
 * the webhook (signatures verified by the package). Off unless STRIPE_SECRET_KEY and
 * STRIPE_WEBHOOK_SECRET are both set; STRIPE_API_URL points the package at another server (tests).
 */
import { Context, Data, Effect, Layer, Redacted } from "effect"
import type Stripe from "stripe"
import { AppConfig } from "../config.ts"
import { Billing } from "../store/Billing.ts"
import type { PersistenceError } from "../store/PersistenceError.ts"

const withQuery = (url: string, query: string) => `${url}${url.includes("?") ? "&" : "?"}${query}`

export class StripeFailed extends Data.TaggedError("StripeFailed")<{ readonly message: string }> {}
export class InvalidSignature extends Data.TaggedError("InvalidSignature")<{ readonly message: string }> {}

export interface Invoice {
  readonly id: string
  readonly number: string | null
  readonly status: string | null
  readonly amountDue: number
  readonly amountPaid: number
  readonly currency: string
  readonly createdAt: string
  readonly hostedInvoiceUrl: string | null
  readonly pdfUrl: string | null
}

interface Enabled {
  /** `returnTo`: the page Stripe sends the user back to (`?checkout=success` or `?checkout=cancelled` added). */
  readonly checkout: (projectId: string, email: string, returnTo: string) => Effect.Effect<string, StripeFailed | PersistenceError>
  /** undefined when the project has no Stripe customer yet. */
  readonly portal: (projectId: string, returnTo: string) => Effect.Effect<string | undefined, StripeFailed | PersistenceError>
  readonly invoices: (projectId: string) => Effect.Effect<ReadonlyArray<Invoice>, StripeFailed | PersistenceError>
  /** Verifies and applies one webhook delivery; answers the event type. */
  readonly webhook: (rawBody: string, signature: string) => Effect.Effect<string, InvalidSignature | PersistenceError>
}

export class StripeBilling extends Context.Service<StripeBilling, {
  /** undefined when billing is off. */
  readonly enabled: Enabled | undefined
}>()("app/accounts/StripeBilling") {
  static readonly layer = Layer.effect(
    StripeBilling,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const billing = yield* Billing
      const { stripeSecretKey: secretKey, stripeWebhookSecret: webhookSecret } = config
      if (!secretKey || !webhookSecret) return StripeBilling.of({ enabled: undefined })
      const api = config.stripeApiUrl ? new URL(config.stripeApiUrl) : undefined
      // Loaded only when billing is on: the package is some 30 MiB of memory in every api process.
      const { default: StripeClient } = yield* Effect.promise(() => import("stripe"))
      const stripe: Stripe = new StripeClient(Redacted.value(secretKey), {
        maxNetworkRetries: 1,
        telemetry: false,
        ...(api
          ? {
            host: api.hostname,
            port: api.port || (api.protocol === "https:" ? 443 : 80),
            protocol: api.protocol.slice(0, -1) as "http" | "https"
          }
          : {})
      })
      const call = <A>(what: string, run: () => Promise<A>) =>
        Effect.tryPromise({
          try: run,
          catch: (cause) => new StripeFailed({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })
        })

      const customerFor = Effect.fnUntraced(function*(projectId: string, email: string) {
        const existing = yield* billing.customerOf(projectId)
        if (existing) return existing
        const customer = yield* call("creating the customer", () => stripe.customers.create({ email, metadata: { projectId } }))
        yield* billing.setCustomer(projectId, customer.id)
        return customer.id
      })

      const enabled: Enabled = {
        checkout: (projectId, email, returnTo) =>
          Effect.gen(function*() {
            const customer = yield* customerFor(projectId, email)
            const session = yield* call("creating the checkout session", () =>
              stripe.checkout.sessions.create({
                mode: "subscription",
                customer,
                client_reference_id: projectId,
                metadata: { projectId },
                ...(config.stripePriceId ? { line_items: [{ price: config.stripePriceId, quantity: 1 }] } : {}),
                success_url: withQuery(returnTo, "checkout=success"),
                cancel_url: withQuery(returnTo, "checkout=cancelled")
              }))
            if (!session.url) return yield* new StripeFailed({ message: "Stripe returned no checkout URL" })
            return session.url
          }),
        portal: (projectId, returnTo) =>
          Effect.gen(function*() {
            const customer = yield* billing.customerOf(projectId)
            if (!customer) return undefined
            const session = yield* call("creating the portal session", () =>
              stripe.billingPortal.sessions.create({ customer, return_url: returnTo }))
            return session.url
          }),
        invoices: (projectId) =>
          Effect.gen(function*() {
            const customer = yield* billing.customerOf(projectId)
            if (!customer) return []
            const page = yield* call("listing invoices", () => stripe.invoices.list({ customer, limit: 24 }))
            return page.data.map((invoice) => ({
              id: invoice.id ?? "",
              number: invoice.number ?? null,
              status: invoice.status ?? null,
              amountDue: invoice.amount_due,
              amountPaid: invoice.amount_paid,
              currency: invoice.currency,
              createdAt: new Date(invoice.created * 1000).toISOString(),
              hostedInvoiceUrl: invoice.hosted_invoice_url ?? null,
              pdfUrl: invoice.invoice_pdf ?? null
            }))
          }),
        webhook: (rawBody, signature) =>
          Effect.gen(function*() {
            const event = yield* Effect.try({
              try: () => stripe.webhooks.constructEvent(rawBody, signature, Redacted.value(webhookSecret)),
              catch: (cause) => new InvalidSignature({ message: cause instanceof Error ? cause.message : String(cause) })
            })
            const idOf = (value: unknown) => typeof value === "string" ? value : (value as { id?: string } | null)?.id ?? null
            if (event.type === "checkout.session.completed") {
              const session = event.data.object
              const customerId = idOf(session.customer)
              if (customerId) {
                yield* billing.recordSubscription({
                  projectId: session.client_reference_id ?? session.metadata?.projectId,
                  customerId,
                  subscriptionId: idOf(session.subscription),
                  status: "active"
                })
              }
            } else if (event.type.startsWith("customer.subscription.")) {
              const subscription = event.data.object as { id: string; customer: unknown; status: string }
              const customerId = idOf(subscription.customer)
              if (customerId) {
                yield* billing.recordSubscription({
                  customerId,
                  subscriptionId: subscription.id,
                  status: event.type === "customer.subscription.deleted" ? "canceled" : subscription.status
                })
              }
            }
            return event.type
          })
      }
      return StripeBilling.of({ enabled })
    })
  )
}
