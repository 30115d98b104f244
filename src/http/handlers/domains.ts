import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { isUuid } from "../../domain/ids.ts"
import { normalizeDomain } from "../../store/domainRecords.ts"
import { Domains } from "../../store/Domains.ts"
import { Api } from "../api/Api.ts"
import { CurrentProject } from "../api/security.ts"
import { rendered } from "../errors.ts"
import { Forbidden, NotFound, ValidationFailed } from "../api/statusErrors.ts"

const notFound = NotFound.of("Domain")

export const DomainsHandlers = HttpApiBuilder.group(
  Api,
  "domains",
  Effect.fnUntraced(function*(handlers) {
    const domains = yield* Domains

    const find = Effect.fnUntraced(function*(id: string) {
      const project = yield* CurrentProject
      if (!isUuid(id)) return yield* notFound
      return (yield* domains.get(project.id, id)) ?? (yield* notFound)
    })

    return handlers
      .handle("create", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          if (payload.projectId !== undefined && payload.projectId !== project.id) {
            return yield* new Forbidden({ code: "FORBIDDEN", message: "projectId must be the API key's own project" })
          }
          const domain = normalizeDomain(payload.domain)
          if (!domain)
            return yield* ValidationFailed.field("domain", "Expected a domain name such as example.com", "invalid_string", payload.domain)
          return yield* domains.create(project.id, domain)
        })))
      .handle("list", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          if (params.projectId !== project.id) return yield* NotFound.of("Project")
          return yield* domains.list(project.id)
        })))
      .handle("get", ({ params }) => rendered(find(params.id)))
      .handle("verify", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const domain = yield* find(params.id)
          return (yield* domains.check(project.id, domain.id)) ?? (yield* notFound)
        })))
      .handle("delete", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const domain = yield* find(params.id)
          if (!(yield* domains.remove(project.id, domain.id))) return yield* notFound
          return { success: true as const }
        })))
  })
)
