/** Handlers of the contacts group: request parsing and rules here, SQL in store/Contacts.ts. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { toDataPatch } from "../../domain/customData.ts"
import { normalizeEmail } from "../../domain/email.ts"
import { isUuid } from "../../domain/ids.ts"
import { customFieldPath, isStandardField } from "../../store/contactFields.ts"
import { Contacts, type ListSort } from "../../store/Contacts.ts"
import { ContactDirectory } from "../../ingest/ContactDirectory.ts"
import type { Condition } from "../../domain/conditions/types.ts"
import { conditionFilters } from "../../domain/conditions/validate.ts"
import { Campaigns } from "../../store/Campaigns.ts"
import { Segments } from "../../store/Segments.ts"
import { OutboxRelay } from "../../stream/OutboxRelay.ts"
import { Workflows } from "../../store/Workflows.ts"
import { fieldUsage } from "../../workflows/usage.ts"
import { Api } from "../api/Api.ts"
import { CurrentProject } from "../api/security.ts"
import { parseBoolean, parseLimit, parsePositive } from "../query.ts"
import { rendered } from "../errors.ts"
import { refuseOversizedData, validateData } from "./contactData.ts"
import { LegacyError, NotFound, ValidationFailed } from "../api/statusErrors.ts"

export const MAX_LOOKUP_EMAILS = 500

const notFound = NotFound.of("Contact")

export const ContactsHandlers = HttpApiBuilder.group(
  Api,
  "contacts",
  Effect.fnUntraced(function*(handlers) {
    const contacts = yield* Contacts
    const relay = yield* OutboxRelay
    const directory = yield* ContactDirectory
    const segments = yield* Segments
    const campaigns = yield* Campaigns
    const workflows = yield* Workflows

    const checkField = Effect.fnUntraced(function*(projectId: string, field: string) {
      const exists = yield* contacts.fieldExists(projectId, field)
      if (!exists) return yield* NotFound.of(`Field ${field}`)
    })

    /** `segment`: a segment of this project, whose current members the list keeps. */
    const listedSegment = Effect.fnUntraced(function*(projectId: string, id: string | undefined) {
      if (id === undefined || id === "") return undefined
      const segment = isUuid(id) ? yield* segments.get(projectId, id) : undefined
      if (!segment) return yield* ValidationFailed.field("segment", "No segment with this id in the project", "not_found", id)
      return segment
    })

    /** `field` (`data.<key>`) keeps contacts that have it; with `value`, those whose value reads as that text. */
    const listedData = Effect.fnUntraced(function*(field: string | undefined, value: string | undefined) {
      if (field === undefined || field === "") {
        if (value !== undefined && value !== "")
          return yield* ValidationFailed.field("value", "A value needs a field", "invalid_type", value)
        return undefined
      }
      const path = customFieldPath(field)
      if (!path)
        return yield* ValidationFailed.field("field", "Expected a custom field: data.<key>", "invalid_string", field)
      return { path, equals: value === undefined || value === "" ? undefined : value }
    })

    return handlers
      .handle("upsert", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          if (payload.email === undefined || payload.email.trim() === "") {
            return yield* new LegacyError({ message: "Email is required" })
          }
          yield* validateData(payload.data)
          const result = yield* refuseOversizedData(contacts.upsert({
            projectId: project.id,
            email: normalizeEmail(payload.email),
            subscribed: payload.subscribed,
            subscribedByDefault: true,
            patch: toDataPatch(payload.data),
            source: "api.contacts"
          }))
          yield* relay.wake
          return result.isNew
            ? { ...result.contact, _meta: { isNew: true as const, isUpdate: false } }
            : { ...result.contact, _meta: { isNew: false as const, isUpdate: true } }
        })))
      .handle("list", ({ query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const sort: ListSort = query.sort === "email" ? "email" : "createdAt"
          const segment = yield* listedSegment(project.id, query.segment)
          const data = yield* listedData(query.field, query.value)
          return yield* contacts.list(project.id, {
            segment,
            data,
            limit: parseLimit(query.limit),
            cursor: query.cursor === undefined || query.cursor === "" ? undefined : query.cursor,
            search: query.search === undefined || query.search === "" ? undefined : query.search,
            subscribed: parseBoolean(query.subscribed),
            sort,
            dir: query.dir === "asc" ? "asc" : "desc"
          })
        })))
      .handle("lookup", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          if (payload.emails.length > MAX_LOOKUP_EMAILS) {
            return yield* ValidationFailed.field("emails", `At most ${MAX_LOOKUP_EMAILS} emails per call`, "too_big", payload.emails.length)
          }
          const normalized = payload.emails.map(normalizeEmail)
          const found = yield* contacts.lookup(project.id, [...new Set(normalized)])
          const byEmail = new Map(found.map((contact) => [contact.email, contact]))
          return {
            results: payload.emails.map((email, index) => {
              const contact = byEmail.get(normalized[index]!)
              return { email, exists: contact !== undefined, contact: contact ? { id: contact.id, subscribed: contact.subscribed } : null }
            })
          }
        })))
      .handle("fields", () =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          return { fields: yield* contacts.fields(project.id) }
        })))
      .handle("fieldValues", ({ params, query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          yield* checkField(project.id, params.field)
          const page = parsePositive(query.page, 1)
          const pageSize = parsePositive(query.pageSize, 20, 100)
          const { values, total } = yield* contacts.fieldValues(project.id, params.field, page, pageSize)
          return { field: params.field, data: values, page, pageSize, total, totalPages: Math.ceil(total / pageSize) }
        })))
      .handle("fieldUsage", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          yield* checkField(project.id, params.field)
          const field = params.field
          const using = (yield* segments.list(project.id)).filter((segment) =>
            segment.condition !== null &&
            conditionFilters(segment.condition).some((filter) => filter.field === field || filter.field.startsWith(`${field}.`))
          )
          const reads = (condition: Condition | null) =>
            condition !== null &&
            conditionFilters(condition).some((filter) => filter.field === field || filter.field.startsWith(`${field}.`))
          const campaignsUsing = (yield* campaigns.all(project.id)).filter((campaign) => reads(campaign.audienceCondition))
          return {
            field,
            segments: using.map(({ id, name }) => ({ id, name })),
            campaigns: campaignsUsing.map(({ id, name, status }) => ({ id, name, status })),
            workflows: fieldUsage(yield* workflows.list(project.id), field)
          }
        })))
      .handle("deleteField", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          if (isStandardField(params.field)) {
            return yield* ValidationFailed.field(
              "field",
              `${params.field} is a standard field and cannot be deleted`,
              "invalid_value",
              params.field
            )
          }
          if (!customFieldPath(params.field)) return yield* NotFound.of(`Field ${params.field}`)
          yield* checkField(project.id, params.field)
          const contactsUpdated = yield* contacts.deleteField(project.id, params.field)
          yield* relay.wake
          return { field: params.field, deleted: true, contactsUpdated }
        })))
      .handle("get", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          if (!isUuid(params.id)) return yield* notFound
          const contact = yield* contacts.get(project.id, params.id)
          return contact ?? (yield* notFound)
        })))
      .handle("memberships", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          if (!isUuid(params.id)) return yield* notFound
          if (!(yield* contacts.get(project.id, params.id))) return yield* notFound
          return yield* contacts.memberships(project.id, params.id)
        })))
      .handle("update", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          if (!isUuid(params.id)) return yield* notFound
          yield* validateData(payload.data)
          // The track path caches email → id; a renamed contact must not keep its old email there.
          const before = payload.email === undefined ? undefined : yield* contacts.get(project.id, params.id)
          const result = yield* refuseOversizedData(contacts.update(project.id, params.id, {
            email: payload.email === undefined ? undefined : normalizeEmail(payload.email),
            subscribed: payload.subscribed,
            patch: toDataPatch(payload.data)
          }))
          if (!result) return yield* notFound
          if (before && before.email !== result.email) yield* directory.forget(project.id, before.email)
          yield* relay.wake
          return result
        })))
      .handle("delete", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          if (!isUuid(params.id)) return yield* notFound
          const existing = yield* contacts.get(project.id, params.id)
          const deleted = yield* contacts.remove(project.id, params.id)
          if (!deleted) return yield* notFound
          if (existing) yield* directory.forget(project.id, existing.email)
          yield* relay.wake
        })))
  })
)
