import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../config.ts"
import type { Condition } from "../../domain/conditions/types.ts"
import { isValidEmail, normalizeEmail } from "../../domain/email.ts"
import { isUuid, uuidv7 } from "../../domain/ids.ts"
import { MailQueue } from "../../mail/MailQueue.ts"
import { makeRenderer } from "../../mail/render.ts"
import { Billing } from "../../store/Billing.ts"
import { CAMPAIGN_STATUSES, type CampaignInput } from "../../store/campaignRows.ts"
import { Campaigns } from "../../store/Campaigns.ts"
import { Contacts } from "../../store/Contacts.ts"
import { Segments } from "../../store/Segments.ts"
import { ConditionCheck } from "../../store/ConditionCheck.ts"
import { OutboxRelay } from "../../stream/OutboxRelay.ts"
import { Api } from "../api/Api.ts"
import type { CampaignBody } from "../api/campaigns.ts"
import { CurrentProject } from "../api/security.ts"
import { type FieldError, rendered } from "../errors.ts"
import { parsePositive } from "../query.ts"
import { billingLimitExceeded, mailProblem } from "./send.ts"
import { subjectProblem, syntaxProblem, verifiedDomainRule } from "./mailContent.ts"
import { BadRequest, NotFound, RateLimited, ValidationFailed } from "../api/statusErrors.ts"

const notFound = NotFound.of("Campaign")
const renderer = makeRenderer()

