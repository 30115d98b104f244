import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { bodyErrors, commonErrors, ErrorDocs } from "./errors.ts"
import { CustomData, IdempotencyHeaders, Text, TextRecord, Timestamp } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

/** `"a@b.c"` or `{ name, email }`; addresses are checked by the handler so errors name their position. */
const Address = Schema.Union([
  Text,
  Schema.Struct({ name: Schema.optional(Schema.NullOr(Text)), email: Text })
])

const Attachment = Schema.Struct({
  filename: Text,
  content: Text.annotate({ description: "base64" }),
  contentType: Schema.optional(Text),
  contentId: Schema.optional(Text).annotate({
    description: 'Makes the part one the HTML shows as `<img src="cid:<contentId>">`: sent beside the HTML in multipart/related ' +
      "with this `Content-ID`. 1 to 200 letters, digits and `. _ - + @`; unique within the request"
  }),
  disposition: Schema.optional(Schema.Literals(["attachment", "inline"])).annotate({
    description: "`inline` (needs `contentId`) or `attachment`; default `inline` with a `contentId`, `attachment` without"
  })
})

export const SendBody = Schema.Struct({
  to: Schema.Union([Address, Schema.Array(Address)]),
  subject: Schema.optional(Text),
  body: Schema.optional(Text),
  template: Schema.optional(Text),
  from: Schema.optional(Address),
  name: Schema.optional(Text).annotate({ description: "Deprecated: the sender name when `from` is a bare address" }),
  subscribed: Schema.optional(Schema.Boolean),
  data: Schema.optional(CustomData),
  headers: Schema.optional(TextRecord),
  reply: Schema.optional(Text),
  attachments: Schema.optional(Schema.Array(Attachment))
})

const SendSuccess = Schema.Struct({
  success: Schema.Literal(true),
  data: Schema.Struct({
    emails: Schema.Array(Schema.Struct({
      contact: Schema.Struct({ id: Schema.String, email: Schema.String }),
      email: Schema.String
    })),
    timestamp: Timestamp
  })
})

export class SendApi extends HttpApiGroup.make("send", { topLevel: true })
  .add(
    HttpApiEndpoint.post("send", "/v1/send", {
      payload: SendBody,
      headers: IdempotencyHeaders,
      success: SendSuccess,
      error: [...commonErrors, ...bodyErrors, ErrorDocs.notFound, ErrorDocs.conflict]
    }).annotate(
      OpenApi.Description,
      "One transactional email per recipient, processed in order, each with its own contact upsert (new contacts " +
        "default to unsubscribed). Either `template` or both `subject` and `body`; `from` unless the template has one. " +
        "Attachments: at most 10, 10 MB in total (413). Caps on what each recipient's mail renders to: the subject one " +
        "line of at most 998 characters (422 on `subject`), the HTML body at most 5 MB, the whole message at most 40 MB, " +
        "and everything one request stores (every recipient's message with its copy of the attachments) at most 50 MB " +
        "(413 naming the limit, `details: { limit, part }`). A MARKETING template goes to subscribed contacts only: a " +
        "recipient whose contact is unsubscribed (after this request's `subscribed`) refuses the whole request, 400 " +
        "CONTACT_UNSUBSCRIBED naming each in `errors` (`to[i]`), nothing sent; one who unsubscribes while the mail is " +
        "queued does not get it (SUPPRESSED). `headers` may carry a `List-Unsubscribe` of your own: it replaces ours, " +
        "and our `List-Unsubscribe-Post` (one-click) goes with it unless you send your own."
    )
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({ title: "Sending", description: "Transactional email (secret key)" }))
{}
