import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { DeadLetters } from "../../store/DeadLetters.ts"
import { OutboxRelay } from "../../stream/OutboxRelay.ts"
import { Api } from "../api/Api.ts"
import { CurrentProject } from "../api/security.ts"
import { rendered } from "../errors.ts"
import { parseBoolean, parseLimit } from "../query.ts"
import { NotFound } from "../api/statusErrors.ts"

const notFound = NotFound.of("Dead letter")

export const DeadLettersHandlers = HttpApiBuilder.group(
  Api,
  "deadLetters",
  Effect.fnUntraced(function*(handlers) {
    const letters = yield* DeadLetters
    const relay = yield* OutboxRelay

    return handlers
      .handle("list", ({ query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          return yield* letters.list(project.id, {
            limit: parseLimit(query.limit),
            cursor: query.cursor === undefined || query.cursor === "" ? undefined : query.cursor,
            replayed: parseBoolean(query.replayed)
          })
        })))
      .handle("get", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          return (yield* letters.get(project.id, params.id)) ?? (yield* notFound)
        })))
      .handle("replay", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const replayed = (yield* letters.replay(project.id, params.id)) ?? (yield* notFound)
          yield* relay.wake
          return replayed
        })))
      .handle("delete", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          if (!(yield* letters.remove(project.id, params.id))) return yield* notFound
          return { success: true as const }
        })))
  })
)