export const CampaignsHandlers = HttpApiBuilder.group(
  Api,
  "campaigns",
  Effect.fnUntraced(function*(handlers) {
    const sql = yield* SqlClient.SqlClient
    const campaigns = yield* Campaigns
    const segments = yield* Segments
    const conditions = yield* ConditionCheck
    const contacts = yield* Contacts
    const mail = yield* MailQueue
    const requireVerifiedDomain = yield* verifiedDomainRule
    const relay = yield* OutboxRelay
    const billing = yield* Billing
    const testSendsPerHour = (yield* AppConfig).campaignTestSendsPerHour

    /** A test send may go to any address: held to an hourly number per project, beside the campaigns cap. */
    const admitTestSend = Effect.fnUntraced(function*(projectId: string) {
      if (testSendsPerHour === 0) return
      const recent = yield* campaigns.recentTestSends(projectId, testSendsPerHour)
      if (recent.count < testSendsPerHour) return
      return yield* new RateLimited({
        code: "RATE_LIMIT_EXCEEDED",
        message: `At most ${testSendsPerHour} campaign test sends an hour per project`,
        details: { limit: testSendsPerHour, retryAfterSeconds: recent.freeInSeconds },
        suggestion: "Wait for the number of seconds in Retry-After, then send the test again.",
        headers: { "retry-after": String(recent.freeInSeconds) }
      })
    })

    const find = Effect.fnUntraced(function*(id: string) {
      const project = yield* CurrentProject
      if (!isUuid(id)) return yield* notFound
      return (yield* campaigns.get(project.id, id)) ?? (yield* notFound)
    })

    /** Every rule of create and replace: 422 listing all problems, then 403 for the sender domain. */
    const validated = Effect.fnUntraced(function*(projectId: string, payload: typeof CampaignBody.Type) {
      const problems: Array<FieldError | undefined> = []
      const required = (field: string, value: unknown) =>
        value === undefined || value === null || (typeof value === "string" && value.trim() === "")
          ? { field, message: `${field} is required`, code: "required" }
          : undefined
      problems.push(
        required("name", payload.name),
        required("subject", payload.subject),
        required("body", payload.body),
        required("from", payload.from),
        required("audienceType", payload.audienceType)
      )
      if (payload.name && payload.name.length > 255) problems.push({ field: "name", message: "At most 255 characters", code: "too_big" })
      if (payload.subject) problems.push(subjectProblem("subject", payload.subject) ?? syntaxProblem("subject", payload.subject, "text"))
      if (payload.body) problems.push(syntaxProblem("body", payload.body, "html"))
      if (payload.from && !isValidEmail(payload.from.trim())) {
        problems.push({ field: "from", message: "Expected a valid email address", code: "invalid_string" })
      }
      if (payload.replyTo && !isValidEmail(payload.replyTo.trim())) {
        problems.push({ field: "replyTo", message: "Expected a valid email address", code: "invalid_string" })
      }
      let segmentId: string | null = null
      let audienceCondition: Condition | null = null
      const missingAudience: Array<FieldError> = []
      if (payload.audienceType === "SEGMENT") {
        if (!payload.segmentId) {
          missingAudience.push({ field: "segmentId", message: "segmentId is required for a SEGMENT audience", code: "required" })
        } else if (!isUuid(payload.segmentId) || !(yield* segments.get(projectId, payload.segmentId))) {
          problems.push({ field: "segmentId", message: "No such segment in this project", code: "unknown_segment" })
        } else {
          segmentId = payload.segmentId
        }
      }
      if (payload.audienceType === "FILTERED") {
        if (payload.audienceCondition === undefined || payload.audienceCondition === null) {
          missingAudience.push({
            field: "audienceCondition",
            message: "audienceCondition is required for a FILTERED audience",
            code: "required"
          })
        } else {
          const checked = yield* conditions.check(projectId, payload.audienceCondition, "audienceCondition")
          if (checked._tag === "valid") audienceCondition = checked.condition
          else problems.push(
              ...checked.problems.map((p) => ({
                field: p.path,
                message: p.message,
                code: p.code,
                ...(p.received ? { received: p.received } : {})
              }))
            )
        }
      }
      const found = problems.filter((problem) => problem !== undefined)
      if (found.length > 0) return yield* ValidationFailed.of([...found, ...missingAudience])
      // The audience's companion field alone missing: the reference's 400 (in the envelope).
      if (missingAudience.length > 0) {
        return yield* new BadRequest({ code: "BAD_REQUEST", message: missingAudience[0]!.message, errors: missingAudience })
      }
      const from = normalizeEmail(payload.from!)
      yield* requireVerifiedDomain(projectId, from)
      const input: CampaignInput = {
        name: payload.name!.trim(),
        description: payload.description ?? null,
        subject: payload.subject!,
        body: payload.body!,
        from,
        fromName: payload.fromName ?? null,
        replyTo: payload.replyTo ? normalizeEmail(payload.replyTo) : null,
        type: payload.type ?? "MARKETING",
        audienceType: payload.audienceType!,
        segmentId,
        audienceCondition
      }
      return input
    })

    return handlers
      .handle("create", ({ payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const input = yield* validated(project.id, payload)
          return { success: true as const, data: yield* campaigns.create(project.id, input) }
        })))
      .handle("list", ({ query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          let status = undefined
          if (query.status !== undefined && query.status !== "") {
            status = CAMPAIGN_STATUSES.find((known) => known === query.status!.toUpperCase())
            if (!status)
              return yield* BadRequest.of(`Unknown status ${query.status}: use ${CAMPAIGN_STATUSES.join(", ")}`, "INVALID_STATUS")
          }
          const page = parsePositive(query.page, 1)
          const pageSize = parsePositive(query.pageSize, 20, 100)
          const sort = query.sort === "name" || query.sort === "updatedAt" ? query.sort : "createdAt"
          const direction = query.dir?.toLowerCase() === "asc" ? "asc" : "desc"
          const { data, total } = yield* campaigns.list(project.id, {
            page,
            pageSize,
            status,
            search: query.search?.trim() || undefined,
            sort,
            direction
          })
          return { data, page, pageSize, total, totalPages: Math.ceil(total / pageSize) }
        })))
      .handle("get", ({ params }) => rendered(find(params.id)))
      .handle("replace", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const campaign = yield* find(params.id)
          const input = yield* validated(project.id, payload)
          return (yield* campaigns.replace(project.id, campaign.id, input)) ?? (yield* notFound)
        })))
      .handle("delete", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const campaign = yield* find(params.id)
          if (!(yield* campaigns.remove(project.id, campaign.id))) return yield* notFound
          return { success: true as const }
        })))
      .handle("duplicate", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const campaign = yield* find(params.id)
          const copy = yield* campaigns.create(project.id, { ...campaign, name: `${campaign.name} (Copy)`.slice(0, 255) })
          return { success: true as const, data: copy }
        })))
      .handle("test", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const campaign = yield* find(params.id)
          const address = normalizeEmail(payload.email)
          if (!isValidEmail(address))
            return yield* ValidationFailed.field("email", "Expected a valid email address", "invalid_string", payload.email)
          yield* requireVerifiedDomain(project.id, campaign.from)
          // The contact's own data when the address is a contact, so the test shows what they would get.
          const [known] = yield* contacts.lookup(project.id, [address])
          const projectMail = yield* mail.forProject(project.id, { trackingEnabled: false })
          const email = yield* projectMail.render(
            {
              subject: renderer.compile(`[Test] ${campaign.subject}`, "text"),
              body: renderer.compile(campaign.body, "html"),
              from: campaign.from,
              fromName: campaign.fromName,
              replyTo: campaign.replyTo,
              headers: {},
              attachments: [],
              type: "TRANSACTIONAL",
              templateId: null
            },
            { contactId: known?.id ?? uuidv7(), email: address, name: null, data: known?.data ?? {} }
          ).pipe(Effect.mapError((error) => mailProblem(error)))
          // Not the contact's mail and not the campaign's: no events, no counters. It counts against the
          // campaigns cap all the same (refused over it, as /v1/send is over the transactional one).
          yield* sql.withTransaction(Effect.gen(function*() {
            yield* admitTestSend(project.id)
            yield* billing.reserve(project.id, "campaigns", 1)
            yield* mail.queue(project.id, [{ ...email, contactId: null, billingCategory: "campaigns" }])
          })).pipe(Effect.catchTag("BillingLimitExceeded", (error) => Effect.fail(billingLimitExceeded(error))))
          yield* relay.wake
          return { success: true as const, data: { email: address, emailId: email.id } }
        })))
      .handle("stats", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const campaign = yield* find(params.id)
          return (yield* campaigns.stats(project.id, campaign.id)) ?? (yield* notFound)
        })))
      .handle("recipients", ({ params, query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const campaign = yield* find(params.id)
          const page = parsePositive(query.page, 1)
          const pageSize = parsePositive(query.pageSize, 20, 100)
          const found = yield* campaigns.recipients(project.id, campaign.id, page, pageSize)
          if (!found) return yield* notFound
          return { ...found, page, pageSize, totalPages: Math.ceil(found.total / pageSize) }
        })))
      .handle("send", ({ params, payload }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const campaign = yield* find(params.id)
          let at: Date | undefined
          if (payload.scheduledFor !== undefined && payload.scheduledFor !== null) {
            at = new Date(payload.scheduledFor)
            if (Number.isNaN(at.getTime()))
              return yield* BadRequest.of(`scheduledFor is not a date: ${payload.scheduledFor}`, "INVALID_DATE")
          }
          yield* requireVerifiedDomain(project.id, campaign.from)
          // A campaign that cannot be sent in its state is a 400 (CampaignNotSendable), as the reference documents it.
          const sent = (yield* campaigns.send(project.id, campaign.id, at)) ?? (yield* notFound)
          yield* relay.wake
          return {
            success: true as const,
            data: { id: sent.id, name: sent.name, status: sent.status, scheduledFor: sent.scheduledFor },
            message: sent.status === "SCHEDULED"
              ? `Campaign scheduled for ${sent.scheduledFor}`
              : "Campaign is sending"
          }
        })))
      .handle("cancel", ({ params }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const campaign = yield* find(params.id)
          const cancelled = (yield* campaigns.cancel(project.id, campaign.id)) ?? (yield* notFound)
          return { success: true as const, data: cancelled }
        })))
  })
)
