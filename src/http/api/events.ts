import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { InvalidCursor } from "../../domain/errors.ts"
import { commonErrors, declared, ErrorDocs, inputErrors } from "./errors.ts"
import { cursorParams, QueryParam, queryParameters } from "./query.ts"
import { Count, Text, Timestamp } from "./schemas.ts"
import { SecretKeyAuth } from "./security.ts"

const Event = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  contactId: Schema.String,
  email: Schema.NullOr(Schema.String),
  data: Schema.Record(Schema.String, Schema.Unknown),
  createdAt: Timestamp
}).annotate({ identifier: "Event" })

const EventPage = Schema.Struct({
  data: Schema.Array(Event),
  cursor: Schema.NullOr(Schema.String),
  hasMore: Schema.Boolean,
  total: Count
})

const ListQuery = queryParameters({
  ...cursorParams,
  name: QueryParam.text("Only events with this name"),
  contactId: QueryParam.text("Only this contact's events", "uuid")
})
const ContactEventsQuery = queryParameters(cursorParams)
const StatsQuery = queryParameters({
  from: QueryParam.dateTime("Start of the range (ISO 8601); default 30 days before `to`"),
  to: QueryParam.dateTime("End of the range (ISO 8601); default now")
})

export class EventsApi extends HttpApiGroup.make("events")
  .add(
    HttpApiEndpoint.get("list", "/events", {
      query: ListQuery.fields,
      success: EventPage,
      error: [...commonErrors, ...inputErrors, declared(InvalidCursor), ErrorDocs.badRequest]
    }).annotate(OpenApi.Description, "Recent events, newest first (cursor pages).").annotate(OpenApi.Transform, ListQuery.document),
    HttpApiEndpoint.get("stats", "/events/stats", {
      query: StatsQuery.fields,
      success: Schema.Struct({
        from: Timestamp,
        to: Timestamp,
        total: Count,
        byName: Schema.Array(Schema.Struct({ name: Schema.String, count: Count })),
        byDay: Schema.Array(
          Schema.Struct({
            day: Schema.String.annotate({ format: "date" } as Schema.Annotations.Documentation<string>),
            name: Schema.String,
            count: Count
          })
        )
      }),
      error: [...commonErrors, ...inputErrors, ErrorDocs.badRequest]
    }).annotate(OpenApi.Description, "Event counts per name and per UTC day over a range.").annotate(
      OpenApi.Transform,
      StatsQuery.document
    ),
    HttpApiEndpoint.get("names", "/events/names", {
      success: Schema.Struct({
        names: Schema.Array(Schema.Struct({ name: Schema.String, count: Count, lastSeenAt: Timestamp }))
      }),
      error: commonErrors
    }).annotate(OpenApi.Description, "The project's event names, most frequent first (ties by name), as the reference orders them."),
    HttpApiEndpoint.get("forContact", "/events/contact/:contactId", {
      params: { contactId: Text },
      query: ContactEventsQuery.fields,
      success: EventPage,
      error: [...commonErrors, ...inputErrors, declared(InvalidCursor), ErrorDocs.badRequest, ErrorDocs.notFound]
    }).annotate(OpenApi.Transform, ContactEventsQuery.document),
    HttpApiEndpoint.get("usage", "/events/:eventName/usage", {
      params: { eventName: Text },
      success: Schema.Struct({
        event: Schema.String,
        segments: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String })),
        workflows: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String }))
      }),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound]
    }).annotate(OpenApi.Description, "Segments, workflow triggers and conditions referencing the event."),
    HttpApiEndpoint.delete("delete", "/events/:eventName", {
      params: { eventName: Text },
      success: Schema.Struct({ accepted: Schema.Literal(true), event: Schema.String, commandId: Schema.String })
        .pipe(HttpApiSchema.status(202)),
      error: [...commonErrors, ...inputErrors, ErrorDocs.notFound, ErrorDocs.unavailable]
    }).annotate(
      OpenApi.Description,
      "Deletes every event with this name and its aggregates. Applied by the project's actor, in order with concurrent tracks (202: accepted)."
    )
  )
  .middleware(SecretKeyAuth)
  .annotateMerge(OpenApi.annotations({ title: "Events", description: "Tracked and emitted events (secret key)" }))
{}
