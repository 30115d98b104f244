/**
 * The workflow interpreter without I/O: step configs (decoded by the one step schema) × inputs →
 * decisions, and how timers, awaited events, webhook outcomes and manual starts resume an execution.
 */
import { describe, expect, it } from "@effect/vitest"
import type { ContactFacts } from "../../src/domain/conditions/evaluate.ts"
import {
  decideResume,
  decideStep,
  type ExecutionView,
  factsRead,
  type ResumeInput,
  runnableStep,
  type StepDecision
} from "../../src/workflows/decider.ts"
import type { StepType } from "../../src/workflows/graph.ts"
import { checkStepConfig } from "../../src/workflows/stepConfig.ts"

const NOW = Date.parse("2026-03-01T12:00:00.000Z")
const at = (ms: number) => new Date(NOW + ms).toISOString()
const TEMPLATE = "0190a5a4-0000-7000-8000-000000000001"

const step = (type: StepType, config: unknown, id = "s1") => runnableStep({ id, type, name: type, config })

const contact = (data: Record<string, unknown> = {}, events: Record<string, number> = {}): ContactFacts => ({
  id: "c1",
  email: "ada@example.org",
  subscribed: true,
  createdAt: NOW - 86_400_000,
  updatedAt: NOW - 3_600_000,
  data,
  events: new Map(Object.entries(events).map(([name, count]) => [name, { count, firstAt: NOW - 60_000, lastAt: NOW - 1_000 }])),
  memberships: new Set()
})

