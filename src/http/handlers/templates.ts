import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { isValidEmail, normalizeEmail } from "../../domain/email.ts"
import { isUuid } from "../../domain/ids.ts"
import { TEMPLATE_TYPES, type Template, type TemplateInput, Templates, type TemplateType } from "../../store/Templates.ts"
import { Workflows } from "../../store/Workflows.ts"
import { templateUsage } from "../../workflows/usage.ts"
import { Api } from "../api/Api.ts"
import { CurrentProject } from "../api/security.ts"
import { type FieldError, rendered } from "../errors.ts"
import { parsePositive } from "../query.ts"
import { subjectProblem, syntaxProblem, verifiedDomainRule } from "./mailContent.ts"
import { makeTemplatePreview } from "./templatePreview.ts"
import { LegacyError, NotFound, ValidationFailed } from "../api/statusErrors.ts"

const notFound = NotFound.of("Template")

interface TemplateFields {
  readonly name?: string | undefined
  readonly description?: string | null | undefined
  readonly subject?: string | undefined
  readonly body?: string | undefined
  readonly from?: string | undefined
  readonly fromName?: string | null | undefined
  readonly replyTo?: string | null | undefined
  readonly type?: TemplateType | undefined
}

const checkTemplate = (input: TemplateInput): ReadonlyArray<FieldError> => {
  const problems: Array<FieldError | undefined> = [
    input.name.trim() === "" ? { field: "name", message: "The name is required", code: "too_small" } : undefined,
    input.name.length > 255 ? { field: "name", message: "The name must be at most 255 characters", code: "too_big" } : undefined,
    subjectProblem("subject", input.subject),
    input.body.length === 0 ? { field: "body", message: "The body is required", code: "too_small" } : undefined,
    !isValidEmail(input.from) ? { field: "from", message: "Expected a valid email address", code: "invalid_string" } : undefined,
    input.replyTo !== null && !isValidEmail(input.replyTo)
      ? { field: "replyTo", message: "Expected a valid email address", code: "invalid_string" }
      : undefined,
    syntaxProblem("subject", input.subject, "text"),
    syntaxProblem("body", input.body, "html")
  ]
  return problems.filter((problem) => problem !== undefined)
}

const merge = (base: TemplateInput, fields: TemplateFields): TemplateInput => ({
  name: fields.name ?? base.name,
  description: fields.description === undefined ? base.description : fields.description,
  subject: fields.subject ?? base.subject,
  body: fields.body ?? base.body,
  from: fields.from === undefined ? base.from : normalizeEmail(fields.from),
  fromName: fields.fromName === undefined ? base.fromName : fields.fromName,
  replyTo: fields.replyTo === undefined ? base.replyTo : fields.replyTo === null ? null : normalizeEmail(fields.replyTo),
  type: fields.type ?? base.type
})

const EMPTY: TemplateInput = {
  name: "",
  description: null,
  subject: "",
  body: "",
  from: "",
  fromName: null,
  replyTo: null,
  type: "MARKETING"
}

const inputOf = (template: Template): TemplateInput => ({
  name: template.name,
  description: template.description,
  subject: template.subject,
  body: template.body,
  from: template.from,
  fromName: template.fromName,
  replyTo: template.replyTo,
  type: template.type
})

export const TemplatesHandlers = HttpApiBuilder.group(
  Api,
  "templates",
  Effect.fnUntraced(function*(handlers) {
    const templates = yield* Templates
    const workflows = yield* Workflows
    const requireVerifiedDomain = yield* verifiedDomainRule
    const preview = yield* makeTemplatePreview

    const find = Effect.fnUntraced(function*(id: string) {
      const project = yield* CurrentProject
      if (!isUuid(id)) return yield* notFound
      return (yield* templates.get(project.id, id)) ?? (yield* notFound)
    })

    /** Validates the whole template, then that its sender domain is verified here (403 after 422). */
    const validated = Effect.fnUntraced(function*(projectId: string, input: TemplateInput) {
      const problems = checkTemplate(input)
      if (problems.length > 0) return yield* ValidationFailed.of(problems)
      yield* requireVerifiedDomain(projectId, input.from)
      return input
    })

    return handlers
      .handle("create", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          // The reference's hand-validated fields: a missing one is its flat LegacyError 400.
          const missing = (["name", "subject", "body", "from"] as const).filter((field) => !payload[field]?.trim())
          if (missing.length > 0) {
            return yield* new LegacyError({ message: `${missing.join(", ")} ${missing.length === 1 ? "is" : "are"} required` })
          }
          const input = yield* validated(project.id, merge(EMPTY, payload))
          return yield* templates.create(project.id, input)
        })))
      .handle("list", ({ query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const page = parsePositive(query.page, 1)
          const pageSize = parsePositive(query.pageSize, 20, 100)
          const type = TEMPLATE_TYPES.find((known) => known === query.type?.toUpperCase())
          const sort = query.sort === "name" || query.sort === "updatedAt" ? query.sort : "createdAt"
          const direction = query.dir?.toLowerCase() === "asc" ? "asc" : "desc"
          const search = query.search?.trim() || undefined
          const { data, total } = yield* templates.list(project.id, { page, pageSize, type, search, sort, direction })
          return { data, page, pageSize, total, totalPages: Math.ceil(total / pageSize) }
        })))
      .handle("get", ({ params }) => rendered(find(params.id)))
      .handle("update", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const template = yield* find(params.id)
          const input = yield* validated(project.id, merge(inputOf(template), payload))
          return (yield* templates.update(project.id, template.id, input)) ?? (yield* notFound)
        })))
      .handle("delete", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const template = yield* find(params.id)
          if (!(yield* templates.remove(project.id, template.id))) return yield* notFound
          return { success: true as const }
        })))
      .handle("duplicate", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const template = yield* find(params.id)
          const copy = yield* templates.create(project.id, { ...inputOf(template), name: `${template.name} (Copy)`.slice(0, 255) })
          return { id: copy.id }
        })))
      .handle("preview", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          return yield* preview(project.id, payload)
        })))
      .handle("usage", ({ params }) =>
        rendered(Effect.gen(function*() {
          const template = yield* find(params.id)
          const project = yield* CurrentProject
          // Campaigns carry their own subject and body (the spec's Campaign has no template), so none uses one.
          return { campaigns: [], workflows: templateUsage(yield* workflows.list(project.id), template.id) }
        })))
  })
)
