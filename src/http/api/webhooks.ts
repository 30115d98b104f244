import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { bodyErrors, commonErrors } from "./errors.ts"
import { Count, Text } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

/** The generic inbound format, for relays that can call a webhook (see docs/features.md, "Delivery notifications"). */
export const GenericNotification = Schema.Struct({
  id: Text.check(Schema.isNonEmpty(), Schema.isMaxLength(255)).annotate({
    description: "Unique id of this notification (1 to 255 characters); repeats are ignored"
  }),
  type: Schema.Literals(["delivered", "bounced", "complained"]),
  messageId: Text.check(Schema.isMaxLength(998)).annotate({ description: "The Message-ID header of the email (angle brackets optional)" }),
  bounceType: Schema.optional(Schema.Literals(["hard", "soft"])).annotate({ description: "bounced only; default hard" })
}).annotate({ identifier: "GenericNotification" })

export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("generic", "/webhooks/generic", {
      payload: Schema.Union([GenericNotification, Schema.Array(GenericNotification)]),
      success: Schema.Struct({
        success: Schema.Literal(true),
        data: Schema.Struct({ applied: Count, duplicates: Count, unknown: Count })
      }),
      error: [...commonErrors, ...bodyErrors]
    }).annotate(
      OpenApi.Description,
      "Delivery notifications in the generic JSON format, authenticated with the project's secret key. Hard bounces " +
        "and complaints unsubscribe and suppress the address. Amazon SES notifications over SNS go to POST /webhooks/ses " +
        "(no key; only from the SNS topics in SES_TOPIC_ARNS, and the SNS signature is verified)."
    )
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({ title: "Webhooks", description: "Inbound delivery notifications" }))
{}
