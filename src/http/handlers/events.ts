import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { uuidv7 } from "../../domain/ids.ts"
import { isUuid } from "../../domain/ids.ts"
import { Contacts } from "../../store/Contacts.ts"
import { conditionReads } from "../../domain/conditions/validate.ts"
import { Events } from "../../store/Events.ts"
import { Segments } from "../../store/Segments.ts"
import { Workflows } from "../../store/Workflows.ts"
import { eventUsage } from "../../workflows/usage.ts"
import { Nats } from "../../stream/Nats.ts"
import type { CommandMessage } from "../../stream/messages.ts"
import { Api } from "../api/Api.ts"
import { CurrentProject } from "../api/security.ts"
import { nonEmpty, parseLimit } from "../query.ts"
import { rendered } from "../errors.ts"
import { BadRequest, NotFound, ServiceUnavailable } from "../api/statusErrors.ts"

const DAY = 86_400_000

export const EventsHandlers = HttpApiBuilder.group(
  Api,
  "events",
  Effect.fnUntraced(function*(handlers) {
    const events = yield* Events
    const contacts = yield* Contacts
    const nats = yield* Nats
    const segments = yield* Segments
    const workflows = yield* Workflows

    return handlers
      .handle("list", ({ query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const contactId = nonEmpty(query.contactId)
          if (contactId !== undefined && !isUuid(contactId)) return { data: [], cursor: null, hasMore: false, total: 0 }
          return yield* events.list(project.id, {
            limit: parseLimit(query.limit),
            cursor: nonEmpty(query.cursor),
            name: nonEmpty(query.name),
            contactId
          })
        })))
      .handle("stats", ({ query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const to = query.to ? new Date(query.to) : new Date(yield* Clock.currentTimeMillis)
          const from = query.from ? new Date(query.from) : new Date(to.getTime() - 30 * DAY)
          const inRange = (date: Date) => !Number.isNaN(date.getTime()) && date.getUTCFullYear() >= 1 && date.getUTCFullYear() <= 9999
          if (!inRange(to) || !inRange(from)) {
            return yield* BadRequest.of("from and to must be ISO 8601 date-times", "INVALID_RANGE")
          }
          if (from > to) return yield* BadRequest.of("from must be before to", "INVALID_RANGE")
          const stats = yield* events.stats(project.id, from, to)
          return { from: from.toISOString(), to: to.toISOString(), ...stats }
        })))
      .handle("names", () =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          return { names: yield* events.names(project.id) }
        })))
      .handle("forContact", ({ params, query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const notFound = NotFound.of("Contact")
          if (!isUuid(params.contactId)) return yield* notFound
          if (!(yield* contacts.get(project.id, params.contactId))) return yield* notFound
          return yield* events.list(project.id, {
            limit: parseLimit(query.limit),
            cursor: nonEmpty(query.cursor),
            name: undefined,
            contactId: params.contactId
          })
        })))
      .handle("usage", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const using = (yield* segments.list(project.id))
            .filter((segment) => segment.condition !== null && conditionReads(segment.condition).events.has(params.eventName))
          const workflowsUsing = eventUsage(yield* workflows.list(project.id), params.eventName)
          return { event: params.eventName, segments: using.map(({ id, name }) => ({ id, name })), workflows: workflowsUsing }
        })))
      .handle("delete", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const commandId = uuidv7()
          // On the project's ingest subject, where /v1/track's events go: the splitter hands it to every
          // lane (each deletes its own contacts' events) in its place among the events accepted before and after.
          const command: CommandMessage = {
            kind: "command",
            projectId: project.id,
            commandId,
            type: "deleteEvents",
            name: params.eventName
          }
          yield* Effect.tryPromise(() =>
            nats.js.publish(nats.names.ingestSubject(project.id, nats.partitions, "command"), JSON.stringify(command), {
              msgID: commandId,
              timeout: 3000
            })
          ).pipe(Effect.catch(() => Effect.fail(ServiceUnavailable.of("The event stream is unavailable; nothing was deleted"))))
          return { accepted: true as const, event: params.eventName, commandId }
        })))
  })
)
