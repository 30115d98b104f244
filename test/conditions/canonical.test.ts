/** Bare event names in filters (the reference's form) and their one stored form, `event.<name>`. */
import { describe, expect, it } from "vitest"
import { canonicalCondition, canonicalField } from "../../src/domain/conditions/canonical.ts"
import { validateCondition } from "../../src/domain/conditions/validate.ts"
import { checkStepConfig } from "../../src/workflows/stepConfig.ts"

const tree = (...filters: Array<Record<string, unknown>>) => ({ logic: "AND", groups: [{ filters }] })

describe("canonical event filters", () => {
  it("writes a bare event name as event.<name> under every event operator, and nothing else", () => {
    for (
      const operator of ["triggered", "notTriggered", "triggeredWithin", "triggeredOlderThan", "notTriggeredWithin", "triggeredAtLeast"]
    ) {
      expect(canonicalField("purchase", operator), operator).toBe("event.purchase")
    }
    // Already an event: ours, and the engagement fields in both spellings.
    expect(canonicalField("event.purchase", "triggered")).toBe("event.purchase")
    expect(canonicalField("email.opened", "triggered")).toBe("email.opened")
    expect(canonicalField("email.open", "triggeredWithin")).toBe("email.open")
    // Names that look like other fields are event names under an event operator (emitted events among them).
    expect(canonicalField("segment.pro-users.entry", "triggered")).toBe("event.segment.pro-users.entry")
    expect(canonicalField("contact.subscribed", "triggered")).toBe("event.contact.subscribed")
    expect(canonicalField("email", "triggered")).toBe("event.email")
    // Value and membership operators keep their fields; so does anything that is not a name.
    expect(canonicalField("purchase", "equals")).toBe("purchase")
    expect(canonicalField("data.plan", "exists")).toBe("data.plan")
    expect(canonicalField("segment.abc", "memberOfSegment")).toBe("segment.abc")
    expect(canonicalField("", "triggered")).toBe("")
    expect(canonicalField(42, "triggered")).toBe(42)
  })

  it("rewrites filters at every depth, leaves the rest of the tree as it was, and the result validates", () => {
    const input = {
      logic: "OR",
      groups: [
        {
          filters: [{ field: "purchase", operator: "triggeredWithin", value: 7, unit: "days" }, {
            field: "data.plan",
            operator: "equals",
            value: "pro"
          }]
        },
        { filters: [], conditions: tree({ field: "signup", operator: "triggered" }) }
      ]
    }
    const canonical = canonicalCondition(input)
    expect(canonical).toEqual({
      logic: "OR",
      groups: [
        {
          filters: [{ field: "event.purchase", operator: "triggeredWithin", value: 7, unit: "days" }, {
            field: "data.plan",
            operator: "equals",
            value: "pro"
          }]
        },
        { filters: [], conditions: tree({ field: "event.signup", operator: "triggered" }) }
      ]
    })
    expect(validateCondition(canonical)).toEqual([])
    // The bare form alone is what validation used to refuse.
    expect(validateCondition(input).map((problem) => problem.path)).toEqual([
      "groups[0].filters[0].field",
      "groups[1].conditions.groups[0].filters[0].field"
    ])
    expect(input.groups[0]!.filters[0]!.field).toBe("purchase") // not mutated
  })

  it("leaves malformed trees for validation to report at the same paths", () => {
    for (
      const input of [null, "x", [], { logic: "AND" }, {
        logic: "AND",
        groups: [null, { filters: "x" }, { filters: [7, { operator: "triggered" }] }]
      }]
    ) {
      const canonical = canonicalCondition(input)
      expect(validateCondition(canonical, "condition")).toEqual(validateCondition(input, "condition"))
    }
  })

  it("stores workflow CONDITION steps in the canonical form, as a tree or as one filter", () => {
    const single = checkStepConfig("CONDITION", { field: "purchase", operator: "triggeredWithin", value: 2, unit: "hours" })
    expect(single.problems).toEqual([])
    expect(single.config).toEqual({ field: "event.purchase", operator: "triggeredWithin", value: 2, unit: "hours" })
    const nested = checkStepConfig("CONDITION", {
      condition: tree({ field: "purchase", operator: "notTriggered" }, { field: "context.plan", operator: "equals", value: "pro" })
    })
    expect(nested.problems).toEqual([])
    expect(nested.config.condition).toEqual(
      tree({ field: "event.purchase", operator: "notTriggered" }, { field: "context.plan", operator: "equals", value: "pro" })
    )
  })
})
