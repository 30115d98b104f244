import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { commonErrors, ErrorDocs } from "../errors.ts"
import { Text } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

const Event = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  contactId: Schema.String,
  email: Schema.NullOr(Schema.String),
  data: Schema.Record(Schema.String, Schema.Unknown),
  createdAt: Schema.String
}).annotate({ identifier: "Event" })

const EventPage = Schema.Struct({
  data: Schema.Array(Event),
  cursor: Schema.NullOr(Schema.String),
  hasMore: Schema.Boolean,
  total: Schema.Number
})

const optionalString = (description: string) => Schema.optional(Text).annotate({ description })
const pageQuery = {
  limit: optionalString("1..100, default 20"),
  cursor: optionalString("`cursor` of the previous page")
}

export class EventsApi extends HttpApiGroup.make("events")
  .add(
    HttpApiEndpoint.get("list", "/events", {
      query: { ...pageQuery, name: optionalString("only events with this name"), contactId: optionalString("only this contact's events") },
      success: EventPage,
      error: [...commonErrors, ErrorDocs.badRequest]
    }).annotate(OpenApi.Description, "Recent events, newest first (cursor pages)."),
    HttpApiEndpoint.get("stats", "/events/stats", {
      query: {
        from: optionalString("ISO date-time; default 30 days before `to`"),
        to: optionalString("ISO date-time; default now")
      },
      success: Schema.Struct({
        from: Schema.String,
        to: Schema.String,
        total: Schema.Number,
        byName: Schema.Array(Schema.Struct({ name: Schema.String, count: Schema.Number })),
        byDay: Schema.Array(Schema.Struct({ day: Schema.String, name: Schema.String, count: Schema.Number }))
      }),
      error: [...commonErrors, ErrorDocs.badRequest]
    }).annotate(OpenApi.Description, "Event counts per name and per UTC day over a range."),
    HttpApiEndpoint.get("names", "/events/names", {
      success: Schema.Struct({
        names: Schema.Array(Schema.Struct({ name: Schema.String, count: Schema.Number, lastSeenAt: Schema.String }))
      }),
      error: commonErrors
    }),
    HttpApiEndpoint.get("forContact", "/events/contact/:contactId", {
      params: { contactId: Text },
      query: pageQuery,
      success: EventPage,
      error: [...commonErrors, ErrorDocs.notFound]
    }),
    HttpApiEndpoint.get("usage", "/events/:eventName/usage", {
      params: { eventName: Text },
      success: Schema.Struct({
        event: Schema.String,
        segments: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String })),
        workflows: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String }))
      }),
      error: commonErrors
    }).annotate(OpenApi.Description, "Segments, workflow triggers and conditions referencing the event."),
    HttpApiEndpoint.delete("delete", "/events/:eventName", {
      params: { eventName: Text },
      success: Schema.Struct({ accepted: Schema.Literal(true), event: Schema.String, commandId: Schema.String })
        .pipe(HttpApiSchema.status(202)),
      error: [...commonErrors, ErrorDocs.notFound]
    }).annotate(
      OpenApi.Description,
      "Deletes every event with this name and its aggregates. Applied by the project's actor, in order with concurrent tracks (202: accepted)."
    )
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({ title: "Events", description: "Tracked and emitted events (secret key)" }))
{}