describe("decideStep", () => {
  const table: ReadonlyArray<{
    readonly name: string
    readonly type: StepType
    readonly config: unknown
    readonly context?: Record<string, unknown>
    readonly contact?: ContactFacts
    readonly decision: StepDecision
  }> = [
    {
      name: "SEND_EMAIL to the contact",
      type: "SEND_EMAIL",
      config: { templateId: TEMPLATE },
      decision: { _tag: "SendEmail", templateId: TEMPLATE, customRecipient: null }
    },
    {
      name: "SEND_EMAIL to a custom address, normalised",
      type: "SEND_EMAIL",
      config: { templateId: TEMPLATE, recipient: { type: "CUSTOM", customEmail: " Ops@Example.ORG " } },
      decision: { _tag: "SendEmail", templateId: TEMPLATE, customRecipient: "ops@example.org" }
    },
    {
      name: "DELAY in hours",
      type: "DELAY",
      config: { amount: 2, unit: "hours" },
      decision: { _tag: "Wait", waitEvent: null, dueAt: at(7_200_000), output: { dueAt: at(7_200_000) } }
    },
    {
      name: "DELAY in minutes, fractional",
      type: "DELAY",
      config: { amount: 1.5, unit: "minutes" },
      decision: { _tag: "Wait", waitEvent: null, dueAt: at(90_000), output: { dueAt: at(90_000) } }
    },
    {
      name: "DELAY with an unknown unit",
      type: "DELAY",
      config: { amount: 2, unit: "weeks" },
      decision: { _tag: "Fail", error: expect.stringContaining("the step's config is not valid") }
    },
    {
      name: "DELAY with amount as a string",
      type: "DELAY",
      config: { amount: "2", unit: "days" },
      decision: { _tag: "Fail", error: expect.stringContaining("the step's config is not valid") }
    },
    {
      name: "WAIT_FOR_EVENT without a timeout, engagement name canonical",
      type: "WAIT_FOR_EVENT",
      config: { eventName: "email.opened" },
      decision: { _tag: "Wait", waitEvent: "email.open", dueAt: null, output: { eventName: "email.open", timeoutAt: null } }
    },
    {
      name: "WAIT_FOR_EVENT with a timeout in seconds",
      type: "WAIT_FOR_EVENT",
      config: { eventName: "paid", timeout: 30 },
      decision: { _tag: "Wait", waitEvent: "paid", dueAt: at(30_000), output: { eventName: "paid", timeoutAt: at(30_000) } }
    },
    {
      name: "CONDITION on contact data: yes",
      type: "CONDITION",
      config: { field: "data.plan", operator: "equals", value: "pro" },
      contact: contact({ plan: "pro" }),
      decision: { _tag: "Continue", output: { branch: "yes" }, choice: { branch: "yes" } }
    },
    {
      name: "CONDITION on contact data: no",
      type: "CONDITION",
      config: { field: "data.plan", operator: "equals", value: "pro" },
      contact: contact({ plan: "free" }),
      decision: { _tag: "Continue", output: { branch: "no" }, choice: { branch: "no" } }
    },
    {
      name: "CONDITION on the execution context",
      type: "CONDITION",
      config: { field: "context.amount", operator: "greaterThan", value: 100 },
      context: { amount: 250 },
      contact: contact(),
      decision: { _tag: "Continue", output: { branch: "yes" }, choice: { branch: "yes" } }
    },
    {
      name: "CONDITION, one filter, on a count in a window: two visits in the last hour",
      type: "CONDITION",
      config: { field: "event.visit", operator: "triggeredAtLeast", value: 2, within: 1, unit: "hours" },
      contact: { ...contact({}, { visit: 3 }), eventTimes: new Map([["visit", [NOW - 600_000, NOW - 1_200_000, NOW - 7_200_000]]]) },
      decision: { _tag: "Continue", output: { branch: "yes" }, choice: { branch: "yes" } }
    },
    {
      name: "CONDITION, one filter, on a count in a window: one visit in the last hour, two before it",
      type: "CONDITION",
      config: { field: "event.visit", operator: "triggeredAtLeast", value: 2, within: 1, unit: "hours" },
      contact: { ...contact({}, { visit: 3 }), eventTimes: new Map([["visit", [NOW - 600_000, NOW - 7_200_000, NOW - 10_800_000]]]) },
      decision: { _tag: "Continue", output: { branch: "no" }, choice: { branch: "no" } }
    },
    {
      name: "CONDITION tree on an event count",
      type: "CONDITION",
      config: { condition: { logic: "AND", groups: [{ filters: [{ field: "event.login", operator: "triggeredAtLeast", value: 3 }] }] } },
      contact: contact({}, { login: 5 }),
      decision: { _tag: "Continue", output: { branch: "yes" }, choice: { branch: "yes" } }
    },
    {
      name: "CONDITION for a contact gone",
      type: "CONDITION",
      config: { field: "email", operator: "contains", value: "@" },
      decision: { _tag: "Fail", error: "the contact no longer exists" }
    },
    { name: "WEBHOOK", type: "WEBHOOK", config: { url: "https://hooks.example.org/x", method: "POST" }, decision: { _tag: "CallWebhook" } },
    {
      name: "UPDATE_CONTACT with updates and unsubscribe",
      type: "UPDATE_CONTACT",
      config: { updates: { plan: "pro" }, subscriptionAction: "unsubscribe" },
      decision: { _tag: "UpdateContact", updates: { plan: "pro" }, subscribed: false }
    },
    {
      name: "UPDATE_CONTACT, subscription left alone",
      type: "UPDATE_CONTACT",
      config: { updates: {}, subscriptionAction: "none" },
      decision: { _tag: "UpdateContact", updates: {}, subscribed: undefined }
    },
    {
      name: "UPDATE_CONTACT stored before normalisation",
      type: "UPDATE_CONTACT",
      config: { data: { vip: true }, subscribed: true },
      decision: { _tag: "UpdateContact", updates: { vip: true }, subscribed: true }
    },
    { name: "EXIT with a reason", type: "EXIT", config: { reason: "done" }, decision: { _tag: "Exit", reason: "done" } },
    { name: "EXIT without one", type: "EXIT", config: {}, decision: { _tag: "Exit", reason: null } },
    {
      name: "back into the TRIGGER",
      type: "TRIGGER",
      config: {},
      decision: { _tag: "Fail", error: "a transition leads back into the trigger" }
    },
    {
      name: "a config that is not an object",
      type: "EXIT",
      config: "nope",
      decision: { _tag: "Fail", error: expect.stringContaining("the step's config is not valid") }
    }
  ]

  for (const row of table) {
    it(row.name, () => {
      const decision = decideStep(step(row.type, row.config), { now: NOW, context: row.context ?? {}, contact: row.contact })
      expect(decision).toEqual(row.decision)
    })
  }

  it("reads contact facts only for CONDITION steps, with the events the condition reads", () => {
    expect(factsRead(step("DELAY", { amount: 1, unit: "days" }))).toBeUndefined()
    expect([...factsRead(step("CONDITION", { field: "event.login", operator: "triggeredAtLeast", value: 1 }))!.events]).toEqual(["login"])
    // A count in a window: the occurrences are read only as far back as the window reaches.
    const windowed = factsRead(step("CONDITION", {
      condition: {
        logic: "AND",
        groups: [{ filters: [{ field: "event.visit", operator: "triggeredAtLeast", value: 2, within: 3, unit: "hours" }] }]
      }
    }))!
    expect([...windowed.events]).toEqual(["visit"])
    expect([...windowed.windows]).toEqual([["visit", 3 * 3_600_000]])
  })

  it("accepts what the api's validation stores, for every step type", () => {
    const accepted: ReadonlyArray<[StepType, unknown]> = [
      ["SEND_EMAIL", { templateId: TEMPLATE }],
      ["DELAY", { amount: 3, unit: "days" }],
      ["WAIT_FOR_EVENT", { eventName: "paid", timeout: 60 }],
      ["CONDITION", { field: "data.plan", operator: "equals", value: "pro" }],
      ["WEBHOOK", { url: "https://hooks.example.org/{{ id }}", method: "patch", headers: { "X-Token": "t" }, body: { a: 1 } }],
      ["UPDATE_CONTACT", { data: { plan: "pro" }, subscribed: false }],
      ["EXIT", { reason: "bye" }]
    ]
    for (const [type, config] of accepted) {
      const checked = checkStepConfig(type, config)
      expect(checked.problems, type).toEqual([])
      expect(step(type, checked.config).definition._tag, type).toBe("Success")
    }
  })
})

