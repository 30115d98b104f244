import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { DeadLetterNotReplayable, InvalidCursor } from "../../domain/errors.ts"
import { commonErrors, declared, ErrorDocs, inputErrors } from "./errors.ts"
import { cursorParams, QueryParam, queryParameters } from "./query.ts"
import { Count, Text, Timestamp } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

const DeadLetterFields = {
  id: Schema.String,
  source: Schema.Literals(["stream", "outbox", "actor"]).annotate({
    description: "stream: a message the project's actor could not apply; outbox: a message NATS refused to take; " +
      "actor: a tracked data change that would have grown a contact past its data limit (the event itself was recorded)"
  }),
  reason: Schema.String,
  subject: Schema.NullOr(Schema.String),
  partition: Schema.NullOr(Count),
  seq: Schema.NullOr(Count),
  summary: Schema.Struct({
    kind: Schema.NullOr(Schema.String),
    type: Schema.NullOr(Schema.String),
    name: Schema.NullOr(Schema.String),
    contactId: Schema.NullOr(Schema.String),
    email: Schema.NullOr(Schema.String),
    events: Schema.NullOr(Count),
    bytes: Count
  }),
  replays: Count,
  replayedAt: Schema.NullOr(Timestamp),
  createdAt: Timestamp
}

const DeadLetter = Schema.Struct(DeadLetterFields).annotate({ identifier: "DeadLetter" })
const DeadLetterDetail = Schema.Struct({ ...DeadLetterFields, payload: Schema.Unknown }).annotate({ identifier: "DeadLetterDetail" })

const IdParam = { id: Text }
const ListQuery = queryParameters({
  ...cursorParams,
  replayed: QueryParam.boolean("true: only letters replayed at least once; false: only those never replayed; omit for both")
})

export class DeadLettersApi extends HttpApiGroup.make("deadLetters")
  .add(
    HttpApiEndpoint.get("list", "/dead-letters", {
      query: ListQuery.fields,
      success: Schema.Struct({
        data: Schema.Array(DeadLetter),
        cursor: Schema.NullOr(Schema.String),
        hasMore: Schema.Boolean,
        total: Count
      }),
      error: [...commonErrors, ...inputErrors, declared(InvalidCursor), ErrorDocs.badRequest]
    }).annotate(OpenApi.Description, "Messages of this project set aside because they could not be applied or published, newest first.")
      .annotate(OpenApi.Transform, ListQuery.document),
    HttpApiEndpoint.get("get", "/dead-letters/:id", {
      params: IdParam,
      success: DeadLetterDetail,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    })
      .annotate(OpenApi.Description, "One dead letter with its whole payload."),
    HttpApiEndpoint.post("replay", "/dead-letters/:id/replay", {
      params: IdParam,
      success: DeadLetter,
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound, declared(DeadLetterNotReplayable)]
    }).annotate(
      OpenApi.Description,
      "Publishes the message again, on its own subject (its project's partition): it is applied after every message " +
        "already there and before any later one, so a contact's messages stay in order. Events keep their ids, so a " +
        "replay never stores one twice. The letter stays (with replays and replayedAt) until deleted; if it fails " +
        "again, a new letter records why."
    ),
    HttpApiEndpoint.delete("delete", "/dead-letters/:id", {
      params: IdParam,
      success: Schema.Struct({ success: Schema.Literal(true) }),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    })
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(
    OpenApi.annotations({
      title: "Dead letters",
      description: "Messages that could not be applied or published, for inspection and replay (secret key)"
    })
  )
{}
