import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { commonErrors, ErrorDocs } from "../errors.ts"
import { Text } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

const DeadLetterFields = {
  id: Schema.String,
  source: Schema.Literals(["stream", "outbox", "actor"]).annotate({
    description: "stream: a message the project's actor could not apply; outbox: a message NATS refused to take; " +
      "actor: a tracked data change that would have grown a contact past its data limit (the event itself was recorded)"
  }),
  reason: Schema.String,
  subject: Schema.NullOr(Schema.String),
  partition: Schema.NullOr(Schema.Number),
  seq: Schema.NullOr(Schema.Number),
  summary: Schema.Struct({
    kind: Schema.NullOr(Schema.String),
    type: Schema.NullOr(Schema.String),
    name: Schema.NullOr(Schema.String),
    contactId: Schema.NullOr(Schema.String),
    email: Schema.NullOr(Schema.String),
    events: Schema.NullOr(Schema.Number),
    bytes: Schema.Number
  }),
  replays: Schema.Number,
  replayedAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String
}

const DeadLetter = Schema.Struct(DeadLetterFields).annotate({ identifier: "DeadLetter" })
const DeadLetterDetail = Schema.Struct({ ...DeadLetterFields, payload: Schema.Unknown }).annotate({ identifier: "DeadLetterDetail" })

const IdParam = { id: Text }

export class DeadLettersApi extends HttpApiGroup.make("deadLetters")
  .add(
    HttpApiEndpoint.get("list", "/dead-letters", {
      query: {
        limit: Schema.optional(Text).annotate({ description: "1..100, default 20" }),
        cursor: Schema.optional(Text).annotate({ description: "`cursor` of the previous page" }),
        replayed: Schema.optional(Text).annotate({ description: "true: only replayed ones; false: only those never replayed" })
      },
      success: Schema.Struct({ data: Schema.Array(DeadLetter), cursor: Schema.NullOr(Schema.String), hasMore: Schema.Boolean, total: Schema.Number }),
      error: [...commonErrors, ErrorDocs.badRequest]
    }).annotate(OpenApi.Description, "Messages of this project set aside because they could not be applied or published, newest first."),
    HttpApiEndpoint.get("get", "/dead-letters/:id", { params: IdParam, success: DeadLetterDetail, error: [...commonErrors, ErrorDocs.notFound] })
      .annotate(OpenApi.Description, "One dead letter with its whole payload."),
    HttpApiEndpoint.post("replay", "/dead-letters/:id/replay", {
      params: IdParam,
      success: DeadLetter,
      error: [...commonErrors, ErrorDocs.notFound, ErrorDocs.validation]
    }).annotate(OpenApi.Description,
      "Publishes the message again, on its own subject (its project's partition): it is applied after every message " +
        "already there and before any later one, so a contact's messages stay in order. Events keep their ids, so a " +
        "replay never stores one twice. The letter stays (with replays and replayedAt) until deleted; if it fails " +
        "again, a new letter records why."),
    HttpApiEndpoint.delete("delete", "/dead-letters/:id", {
      params: IdParam,
      success: Schema.Struct({ success: Schema.Literal(true) }),
      error: [...commonErrors, ErrorDocs.notFound]
    })
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({ title: "Dead letters", description: "Messages that could not be applied or published, for inspection and replay (secret key)" }))
{}
