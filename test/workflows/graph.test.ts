/** The pure graph rules and step configs (no processes). */
import { describe, expect, it } from "vitest"
import {
  canonicalEventName,
  checkTransition,
  makeGraph,
  nextStep,
  spliceTarget,
  type Step,
  type Transition
} from "../../src/workflows/graph.ts"
import { conditionOf } from "../../src/workflows/conditionStep.ts"
import { checkStepConfig } from "../../src/workflows/stepConfig.ts"

const step = (id: string, type: Step["type"], config: Record<string, unknown> = {}): Step => ({ id, type, name: id, config })
const transition = (from: string, to: string, extra: Partial<Transition> = {}): Transition => ({
  id: `${from}-${to}`,
  fromStepId: from,
  toStepId: to,
  branch: null,
  waitOutcome: null,
  ...extra
})

describe("workflow graphs", () => {
  const steps = [step("t", "TRIGGER"), step("c", "CONDITION"), step("w", "WAIT_FOR_EVENT"), step("d", "DELAY"), step("x", "EXIT")]
  const graph = makeGraph(steps, [
    transition("t", "c"),
    transition("c", "w", { branch: "yes" }),
    transition("c", "x", { branch: "no" }),
    transition("w", "d", { waitOutcome: "TIMEOUT" })
  ])

  it("follows branches and outcomes", () => {
    expect(nextStep(graph, "t")?.id).toBe("c")
    expect(nextStep(graph, "c", { branch: "yes" })?.id).toBe("w")
    expect(nextStep(graph, "c", { branch: "no" })?.id).toBe("x")
    expect(nextStep(graph, "w", { waitOutcome: "EVENT" })).toBeUndefined()
    expect(nextStep(graph, "w", { waitOutcome: "TIMEOUT" })?.id).toBe("d")
  })

  it("refuses cycles, second ways out, wrong branch kinds, EXIT sources and TRIGGER targets", () => {
    const codes = (input: Parameters<typeof checkTransition>[1]) =>
      checkTransition(graph, input).map((problem) => `${problem.field}:${problem.code}`)
    expect(codes({ fromStepId: "d", toStepId: "c" })).toEqual(["toStepId:cycle"])
    expect(codes({ fromStepId: "d", toStepId: "d" })).toEqual(["toStepId:cycle"])
    expect(codes({ fromStepId: "t", toStepId: "d" })).toEqual(["fromStepId:duplicate_transition"])
    expect(codes({ fromStepId: "c", toStepId: "d", branch: "yes" })).toEqual(["branch:duplicate_transition"])
    expect(codes({ fromStepId: "w", toStepId: "x", branch: "yes", waitOutcome: "EVENT" })).toEqual(["branch:invalid_value"])
    expect(codes({ fromStepId: "d", toStepId: "x", branch: "no" })).toEqual(["branch:invalid_value"])
    expect(codes({ fromStepId: "x", toStepId: "d" })).toEqual(["fromStepId:invalid_source"])
    expect(codes({ fromStepId: "d", toStepId: "t" })).toEqual(["toStepId:invalid_target"])
    expect(codes({ fromStepId: "w", toStepId: "x", waitOutcome: "EVENT" })).toEqual([])
    expect(codes({ fromStepId: "d", toStepId: "x" })).toEqual([])
  })

  it("says which field a branching step's transition needs, which it must not carry, and which way out is taken", () => {
    const problems = (input: Parameters<typeof checkTransition>[1]) =>
      checkTransition(graph, input).map((problem) => `${problem.field}:${problem.code}: ${problem.message}`)
    expect(problems({ fromStepId: "c", toStepId: "d" })).toEqual([
      "branch:required: A transition from a CONDITION step needs branch yes or no"
    ])
    expect(problems({ fromStepId: "c", toStepId: "d", branch: "maybe", waitOutcome: "EVENT" })).toEqual([
      "branch:required: A transition from a CONDITION step needs branch yes or no"
    ])
    expect(problems({ fromStepId: "c", toStepId: "d", branch: "no", waitOutcome: "EVENT" })).toEqual([
      "waitOutcome:invalid_value: waitOutcome only applies to WAIT_FOR_EVENT steps",
      "branch:duplicate_transition: The no branch of this step already has a transition"
    ])
    expect(problems({ fromStepId: "w", toStepId: "x", branch: "yes" })).toEqual([
      "waitOutcome:required: A transition from a WAIT_FOR_EVENT step needs waitOutcome EVENT or TIMEOUT"
    ])
    expect(problems({ fromStepId: "w", toStepId: "x", branch: "yes", waitOutcome: "TIMEOUT" })).toEqual([
      "branch:invalid_value: branch only applies to CONDITION steps",
      "waitOutcome:duplicate_transition: The TIMEOUT outcome of this step already has a transition"
    ])
    expect(problems({ fromStepId: "t", toStepId: "d", branch: "yes", waitOutcome: "EVENT" })).toEqual([
      "branch:invalid_value: branch only applies to CONDITION steps",
      "waitOutcome:invalid_value: waitOutcome only applies to WAIT_FOR_EVENT steps",
      "fromStepId:duplicate_transition: A TRIGGER step has one outgoing transition, and this one has it already"
    ])
  })

  it("splices a step with one way out, not one with two", () => {
    expect(spliceTarget(graph, "w")).toEqual({ target: "d" })
    expect(spliceTarget(graph, "x")).toEqual({ target: undefined })
    expect(spliceTarget(graph, "c")).toHaveProperty("problem")
  })

  it("reads context fields in conditions and both spellings of engagement events", () => {
    const tree = conditionOf({ field: "context.order.total", operator: "greaterThan", value: 10 })
    expect(tree.groups[0]!.filters[0]!.field).toBe("data.$context.order.total")
    expect(checkStepConfig("CONDITION", { field: "context.total", operator: "bogus" }).problems.map((p) => p.field)).toEqual([
      "config.operator"
    ])
    // One filter counts in a window as a tree's filter does; a bad window is refused at its own path.
    const windowed = { field: "event.visit", operator: "triggeredAtLeast", value: 2, within: 1, unit: "hours" }
    expect(conditionOf(windowed).groups[0]!.filters[0]).toMatchObject({ within: 1, unit: "hours" })
    expect(checkStepConfig("CONDITION", windowed)).toMatchObject({ problems: [], config: { within: 1 } })
    expect(checkStepConfig("CONDITION", { ...windowed, within: -1 }).problems.map((p) => p.field)).toEqual(["config.within"])
    expect(["email.opened", "email.open", "email.delivered", "email.clicked", "email.sent", "signed_up"].map(canonicalEventName))
      .toEqual(["email.open", "email.open", "email.delivery", "email.click", "email.sent", "signed_up"])
  })
})

