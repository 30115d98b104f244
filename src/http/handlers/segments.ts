import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import type { Condition } from "../../domain/conditions/types.ts"
import { conditionReads } from "../../domain/conditions/validate.ts"
import { isValidEmail, normalizeEmail } from "../../domain/email.ts"
import { isUuid } from "../../domain/ids.ts"
import { Campaigns } from "../../store/Campaigns.ts"
import { ConditionCheck } from "../../store/ConditionCheck.ts"
import { type Segment, Segments } from "../../store/Segments.ts"
import { OutboxRelay } from "../../stream/OutboxRelay.ts"
import { Api } from "../api/Api.ts"
import { CurrentProject } from "../api/security.ts"
import { parsePositive } from "../query.ts"
import { rendered } from "../errors.ts"
import { Conflict, LegacyError, NotFound, ValidationFailed } from "../api/statusErrors.ts"

const notFound = NotFound.of("Segment")
const MAX_EMAILS = 1_000

const present = ({ version: _, ...segment }: Segment) => segment

export const SegmentsHandlers = HttpApiBuilder.group(
  Api,
  "segments",
  Effect.fnUntraced(function*(handlers) {
    const segments = yield* Segments
    const campaigns = yield* Campaigns
    const relay = yield* OutboxRelay
    const conditions = yield* ConditionCheck

    /** The condition is well formed, its segment references exist here, and they form no cycle. */
    const checkCondition = Effect.fnUntraced(function*(projectId: string, condition: unknown, selfId?: string) {
      const checked = yield* conditions.check(projectId, condition, "condition", selfId ? { segmentId: selfId } : undefined)
      if (checked._tag === "valid") return checked.condition
      return yield* ValidationFailed.of(
        checked.problems.map((p) => ({ field: p.path, message: p.message, code: p.code, ...(p.received ? { received: p.received } : {}) })),
        checked.problems.length === 1 ? checked.problems[0]!.message : "The condition is invalid"
      )
    })

    const find = Effect.fnUntraced(function*(id: string) {
      const project = yield* CurrentProject
      if (!isUuid(id)) return yield* notFound
      return (yield* segments.get(project.id, id)) ?? (yield* notFound)
    })

    const checkEmails = (emails: ReadonlyArray<string>) => {
      if (emails.length > MAX_EMAILS) {
        return Effect.fail(ValidationFailed.field("emails", `At most ${MAX_EMAILS} emails per call`, "too_big", emails.length))
      }
      const invalid = emails.findIndex((email) => !isValidEmail(email.trim()))
      return invalid >= 0
        ? Effect.fail(ValidationFailed.field(`emails[${invalid}]`, "Expected a valid email address", "invalid_string", emails[invalid]))
        : Effect.succeed(emails.map(normalizeEmail))
    }

    return handlers
      .handle("create", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          // The reference's hand-validated fields: a missing one is its flat LegacyError 400.
          const name = payload.name
          if (name === undefined || name.trim() === "") return yield* new LegacyError({ message: "Name is required" })
          const type = payload.type ?? "DYNAMIC"
          let condition: Condition | null = null
          if (type === "DYNAMIC") {
            if (payload.condition === undefined || payload.condition === null || typeof payload.condition !== "object") {
              return yield* new LegacyError({ message: "Condition is required and must be an object for DYNAMIC segments" })
            }
            condition = yield* checkCondition(project.id, payload.condition)
          }
          const segment = yield* segments.create(project.id, {
            name,
            description: payload.description ?? null,
            type,
            condition,
            trackMembership: payload.trackMembership ?? false
          })
          yield* relay.wake
          return present(segment)
        })))
      .handle("preview", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          if (payload.condition !== undefined && payload.segmentId !== undefined) {
            return yield* ValidationFailed.field("segmentId", "Give a condition or a segmentId, not both", "invalid_value")
          }
          const sampleSize = payload.sampleSize ?? 10
          if (payload.segmentId !== undefined) {
            const segment = yield* find(payload.segmentId)
            return yield* segments.preview(project.id, { segment }, sampleSize)
          }
          if (payload.condition !== undefined) {
            if (payload.condition === null || typeof payload.condition !== "object") {
              return yield* ValidationFailed.field("condition", "A condition is an object { logic, groups }", "invalid_type")
            }
            const condition = yield* checkCondition(project.id, payload.condition)
            return yield* segments.preview(project.id, { condition }, sampleSize)
          }
          return yield* segments.preview(project.id, {}, sampleSize)
        })))
      .handle("list", () =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          return (yield* segments.list(project.id)).map(present)
        })))
      .handle("get", ({ params }) => rendered(Effect.map(find(params.id), present)))
      .handle("update", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const segment = yield* find(params.id)
          let condition: Condition | undefined
          if (payload.condition !== undefined) {
            if (segment.type === "STATIC") {
              return yield* ValidationFailed.field("condition", "A STATIC segment has no condition", "invalid_value")
            }
            condition = yield* checkCondition(project.id, payload.condition, segment.id)
          }
          const updated = yield* segments.update(project.id, segment.id, {
            name: payload.name,
            description: payload.description,
            condition,
            trackMembership: payload.trackMembership
          })
          yield* relay.wake
          return present(updated ?? (yield* notFound))
        })))
      .handle("delete", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const segment = yield* find(params.id)
          const dependents = (yield* segments.list(project.id))
            .filter((other) => other.condition && conditionReads(other.condition).segments.has(segment.id))
          if (dependents.length > 0) {
            return yield* Conflict.of("SEGMENT_IN_USE", `Segment is referenced by ${dependents.map((d) => d.name).join(", ")}`, {
              segments: dependents.map((d) => ({ id: d.id, name: d.name }))
            })
          }
          const campaignsUsing = yield* campaigns.activeUsingSegment(project.id, segment.id)
          if (campaignsUsing.length > 0) {
            return yield* Conflict.of(
              "SEGMENT_IN_USE",
              `Segment is the audience of active campaign${campaignsUsing.length > 1 ? "s" : ""} ${
                campaignsUsing.map((c) => c.name).join(", ")
              }`,
              { campaigns: campaignsUsing }
            )
          }
          yield* segments.remove(project.id, segment.id)
          yield* relay.wake
        })))
      .handle("contacts", ({ params, query }) =>
        rendered(Effect.gen(function*() {
          const segment = yield* find(params.id)
          const page = parsePositive(query.page, 1)
          const pageSize = parsePositive(query.pageSize, 20, 100)
          const { data, total } = yield* segments.contacts(segment, page, pageSize)
          return { data, page, pageSize, total, totalPages: Math.ceil(total / pageSize) }
        })))
      .handle("addMembers", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const segment = yield* find(params.id)
          if (segment.type !== "STATIC") {
            return yield* ValidationFailed.field("id", "Members can only be managed on a STATIC segment", "invalid_segment_type")
          }
          const emails = yield* checkEmails(payload.emails)
          const result = yield* segments.addMembers(segment, emails, {
            createMissing: payload.createMissing ?? false,
            subscribed: payload.subscribed
          })
          yield* relay.wake
          return result
        })))
      .handle("removeMembers", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const segment = yield* find(params.id)
          if (segment.type !== "STATIC") {
            return yield* ValidationFailed.field("id", "Members can only be managed on a STATIC segment", "invalid_segment_type")
          }
          const result = yield* segments.removeMembers(segment, yield* checkEmails(payload.emails))
          yield* relay.wake
          return result
        })))
      .handle("compute", ({ params }) =>
        rendered(Effect.gen(function*() {
          const segment = yield* find(params.id)
          if (segment.type !== "DYNAMIC")
            return yield* ValidationFailed.field("id", "Only DYNAMIC segments are computed", "invalid_segment_type")
          yield* segments.requestCompute(segment)
          yield* relay.wake
          return { accepted: true as const, segmentId: segment.id }
        })))
      .handle("refresh", ({ params }) =>
        rendered(Effect.gen(function*() {
          const segment = yield* find(params.id)
          return present(yield* segments.refreshCount(segment))
        })))
  })
)