describe("decideResume", () => {
  const waiting = (overrides: Partial<ExecutionView> = {}): ExecutionView => ({
    status: "WAITING",
    timerId: "t1",
    waitEvent: null,
    ...overrides
  })
  const delay = step("DELAY", { amount: 1, unit: "days" }, "delay")
  const waitFor = step("WAIT_FOR_EVENT", { eventName: "paid", timeout: 60 }, "wait")
  const send = step("SEND_EMAIL", { templateId: TEMPLATE }, "send")
  const hook = step("WEBHOOK", { url: "https://hooks.example.org" }, "hook")
  const trigger = step("TRIGGER", {}, "trigger")
  const timer: ResumeInput = { kind: "timer", timerId: "t1", dueAt: at(0) }

  const table: ReadonlyArray<[string, ExecutionView, ReturnType<typeof step> | undefined, ResumeInput, ReturnType<typeof decideResume>]> = [
    ["a due DELAY goes on", waiting(), delay, timer, { _tag: "Resume", output: { dueAt: at(0) }, choice: {} }],
    ["a WAIT_FOR_EVENT timeout takes the TIMEOUT way", waiting({ waitEvent: "paid" }), waitFor, timer, {
      _tag: "Resume",
      output: { outcome: "TIMEOUT" },
      choice: { waitOutcome: "TIMEOUT" }
    }],
    ["a send held at the cap is retried", waiting(), send, timer, { _tag: "Resume", choice: {}, retry: true }],
    ["a timer that is not the current one is stale", waiting({ timerId: "t2" }), delay, timer, { _tag: "Ignore" }],
    ["a timer for a cancelled execution is stale", waiting({ status: "CANCELLED", timerId: null }), delay, timer, { _tag: "Ignore" }],
    ["a timer whose step was deleted fails the execution", waiting(), undefined, timer, {
      _tag: "Fail",
      error: "the step it waited on no longer exists"
    }],
    [
      "the awaited event takes the EVENT way with its data",
      waiting({ waitEvent: "paid" }),
      waitFor,
      { kind: "event", id: "e1", name: "paid", data: { amount: 5 } },
      { _tag: "Resume", output: { outcome: "EVENT", eventId: "e1" }, choice: { waitOutcome: "EVENT" }, context: { amount: 5 } }
    ],
    ["another event does nothing", waiting({ waitEvent: "paid" }), waitFor, { kind: "event", id: "e1", name: "refunded", data: {} }, {
      _tag: "Ignore"
    }],
    ["a webhook that succeeded goes on", waiting({ status: "RUNNING", timerId: null }), hook, {
      kind: "webhookDone",
      stepId: "hook",
      ok: true
    }, { _tag: "Resume", choice: {} }],
    [
      "a webhook that failed fails the execution",
      waiting({ status: "RUNNING", timerId: null }),
      hook,
      { kind: "webhookDone", stepId: "hook", ok: false, error: "HTTP 500" },
      { _tag: "Fail", error: "WEBHOOK step failed: HTTP 500" }
    ],
    ["a late webhook outcome after a cancel does nothing", waiting({ status: "CANCELLED", timerId: null }), hook, {
      kind: "webhookDone",
      stepId: "hook",
      ok: true
    }, { _tag: "Ignore" }],
    ["a manual start at the TRIGGER claims it once", waiting({ status: "RUNNING", timerId: null }), trigger, { kind: "advance" }, {
      _tag: "Resume",
      choice: {},
      claim: { manual: true }
    }],
    ["a manual start already past the TRIGGER does nothing", waiting({ status: "RUNNING", timerId: null }), delay, { kind: "advance" }, {
      _tag: "Ignore"
    }]
  ]

  for (const [name, execution, current, input, expected] of table) {
    it(name, () => {
      expect(decideResume(execution, current, input)).toEqual(expected)
    })
  }
})
