/** POST /webhooks/incoming/stripe: Stripe's events, verified with STRIPE_WEBHOOK_SECRET over the raw body. */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { StripeBilling } from "../../accounts/StripeBilling.ts"
import { Api } from "../api/Api.ts"
import { rendered } from "../errors.ts"
import { BadRequest, NotFound } from "../api/statusErrors.ts"

export const BillingWebhookHandlers = HttpApiBuilder.group(
  Api,
  "billingWebhook",
  Effect.fnUntraced(function*(handlers) {
    const stripe = yield* StripeBilling
    return handlers.handle("stripe", () =>
      rendered(Effect.gen(function*() {
        if (!stripe.enabled) {
          return yield* new NotFound({ code: "BILLING_DISABLED", message: "Billing is not enabled on this installation" })
        }
        const request = yield* HttpServerRequest.HttpServerRequest
        // The signature covers the exact bytes Stripe sent: read the body as text, unparsed.
        const body = yield* request.text.pipe(Effect.mapError(() => BadRequest.of("Could not read the request body")))
        const type = yield* stripe.enabled.webhook(body, request.headers["stripe-signature"] ?? "").pipe(
          Effect.catchTag(
            "InvalidSignature",
            (error) => new BadRequest({ code: "INVALID_SIGNATURE", message: `Stripe signature check failed: ${error.message}` })
          )
        )
        yield* Effect.logInfo("stripe event applied", { type })
        return { received: true as const }
      })))
  })
)
