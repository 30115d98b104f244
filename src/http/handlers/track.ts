/**
 * POST /v1/track (and /events/track): upserts the contact and commits the event to the outbox in one
 * statement, so an accepted event is durable before we answer; the relay moves it to stream IN.
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { eventVariables, toDataPatch } from "../../domain/customData.ts"
import { normalizeEmail } from "../../domain/email.ts"
import { uuidv7 } from "../../domain/ids.ts"
import { Contacts } from "../../store/Contacts.ts"
import { Nats } from "../../stream/Nats.ts"
import { OutboxRelay } from "../../stream/OutboxRelay.ts"
import { Api } from "../api/Api.ts"
import { CurrentProject } from "../api/security.ts"
import { rendered } from "../errors.ts"
import { Idempotency } from "../Idempotency.ts"
import { validateData } from "./contacts.ts"

export const TrackHandlers = HttpApiBuilder.group(Api, "track", Effect.fnUntraced(function*(handlers) {
  const contacts = yield* Contacts
  const idempotency = yield* Idempotency
  const relay = yield* OutboxRelay
  const { names } = yield* Nats

  const track = Effect.fnUntraced(function*({ payload, headers }: {
    readonly payload: {
      readonly email: string
      readonly event: string
      readonly subscribed?: boolean | undefined
      readonly data?: Readonly<Record<string, unknown>> | undefined
    }
    readonly headers: { readonly "idempotency-key"?: string | undefined }
  }, path: string) {
    const project = yield* CurrentProject
    yield* validateData(payload.data)
    const patch = toDataPatch(payload.data)
    const eventId = uuidv7()
    const timestamp = new Date().toISOString()
    const result = yield* idempotency.once(
      project.id,
      headers["idempotency-key"],
      `POST ${path}`,
      contacts.upsert({
        projectId: project.id,
        email: normalizeEmail(payload.email),
        subscribed: payload.subscribed,
        subscribedByDefault: true,
        patch,
        source: "api.track",
        alsoPublish: [{
          id: eventId,
          subject: names.inSubject(project.id, "track"),
          payload: {
            kind: "track",
            eventId,
            projectId: project.id,
            name: payload.event.trim(),
            data: eventVariables(patch),
            at: timestamp
          }
        }]
      }).pipe(Effect.orDie)
    )
    yield* relay.wake
    return { success: true as const, data: { contact: result.contact.id, event: eventId, timestamp } }
  })

  return handlers
    .handle("track", (request) => rendered(track(request, "/v1/track")))
    .handle("trackAlias", (request) => rendered(track(request, "/events/track")))
}))
