/** GET /projects/:id/live: a member's server-sent events stream of the project (the fan-out is http/live/LiveHub.ts). */
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { CurrentUser } from "../api/security.ts"
import { rendered } from "../errors.ts"
import { LiveHub } from "../live/LiveHub.ts"
import { DashboardSessions } from "../session.ts"

export const LiveHandlers = HttpApiBuilder.group(
  Api,
  "live",
  Effect.fnUntraced(function*(handlers) {
    const sessions = yield* DashboardSessions
    const hub = yield* LiveHub
    return handlers.handle("stream", ({ params }) =>
      rendered(Effect.gen(function*() {
        const { user } = yield* CurrentUser
        const { project } = yield* sessions.access(user.id, params.id, "content")
        const request = yield* HttpServerRequest.HttpServerRequest
        const response = NodeHttpServerRequest.toServerResponse(request)
        const frames = yield* hub.open(project.id, user.id, {
          destroy: () => response.destroy(),
          onClose: (listener) => (response.closed ? listener() : void response.once("close", listener))
        })
        return HttpServerResponse.stream(frames, {
          contentType: "text/event-stream",
          // no-transform and X-Accel-Buffering: proxies (nginx, Caddy) pass each event on at once.
          headers: { "cache-control": "no-cache, no-transform", "x-accel-buffering": "no" }
        })
      })))
  })
)
