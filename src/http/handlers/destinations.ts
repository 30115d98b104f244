import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { DEFAULT_OVERLAP_SECONDS, TEST_EVENT_TYPE } from "../../domain/destinations.ts"
import { uuidv7 } from "../../domain/ids.ts"
import { attemptDelivery } from "../../destinations/attempt.ts"
import { attemptOptions, DESTINATIONS_TOPIC, type DestinationsChanged, retryUntilFrom } from "../../destinations/engine.ts"
import { AppConfig } from "../../config.ts"
import { type DeliveryStatus, Destinations } from "../../store/Destinations.ts"
import { Invalidations } from "../../stream/Invalidations.ts"
import { Api } from "../api/Api.ts"
import { DeliveryStatuses } from "../api/destinations.ts"
import { CurrentProject } from "../api/security.ts"
import { rendered } from "../errors.ts"
import { nonEmpty, parseLimit } from "../query.ts"
import { NotFound, ValidationFailed } from "../api/statusErrors.ts"

const notFound = NotFound.of("Destination")
const deliveryNotFound = NotFound.of("Delivery")
/** A range replay covers at most this much (the delivery log it walks stays bounded). */
const MAX_REPLAY_RANGE_MS = 31 * 86_400_000

export const DestinationsHandlers = HttpApiBuilder.group(
  Api,
  "destinations",
  Effect.fnUntraced(function*(handlers) {
    const destinations = yield* Destinations
    const invalidations = yield* Invalidations
    const config = yield* AppConfig
    const options = yield* attemptOptions

    /** Every worker's cache of the project's destinations is stale; `wake`: that destination has deliveries due now. */
    const changed = (projectId: string, wake?: string) =>
      invalidations.publish(DESTINATIONS_TOPIC, { projectId, ...(wake === undefined ? {} : { wake }) } satisfies DestinationsChanged)

    return handlers
      .handle("create", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const created = yield* destinations.create(project.id, payload)
          yield* changed(project.id)
          return created
        })))
      .handle("list", () =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          return { data: yield* destinations.list(project.id) }
        })))
      .handle("get", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          return (yield* destinations.get(project.id, params.id)) ?? (yield* notFound)
        })))
      .handle("update", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const updated = (yield* destinations.update(project.id, params.id, payload)) ?? (yield* notFound)
          yield* changed(project.id, updated.enabled ? updated.id : undefined)
          return updated
        })))
      .handle("delete", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          if (!(yield* destinations.remove(project.id, params.id))) return yield* notFound
          yield* changed(project.id)
          return { success: true as const }
        })))
      .handle("rotateSecret", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          return (yield* destinations.rotateSecret(project.id, params.id, payload.overlapSeconds ?? DEFAULT_OVERLAP_SECONDS)) ??
            (yield* notFound)
        })))
      .handle("test", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const eventId = uuidv7()
          const at = new Date().toISOString()
          const body = JSON.stringify({
            type: TEST_EVENT_TYPE,
            timestamp: at,
            data: { id: eventId, projectId: project.id, contactId: null, email: null, data: { test: true } }
          })
          const claimed = (yield* destinations.recordTest(project.id, params.id, eventId, body, at)) ?? (yield* notFound)
          const outcome = yield* Effect.promise(() => attemptDelivery(claimed, options))
          yield* destinations.settle(claimed, outcome, config.destinationDisableAfterFailures)
          return (yield* destinations.delivery(project.id, params.id, claimed.id)) ?? (yield* notFound)
        })))
      .handle("deliveries", ({ params, query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const status = nonEmpty(query.status)
          const page = yield* destinations.deliveries(project.id, params.id, {
            limit: parseLimit(query.limit),
            cursor: nonEmpty(query.cursor),
            status: status !== undefined && (DeliveryStatuses as ReadonlyArray<string>).includes(status)
              ? status as DeliveryStatus
              : undefined
          })
          return page ?? (yield* notFound)
        })))
      .handle("replayDelivery", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const replayed = yield* destinations.replay(
            project.id,
            params.id,
            { id: params.deliveryId },
            retryUntilFrom(config.destinationRetryHours)
          )
          if (replayed === undefined) {
            return yield* ((yield* destinations.get(project.id, params.id)) ? deliveryNotFound : notFound)
          }
          yield* changed(project.id, params.id)
          return replayed[0]!
        })))
      .handle("replayRange", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const from = new Date(payload.from)
          const to = new Date(payload.to)
          if (Number.isNaN(from.getTime()))
            return yield* ValidationFailed.field("from", "Expected an ISO 8601 date-time", "invalid_date", payload.from)
          if (Number.isNaN(to.getTime()))
            return yield* ValidationFailed.field("to", "Expected an ISO 8601 date-time", "invalid_date", payload.to)
          if (to <= from)
            return yield* ValidationFailed.field("to", "Expected a time after from", "invalid_range", payload.to)
          if (to.getTime() - from.getTime() > MAX_REPLAY_RANGE_MS) {
            return yield* ValidationFailed.field("to", "A replay covers at most 31 days", "range_too_long", payload.to)
          }
          const replayed =
            (yield* destinations.replay(project.id, params.id, { from, to }, retryUntilFrom(config.destinationRetryHours))) ??
              (yield* notFound)
          yield* changed(project.id, params.id)
          return { replayed: replayed.length }
        })))
  })
)
