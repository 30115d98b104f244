/**
 * Why one recipient's mail cannot be made. Typed failures of `prepareEmail` (and so of the MailQueue's
 * render): each caller decides what they mean to it (/v1/send answers 422 or 413, campaign fan-out
 * records the recipient failed, a workflow's SEND_EMAIL step fails its execution).
 */
import { Schema } from "effect"

/**
 * The template failed on this recipient's data (a filter error, a render timeout, memory): what the
 * liquid wrapper throws (src/mail/render.ts's TemplateError), as a typed failure.
 */
export class RenderError extends Schema.TaggedError<RenderError>()("RenderError", {
  message: Schema.String
}) {}

/** What a recipient's mail would exceed: the subject line (422), the body or the whole message (413). */
export const MailPart = Schema.Literals(["subject", "body", "message"])
export type MailPart = typeof MailPart.Type

/** The rendered mail breaks a size cap (src/mail/prepare.ts): which part, and the cap. */
export class MailTooLarge extends Schema.TaggedError<MailTooLarge>()("MailTooLarge", {
  message: Schema.String,
  part: MailPart,
  limit: Schema.Number
}) {}

/** The mail one /v1/send request would store passes the per-request cap (src/mail/SendMail.ts), at this recipient. */
export class RequestTooLarge extends Schema.TaggedError<RequestTooLarge>()("RequestTooLarge", {
  message: Schema.String,
  limit: Schema.Number
}) {}

/**
 * A /v1/send of a MARKETING template to recipients whose contacts are unsubscribed (after the request's
 * own `subscribed`, if any): the whole request is refused, nothing is stored. `recipients` are their
 * positions in the request's `to` and their addresses.
 */
export class MarketingToUnsubscribed extends Schema.TaggedError<MarketingToUnsubscribed>()("MarketingToUnsubscribed", {
  recipients: Schema.Array(Schema.Struct({ index: Schema.Number, email: Schema.String }))
}) {}
