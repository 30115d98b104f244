/** Each operator and field kind of the in-memory evaluator, with the instant its answer next changes. */
import { describe, expect, it } from "vitest"
import { compileCondition, type ContactFacts } from "../../src/domain/conditions/evaluate.ts"
import type { Condition, Filter } from "../../src/domain/conditions/types.ts"
import { validateCondition } from "../../src/domain/conditions/validate.ts"

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0)
const MIN = 60_000
const HOUR = 60 * MIN
const DAY = 24 * HOUR

const facts: ContactFacts = {
  id: "c1",
  email: "ada@example.com",
  subscribed: true,
  createdAt: Date.UTC(2026, 0, 14, 9, 30),
  updatedAt: NOW - 5 * MIN,
  data: { plan: "Pro", seats: 3, beta: false, since: "2026-01-10", lastLogin: "2026-01-15T11:55:00Z", profile: { tier: "gold" } },
  events: new Map([["purchase", { count: 3, firstAt: NOW - 10 * DAY, lastAt: NOW - 2 * HOUR }]]),
  eventTimes: new Map([["purchase", [NOW - 2 * HOUR, NOW - 3 * DAY, NOW - 10 * DAY]]]),
  memberships: new Set(["seg-1"])
}

const one = (filter: Filter): Condition => ({ logic: "AND", groups: [{ filters: [filter] }] })
const run = (condition: Condition, at = NOW) => {
  expect(validateCondition(condition)).toEqual([])
  return compileCondition(condition)(facts, at)
}