describe("webhook verdicts", () => {
  it("retries what may pass later, up to the bound, and fails the rest at once", async () => {
    const { judge, MAX_ATTEMPTS, signWebhook } = await import("../../src/workflows/webhooks.ts")
    const response = (status: number) => ({ _tag: "Response" as const, status, body: "", truncated: false, url: "https://example.com" })
    expect(judge(response(204), 1)._tag).toBe("done")
    for (const status of [408, 429, 500, 503]) expect(judge(response(status), 1)._tag).toBe("retry")
    expect(judge({ _tag: "Failed", reason: "connect ECONNREFUSED" }, 1)._tag).toBe("retry")
    expect(judge(response(503), MAX_ATTEMPTS)).toMatchObject({ _tag: "failed", error: `HTTP 503 (after ${MAX_ATTEMPTS} attempts)` })
    expect(judge(response(404), 1)).toEqual({ _tag: "failed", error: "HTTP 404" })
    expect(judge({ _tag: "Blocked", reason: "127.0.0.1 is not public" }, 1)._tag).toBe("failed")
    const { Webhook } = await import("standardwebhooks")
    const secret = `whsec_${Buffer.from("0123456789abcdef0123456789abcdef").toString("base64")}`
    const timestamp = Math.floor(Date.now() / 1000)
    const body = '{"a":1}'
    expect(new Webhook(secret).verify(body, {
      "webhook-id": "msg_1",
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signWebhook(secret, "msg_1", timestamp, body)
    })).toEqual({ a: 1 })
  })
})
