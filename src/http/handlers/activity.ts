import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ACTIVITY_TYPES, type ActivityType } from "../../domain/analytics/activityTypes.ts"
import { DAY } from "../../domain/analytics/range.ts"
import { Activity } from "../../store/Activity.ts"
import { Api } from "../api/Api.ts"
import { CurrentProject } from "../api/security.ts"
import { rendered } from "../errors.ts"
import { fieldReader } from "../fieldReader.ts"
import { nonEmpty, parseLimit } from "../query.ts"
import { iso } from "../../store/columns.ts"
import { ValidationFailed } from "../api/statusErrors.ts"

const sorted = (counts: Map<ActivityType, number>) =>
  [...counts].map(([type, count]) => ({ type, count })).sort((a, b) => b.count - a.count || (a.type < b.type ? -1 : 1))

export const ActivityHandlers = HttpApiBuilder.group(
  Api,
  "activity",
  Effect.fnUntraced(function*(handlers) {
    const activity = yield* Activity

    return handlers
      .handle("feed", ({ query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const read = fieldReader()
          const feedQuery = {
            limit: parseLimit(query.limit),
            cursor: nonEmpty(query.cursor),
            types: read.list("types", query.types, ACTIVITY_TYPES, "types"),
            contactId: read.uuid("contactId", query.contactId),
            campaignId: read.uuid("campaignId", query.campaignId),
            workflowId: read.uuid("workflowId", query.workflowId),
            from: read.instant("from", query.from),
            to: read.instant("to", query.to),
            search: nonEmpty(query.search?.trim())
          }
          yield* read.done()
          return yield* activity.feed(project.id, feedQuery)
        })))
      .handle("types", ({ query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const read = fieldReader()
          const from = read.instant("from", query.from)
          const to = read.instant("to", query.to)
          yield* read.done()
          return { types: sorted(yield* activity.counts(project.id, from ?? null, to ?? null)) }
        })))
      .handle("stats", ({ query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const read = fieldReader()
          const to = read.instant("to", query.to) ?? (yield* Clock.currentTimeMillis)
          const from = read.instant("from", query.from) ?? to - 30 * DAY
          yield* read.done()
          if (from >= to) return yield* ValidationFailed.field("from", "from must be before to", "invalid_range", query.from)
          const byType = sorted(yield* activity.counts(project.id, from, to))
          return { from: iso(from), to: iso(to), total: byType.reduce((sum, entry) => sum + entry.count, 0), byType }
        })))
      .handle("recentCount", ({ query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const read = fieldReader()
          const since = read.instant("since", query.since)
          const types = read.list("types", query.types, ACTIVITY_TYPES, "types")
          if (nonEmpty(query.since) === undefined) read.problems.push({ field: "since", message: "required", code: "required" })
          yield* read.done()
          const counts = yield* activity.counts(project.id, since!, null, true)
          const count = [...counts].filter(([type]) => types === undefined || types.includes(type)).reduce((sum, [, n]) => sum + n, 0)
          return { since: iso(since!), count }
        })))
      .handle("upcoming", ({ query }) =>
        rendered(Effect.gen(function*() {
          const project = yield* CurrentProject
          const raw = nonEmpty(query.hours)
          const hours = raw === undefined ? 24 : Number(raw)
          if (!Number.isInteger(hours) || hours < 1 || hours > 8760) {
            return yield* ValidationFailed.field("hours", "expected a whole number of hours from 1 to 8760", "invalid_number", raw)
          }
          const limit = Math.min(500, Math.max(1, Number.parseInt(query.limit ?? "100", 10) || 100))
          return { hours, items: yield* activity.upcoming(project.id, hours, limit) }
        })))
  })
)