describe("in-memory evaluator", () => {
  it.each<[string, Filter, boolean]>([
    ["email equals is case-insensitive", { field: "email", operator: "equals", value: "ADA@example.com" }, true],
    ["email contains", { field: "email", operator: "contains", value: "EXAMPLE" }, true],
    ["email notContains", { field: "email", operator: "notContains", value: "bob" }, true],
    ["subscribed equals", { field: "subscribed", operator: "equals", value: true }, true],
    ["subscribed notEquals", { field: "subscribed", operator: "notEquals", value: true }, false],
    ["data string equals is exact", { field: "data.plan", operator: "equals", value: "pro" }, false],
    ["data string equals", { field: "data.plan", operator: "equals", value: "Pro" }, true],
    ["data contains is case-insensitive", { field: "data.plan", operator: "contains", value: "PR" }, true],
    ["data notEquals on a missing key", { field: "data.nope", operator: "notEquals", value: "x" }, true],
    // As the reference answers it (its segments, and its workflow conditions "consistent with SegmentService").
    ["data notContains on a missing key", { field: "data.nope", operator: "notContains", value: "x" }, false],
    ["data notContains on a value without it", { field: "data.plan", operator: "notContains", value: "x" }, true],
    ["number greaterThan", { field: "data.seats", operator: "greaterThan", value: 2 }, true],
    ["number lessThan", { field: "data.seats", operator: "lessThan", value: 3 }, false],
    ["number greaterThanOrEqual", { field: "data.seats", operator: "greaterThanOrEqual", value: 3 }, true],
    ["number lessThanOrEqual", { field: "data.seats", operator: "lessThanOrEqual", value: 3 }, true],
    ["boolean equals", { field: "data.beta", operator: "equals", value: false }, true],
    ["nested data", { field: "data.profile.tier", operator: "equals", value: "gold" }, true],
    ["exists", { field: "data.profile", operator: "exists" }, true],
    ["notExists", { field: "data.nope", operator: "notExists" }, true],
    ["date data greaterThan a day", { field: "data.since", operator: "greaterThan", value: "2026-01-09" }, true],
    ["date data lessThanOrEqual the same day", { field: "data.since", operator: "lessThanOrEqual", value: "2026-01-10" }, true],
    ["createdAt equals its UTC day", { field: "createdAt", operator: "equals", value: "2026-01-14" }, true],
    ["createdAt greaterThan the previous day", { field: "createdAt", operator: "greaterThan", value: "2026-01-13" }, true],
    ["createdAt greaterThan its own day", { field: "createdAt", operator: "greaterThan", value: "2026-01-14" }, false],
    ["updatedAt lessThan an instant", { field: "updatedAt", operator: "lessThan", value: "2026-01-15T12:00:00Z" }, true],
    ["within", { field: "data.lastLogin", operator: "within", value: 10, unit: "minutes" }, true],
    ["olderThan", { field: "createdAt", operator: "olderThan", value: 1, unit: "days" }, true],
    ["triggered", { field: "event.purchase", operator: "triggered" }, true],
    ["notTriggered", { field: "event.refund", operator: "notTriggered" }, true],
    ["triggeredWithin", { field: "event.purchase", operator: "triggeredWithin", value: 3, unit: "hours" }, true],
    ["triggeredOlderThan", { field: "event.purchase", operator: "triggeredOlderThan", value: 1, unit: "hours" }, true],
    ["notTriggeredWithin", { field: "event.purchase", operator: "notTriggeredWithin", value: 1, unit: "hours" }, true],
    ["triggeredAtLeast", { field: "event.purchase", operator: "triggeredAtLeast", value: 3 }, true],
    ["triggeredAtLeast in a window", { field: "event.purchase", operator: "triggeredAtLeast", value: 2, within: 7, unit: "days" }, true],
    [
      "triggeredAtLeast in a short window",
      { field: "event.purchase", operator: "triggeredAtLeast", value: 2, within: 1, unit: "days" },
      false
    ],
    ["engagement field", { field: "email.opened", operator: "notTriggered" }, true],
    ["memberOfSegment", { field: "segment.seg-1", operator: "memberOfSegment" }, true],
    ["notMemberOfSegment by value", { field: "segment", operator: "notMemberOfSegment", value: "seg-2" }, true]
  ])("%s", (_, filter, expected) => {
    expect(run(one(filter)).matches).toBe(expected)
  })

  it("combines filters with AND inside a group, groups by logic, and nests", () => {
    const yes: Filter = { field: "data.seats", operator: "equals", value: 3 }
    const no: Filter = { field: "data.seats", operator: "equals", value: 4 }
    expect(run({ logic: "AND", groups: [{ filters: [yes, no] }] }).matches).toBe(false)
    expect(run({ logic: "OR", groups: [{ filters: [no] }, { filters: [yes] }] }).matches).toBe(true)
    expect(run({ logic: "AND", groups: [{ filters: [yes], conditions: { logic: "OR", groups: [{ filters: [no] }] } }] }).matches).toBe(
      false
    )
    expect(
      run({ logic: "AND", groups: [{ filters: [yes], conditions: { logic: "OR", groups: [{ filters: [no] }, { filters: [yes] }] } }] })
        .matches
    ).toBe(true)
  })

  it("names the instant a time window lapses", () => {
    const login = run(one({ field: "data.lastLogin", operator: "within", value: 10, unit: "minutes" }))
    expect(login.nextChangeAt).toBe(Date.parse("2026-01-15T11:55:00Z") + 10 * MIN)
    expect(run(one({ field: "data.lastLogin", operator: "within", value: 10, unit: "minutes" }), login.nextChangeAt!).matches).toBe(false)
    expect(run(one({ field: "data.lastLogin", operator: "within", value: 10, unit: "minutes" }), login.nextChangeAt! - 1).matches).toBe(
      true
    )
    const recent = run(one({ field: "event.purchase", operator: "triggeredWithin", value: 3, unit: "hours" }))
    expect(recent.nextChangeAt).toBe(NOW - 2 * HOUR + 3 * HOUR)
    const windowed = run(one({ field: "event.purchase", operator: "triggeredAtLeast", value: 2, within: 7, unit: "days" }))
    // True until the 2nd newest occurrence (3 days ago) leaves the 7-day window.
    expect(windowed.nextChangeAt).toBe(NOW - 3 * DAY + 7 * DAY)
    expect(run(one({ field: "data.plan", operator: "equals", value: "Pro" })).nextChangeAt).toBeUndefined()
  })
})

describe("condition validation", () => {
  it("reports each problem with the path of the offending node", () => {
    const problems = validateCondition({
      logic: "XOR",
      groups: [
        { filters: [{ field: "data.plan", operator: "equals", value: "x" }] },
        { filters: [{ field: "data.plan", operator: "sortOf", value: "x" }, { field: "nope", operator: "equals", value: 1 }] },
        { filters: [{ field: "createdAt", operator: "within", value: 3 }], conditions: { logic: "AND", groups: [] } },
        { filters: [{ field: "event.x", operator: "equals", value: 1 }, { field: "email", operator: "contains", value: "" }] }
      ]
    })
    expect(problems.map((p) => p.path)).toEqual([
      "logic",
      "groups[1].filters[0].operator",
      "groups[1].filters[1].field",
      "groups[2].filters[0].unit",
      "groups[2].conditions.groups",
      "groups[3].filters[0].operator",
      "groups[3].filters[1].value"
    ])
  })

  it("caps nesting depth", () => {
    let tree: Condition = { logic: "AND", groups: [{ filters: [{ field: "email", operator: "exists" }] }] }
    for (let i = 0; i < 6; i++) tree = { logic: "AND", groups: [{ filters: [], conditions: tree }] }
    expect(validateCondition(tree).map((p) => p.code)).toContain("too_deep")
  })
})
