/**
 * Live updates for the dashboard (session cookie): one server-sent events stream per browser tab, so
 * pages refetch what changed instead of polling.
 *
 * Declared here rather than as a route beside the contract: HttpApi describes a `text/event-stream`
 * answer as a text body (`asText`), the handler answers it as a stream, and so the route gets the
 * same session middleware, error envelope, permission walk (test/accounts/roles.test.ts) and OpenAPI
 * entry as every other route. What the body carries is `LiveEvent` below, one per `data:` line.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { ErrorDocs, inputErrors, serverErrors } from "./errors.ts"
import { Text, Timestamp } from "./schemas.ts"
import { SessionAuth } from "./security.ts"

/** The stream is open: what happened before it is in the pages' own queries. */
const Ready = Schema.Struct({ type: Schema.Literal("ready") })
/** A worker committed changes to the project's contacts, events, memberships or campaigns (at most a few a second). */
const Changed = Schema.Struct({ type: Schema.Literal("changed"), at: Timestamp })
/** An event the service emitted (stream OUT): `email.sent`, `email.open`, `segment.<slug>.entry`, `contact.subscribed`, … */
const Emitted = Schema.Struct({
  type: Schema.Literal("event"),
  name: Schema.String,
  contactId: Schema.String,
  at: Timestamp,
  segmentId: Schema.optionalKey(Schema.String),
  campaignId: Schema.optionalKey(Schema.String),
  workflowId: Schema.optionalKey(Schema.String),
  templateId: Schema.optionalKey(Schema.String),
  emailId: Schema.optionalKey(Schema.String)
})
/** Events may have been missed (the api lost its NATS connection for a moment): refetch everything shown. */
const Resync = Schema.Struct({ type: Schema.Literal("resync") })

export const LiveEvent = Schema.Union([Ready, Changed, Emitted, Resync]).annotate({ identifier: "LiveEvent" })
export type LiveEvent = typeof LiveEvent.Type

const EventStream = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" })).annotate({
  description: "Server-sent events: each `data:` line is a LiveEvent (JSON); comment lines (`: ping`) are heartbeats."
})

export class LiveApi extends HttpApiGroup.make("live")
  .add(
    HttpApiEndpoint.get("stream", "/projects/:id/live", {
      params: { id: Text },
      success: EventStream,
      error: [ErrorDocs.unauthorized, ErrorDocs.forbidden, ErrorDocs.rateLimited, ErrorDocs.notFound, ...inputErrors, ...serverErrors]
    }).annotate(
      OpenApi.Description,
      "The project's live updates as server-sent events, for the dashboard (session cookie; any member). A `ready` " +
        "event first, then `changed` when a worker commits changes to the project's data, `event` for each event the " +
        "service emits (email, segment and subscription events), `resync` when some may have been missed, and a " +
        "heartbeat comment every LIVE_HEARTBEAT_SECONDS. Each api process keeps one NATS subscription for all its " +
        "streams; it serves LIVE_MAX_CLIENTS streams, LIVE_MAX_CLIENTS_PER_USER per user (429 TOO_MANY_LIVE_STREAMS " +
        "past either), and disconnects a client that falls LIVE_CLIENT_BUFFER events behind (it reconnects and refetches)."
    )
  )
  .middleware(SessionAuth)
  .annotateMerge(
    OpenApi.annotations({ title: "Live updates", description: "Server-sent events that tell the dashboard what changed (session cookie)" })
  )
{}
