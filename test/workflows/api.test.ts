/**
 * The workflows API against an api process alone (no worker): definitions, graph rules, executions as
 * recorded (nobody advances them here, so a started execution stays RUNNING), cancellation, scoping.
 */
import { describe, expect, it } from "vitest"
import { request, withStack, type Service, type Stack, type TestProject } from "../support/stack.ts"

let stack: Stack
let api: Service
let project: TestProject

withStack("api", (context) => ({ stack, api, project } = context))

const secret = (method: string, path: string, body?: unknown, key = project.secretKey) => request(api.url, method, path, { key, body })

const fields = (response: { json: any }) =>
  (response.json.error.errors as Array<{ field: string; code: string }>).map((error) => error.field)

const newWorkflow = async (body: Record<string, unknown> = { name: "Onboarding", eventName: "signed_up" }) => {
  const created = await secret("POST", "/workflows", body)
  expect(created.status).toBe(201)
  return created.json as { id: string; steps: Array<{ id: string; type: string }> }
}
const addStep = async (workflowId: string, type: string, config: unknown, expected = 201) => {
  const step = await secret("POST", `/workflows/${workflowId}/steps`, { type, config })
  expect(step.status, JSON.stringify(step.json)).toBe(expected)
  return step.json
}
const connect = (workflowId: string, fromStepId: string, toStepId: string, extra: Record<string, unknown> = {}) =>
  secret("POST", `/workflows/${workflowId}/transitions`, { fromStepId, toStepId, ...extra })

describe("workflows API", () => {
  it("creates a workflow with triggerType EVENT, disabled, and a TRIGGER step; reads, lists, updates", async () => {
    const workflow = await secret("POST", "/workflows", { name: "Welcome", eventName: "signed_up" })
    expect(workflow.status).toBe(201)
    expect(workflow.json).toMatchObject({
      name: "Welcome",
      triggerType: "EVENT",
      triggerConfig: { eventName: "signed_up" },
      enabled: false,
      allowReentry: false,
      projectId: project.id
    })
    expect(workflow.json.steps).toEqual([expect.objectContaining({ type: "TRIGGER", config: { eventName: "signed_up" } })])
    expect(workflow.json.transitions).toEqual([])
    const list = await secret("GET", "/workflows")
    expect(list.json.map((w: { id: string }) => w.id)).toContain(workflow.json.id)
    const updated = await secret("PATCH", `/workflows/${workflow.json.id}`, {
      enabled: true,
      allowReentry: true,
      triggerConfig: { eventName: "registered" }
    })
    expect(updated.json).toMatchObject({ enabled: true, allowReentry: true, triggerConfig: { eventName: "registered" } })
    expect(updated.json.steps[0].config).toEqual({ eventName: "registered" })
    expect((await secret("PATCH", `/workflows/${workflow.json.id}`, { triggerType: "MANUAL" })).json.triggerType).toBe("MANUAL")
    // Bad input: the spec's envelope with field errors.
    const bad = await secret("POST", "/workflows", { name: "" })
    expect(bad.status).toBe(422)
    expect(bad.json).toMatchObject({ success: false, error: { code: "VALIDATION_ERROR", statusCode: 422 } })
    expect(fields(bad)).toEqual(["name"])
    expect((await secret("POST", "/workflows", { description: "no name" })).status).toBe(422)
    const noEvent = await newWorkflow({ name: "No event yet" })
    const enable = await secret("PATCH", `/workflows/${noEvent.id}`, { enabled: true })
    expect(enable.status).toBe(422)
    expect(fields(enable)).toEqual(["triggerConfig.eventName"])
  })

  it("validates every step config with field paths", async () => {
    const workflow = await newWorkflow()
    const cases: Array<[string, unknown, Array<string>]> = [
      ["SEND_EMAIL", {}, ["config.templateId"]],
      ["SEND_EMAIL", { templateId: "00000000-0000-7000-8000-000000000000", recipient: { type: "CUSTOM", customEmail: "nope" } }, [
        "config.recipient.customEmail"
      ]],
      ["DELAY", { amount: 0, unit: "hours" }, ["config.amount"]],
      ["DELAY", { amount: 366, unit: "days" }, ["config.amount"]],
      ["DELAY", { amount: 5, unit: "weeks" }, ["config.unit"]],
      ["WAIT_FOR_EVENT", { timeout: 60 }, ["config.eventName"]],
      ["WAIT_FOR_EVENT", { eventName: "paid", timeout: -1 }, ["config.timeout"]],
      ["CONDITION", {}, ["config.condition"]],
      ["CONDITION", { field: "data.plan", operator: "bogus", value: "pro" }, ["config.operator"]],
      ["CONDITION", { condition: { logic: "AND", groups: [{ filters: [{ field: "nope", operator: "equals", value: 1 }] }] } }, [
        "config.condition.groups[0].filters[0].field"
      ]],
      ["WEBHOOK", { url: "ftp://example.com" }, ["config.url"]],
      ["WEBHOOK", { url: "https://example.com", method: "TRACE" }, ["config.method"]],
      ["WEBHOOK", { url: "https://example.com", headers: { "x-a": "line\nbreak" } }, ["config.headers.x-a"]],
      ["WEBHOOK", { url: "https://example.com", body: "{{ unclosed" }, ["config.body"]],
      ["UPDATE_CONTACT", { updates: "plan" }, ["config.updates"]],
      ["UPDATE_CONTACT", { subscriptionAction: "maybe" }, ["config.subscriptionAction"]],
      ["EXIT", { reason: 5 }, ["config.reason"]],
      ["TRIGGER", {}, ["type"]],
      ["SLEEP", {}, ["type"]]
    ]
    for (const [type, config, expected] of cases) {
      const response = await secret("POST", `/workflows/${workflow.id}/steps`, { type, config })
      expect(response.status, `${type} ${JSON.stringify(config)}`).toBe(422)
      expect(fields(response), `${type} ${JSON.stringify(config)}`).toEqual(expected)
    }
    // A template that is not the project's is a 404, as the reference answers it (test/http/referenceGuards.test.ts).
    expect(
      (await secret("POST", `/workflows/${workflow.id}/steps`, {
        type: "SEND_EMAIL",
        config: { templateId: "00000000-0000-7000-8000-000000000000" }
      })).status
    ).toBe(404)
    // Valid ones, including the spellings and context fields in conditions.
    await addStep(workflow.id, "CONDITION", { field: "context.plan", operator: "equals", value: "pro" })
    await addStep(workflow.id, "CONDITION", {
      condition: { logic: "OR", groups: [{ filters: [{ field: "event.paid", operator: "triggered" }] }] }
    })
    const update = await addStep(workflow.id, "UPDATE_CONTACT", { data: { plan: "pro" }, subscribed: false })
    expect(update.config).toEqual({ updates: { plan: "pro" }, subscriptionAction: "unsubscribe" })
    const webhook = await addStep(workflow.id, "WEBHOOK", { url: "https://example.com/{{ id }}", method: "put" })
    expect(webhook.config.method).toBe("PUT")
    const patched = await secret("PATCH", `/workflows/${workflow.id}/steps/${webhook.id}`, { config: { url: "nope" } })
    expect(patched.status).toBe(422)
    expect((await secret("PATCH", `/workflows/${workflow.id}/steps/${webhook.id}`, { name: "Notify CRM" })).json.name).toBe("Notify CRM")
  })

  it("enforces the graph rules with 422s", async () => {
    const workflow = await newWorkflow()
    const trigger = workflow.steps[0]!.id
    const delay = (await addStep(workflow.id, "DELAY", { amount: 1, unit: "hours" })).id
    const condition = (await addStep(workflow.id, "CONDITION", { field: "subscribed", operator: "equals", value: true })).id
    const wait = (await addStep(workflow.id, "WAIT_FOR_EVENT", { eventName: "paid", timeout: 3600 })).id
    const exit = (await addStep(workflow.id, "EXIT", { reason: "done" })).id
    const other = await newWorkflow({ name: "Other" })
    const foreign = (await addStep(other.id, "EXIT", {})).id

    expect((await connect(workflow.id, trigger, delay)).status).toBe(201)
    const twice = await connect(workflow.id, trigger, condition)
    expect(twice.status).toBe(422)
    expect(fields(twice)).toEqual(["fromStepId"])
    expect((await connect(workflow.id, delay, condition)).status).toBe(201)
    const noBranch = await connect(workflow.id, condition, wait)
    expect(fields(noBranch)).toEqual(["branch"])
    expect((await connect(workflow.id, condition, wait, { branch: "yes" })).status).toBe(201)
    expect(fields(await connect(workflow.id, condition, exit, { branch: "yes" }))).toEqual(["branch"])
    expect((await connect(workflow.id, condition, exit, { branch: "no" })).status).toBe(201)
    expect(fields(await connect(workflow.id, wait, exit))).toEqual(["waitOutcome"])
    expect((await connect(workflow.id, wait, exit, { waitOutcome: "EVENT" })).status).toBe(201)
    // A cycle (wait → delay → condition → wait), a self-loop, out of EXIT, into TRIGGER, across workflows.
    expect(fields(await connect(workflow.id, wait, delay, { waitOutcome: "TIMEOUT" }))).toEqual(["toStepId"])
    expect(fields(await connect(workflow.id, exit, exit))).toEqual(["toStepId"])
    expect(fields(await connect(workflow.id, exit, delay))).toEqual(["fromStepId"])
    expect(fields(await connect(workflow.id, wait, trigger, { waitOutcome: "TIMEOUT" }))).toEqual(["toStepId"])
    expect(fields(await connect(workflow.id, wait, foreign, { waitOutcome: "TIMEOUT" }))).toEqual(["toStepId"])
    expect((await connect(workflow.id, "not-a-step", exit)).status).toBe(422)

    const detail = (await secret("GET", `/workflows/${workflow.id}`)).json
    expect(detail.transitions).toHaveLength(5)

    // The TRIGGER step stays; a transition can be removed; unknown ones are 404.
    expect((await secret("DELETE", `/workflows/${workflow.id}/steps/${trigger}`)).status).toBe(422)
    const last = detail.transitions.at(-1)
    expect((await secret("DELETE", `/workflows/${workflow.id}/transitions/${last.id}`)).status).toBe(200)
    expect((await secret("DELETE", `/workflows/${workflow.id}/transitions/${last.id}`)).status).toBe(404)
  })

  it("deletes a step with splice=true reconnecting its neighbours, and without splice dropping its transitions", async () => {
    const workflow = await newWorkflow()
    const trigger = workflow.steps[0]!.id
    const a = (await addStep(workflow.id, "DELAY", { amount: 1, unit: "minutes" })).id
    const b = (await addStep(workflow.id, "DELAY", { amount: 2, unit: "minutes" })).id
    const c = (await addStep(workflow.id, "EXIT", {})).id
    await connect(workflow.id, trigger, a)
    await connect(workflow.id, a, b)
    await connect(workflow.id, b, c)
    expect((await secret("DELETE", `/workflows/${workflow.id}/steps/${a}?splice=true`)).status).toBe(200)
    let detail = (await secret("GET", `/workflows/${workflow.id}`)).json
    expect(detail.steps.map((s: { id: string }) => s.id)).not.toContain(a)
    expect(detail.transitions.map((t: { fromStepId: string; toStepId: string }) => [t.fromStepId, t.toStepId]).sort())
      .toEqual([[trigger, b], [b, c]].sort())
    // A CONDITION with both branches cannot be spliced; without splice its transitions go with it.
    const condition = (await addStep(workflow.id, "CONDITION", { field: "subscribed", operator: "equals", value: true })).id
    const d = (await addStep(workflow.id, "EXIT", {})).id
    await secret(
      "DELETE",
      `/workflows/${workflow.id}/transitions/${detail.transitions.find((t: { fromStepId: string }) => t.fromStepId === b).id}`
    )
    await connect(workflow.id, b, condition)
    await connect(workflow.id, condition, c, { branch: "yes" })
    await connect(workflow.id, condition, d, { branch: "no" })
    const refused = await secret("DELETE", `/workflows/${workflow.id}/steps/${condition}?splice=true`)
    expect(refused.status).toBe(422)
    expect((await secret("DELETE", `/workflows/${workflow.id}/steps/${condition}`)).status).toBe(200)
    detail = (await secret("GET", `/workflows/${workflow.id}`)).json
    expect(detail.transitions.map((t: { fromStepId: string; toStepId: string }) => [t.fromStepId, t.toStepId])).toEqual([[trigger, b]])
    expect((await secret("DELETE", `/workflows/${workflow.id}/steps/${condition}`)).status).toBe(404)
  })

  it("records executions (reentry rules), lists them by status, cancels one and all; 409 for structural edits meanwhile", async () => {
    const workflow = await newWorkflow({ name: "Manual", eventName: "x" })
    const exit = (await addStep(workflow.id, "EXIT", {})).id
    // Executions start only while the workflow is enabled (test/http/referenceGuards.test.ts).
    expect((await secret("PATCH", `/workflows/${workflow.id}`, { enabled: true })).status).toBe(200)
    const ada = await secret("POST", "/contacts", { email: "ada@wf.test" })
    const bob = await secret("POST", "/contacts", { email: "bob@wf.test" })
    const started = await secret("POST", `/workflows/${workflow.id}/executions`, { contactId: ada.json.id, context: { plan: "pro" } })
    expect(started.status).toBe(201)
    expect(started.json).toMatchObject({ status: "RUNNING", contactId: ada.json.id, context: { plan: "pro" }, workflowId: workflow.id })
    // One active per contact.
    const again = await secret("POST", `/workflows/${workflow.id}/executions`, { contactId: ada.json.id })
    expect(again.status).toBe(409)
    expect(again.json.error.code).toBe("EXECUTION_ACTIVE")
    // A typed domain error (ExecutionActive) answers the envelope byte for byte as the handler's ApiError did.
    expect(again.headers.get("content-type")).toMatch(/^application\/json/)
    expect(again.text).toBe(JSON.stringify({
      success: false,
      error: {
        code: "EXECUTION_ACTIVE",
        message: "The contact already has a running or waiting execution of this workflow",
        statusCode: 409,
        requestId: again.headers.get("x-request-id")
      },
      timestamp: again.json.timestamp
    }))
    expect((await secret("POST", `/workflows/${workflow.id}/executions`, { contactId: "00000000-0000-7000-8000-000000000000" })).status)
      .toBe(422)
    expect((await secret("POST", `/workflows/${workflow.id}/executions`, {})).status).toBe(422)

    // Structural edits and deletion are refused while it is active; config edits are not.
    const conflict = await connect(workflow.id, workflow.steps[0]!.id, exit)
    expect(conflict.status).toBe(409)
    expect(conflict.json).toMatchObject({ success: false, error: { code: "WORKFLOW_HAS_ACTIVE_EXECUTIONS", statusCode: 409 } })
    expect((await secret("POST", `/workflows/${workflow.id}/steps`, { type: "EXIT", config: {} })).status).toBe(409)
    expect((await secret("DELETE", `/workflows/${workflow.id}/steps/${exit}`)).status).toBe(409)
    expect((await secret("DELETE", `/workflows/${workflow.id}`)).status).toBe(409)
    expect((await secret("PATCH", `/workflows/${workflow.id}/steps/${exit}`, { config: { reason: "ok" } })).status).toBe(200)

    const second = await secret("POST", `/workflows/${workflow.id}/executions`, { contactId: bob.json.id })
    const running = await secret("GET", `/workflows/${workflow.id}/executions?status=running`)
    expect(running.json).toMatchObject({ total: 2, page: 1, pageSize: 20 })
    // Listed with each contact's email, for the dashboard to show people rather than ids.
    expect(running.json.data.map((execution: { contactEmail: string }) => execution.contactEmail).sort()).toEqual([
      "ada@wf.test",
      "bob@wf.test"
    ])
    expect((await secret("GET", `/workflows/${workflow.id}/executions?status=bogus`)).status).toBe(422)
    const one = await secret("GET", `/workflows/${workflow.id}/executions/${started.json.id}`)
    expect(one.json).toMatchObject({ id: started.json.id, status: "RUNNING", steps: [], contactEmail: "ada@wf.test" })

    const cancelled = await secret("DELETE", `/workflows/${workflow.id}/executions/${started.json.id}`)
    expect(cancelled.json.status).toBe("CANCELLED")
    const notActive = await secret("DELETE", `/workflows/${workflow.id}/executions/${started.json.id}`)
    expect(notActive.status).toBe(409)
    expect(notActive.json.error).toEqual({
      code: "EXECUTION_NOT_ACTIVE",
      message: "Only RUNNING or WAITING executions can be cancelled",
      statusCode: 409,
      requestId: notActive.headers.get("x-request-id")
    })
    // Without allowReentry, a contact who went through it once does not again.
    const reentry = await secret("POST", `/workflows/${workflow.id}/executions`, { contactId: ada.json.id })
    expect(reentry.status).toBe(409)
    expect(reentry.json.error.code).toBe("REENTRY_NOT_ALLOWED")
    await secret("PATCH", `/workflows/${workflow.id}`, { allowReentry: true })
    expect((await secret("POST", `/workflows/${workflow.id}/executions`, { contactId: ada.json.id })).status).toBe(201)

    expect((await secret("POST", `/workflows/${workflow.id}/executions/cancel-all`)).json).toEqual({ cancelled: 2 })
    expect((await secret("GET", `/workflows/${workflow.id}/executions?status=CANCELLED`)).json.total).toBe(3)
    expect((await secret("GET", `/workflows/${workflow.id}/executions/${second.json.id}`)).json.status).toBe("CANCELLED")
    expect((await connect(workflow.id, workflow.steps[0]!.id, exit)).status).toBe(201)
    expect((await secret("DELETE", `/workflows/${workflow.id}`)).status).toBe(200)
    expect((await secret("GET", `/workflows/${workflow.id}`)).status).toBe(404)
  })

  it("scopes everything to the project (404 elsewhere), and reports usage and fields", async () => {
    const workflow = await newWorkflow({ name: "Scoped", eventName: "order_placed" })
    const other = await stack.createProject("Other project")
    const elsewhere = (method: string, path: string, body?: unknown) => secret(method, path, body, other.secretKey)
    expect((await elsewhere("GET", `/workflows/${workflow.id}`)).status).toBe(404)
    expect((await elsewhere("PATCH", `/workflows/${workflow.id}`, { name: "x" })).status).toBe(404)
    expect((await elsewhere("POST", `/workflows/${workflow.id}/steps`, { type: "EXIT", config: {} })).status).toBe(404)
    expect((await elsewhere("GET", `/workflows/${workflow.id}/executions`)).status).toBe(404)
    expect((await elsewhere("DELETE", `/workflows/${workflow.id}`)).status).toBe(404)
    expect((await secret("GET", "/workflows/not-a-uuid")).status).toBe(404)
    expect((await request(api.url, "GET", "/workflows", { key: project.publicKey })).status).toBe(401)

    await addStep(workflow.id, "CONDITION", { field: "data.plan", operator: "equals", value: "pro" })
    await addStep(workflow.id, "WAIT_FOR_EVENT", { eventName: "order_shipped" })
    await secret("POST", "/contacts", { email: "fields@wf.test", data: { plan: "pro" } })
    await request(api.url, "POST", "/v1/track", {
      key: project.publicKey,
      body: { email: "fields@wf.test", event: "order_placed", data: { total: 12 } }
    })

    const byEvent = await secret("GET", "/events/order_placed/usage")
    expect(byEvent.json.workflows).toEqual([{ id: workflow.id, name: "Scoped" }])
    expect((await secret("GET", "/events/order_shipped/usage")).json.workflows).toEqual([{ id: workflow.id, name: "Scoped" }])
    // (the UPDATE_CONTACT step of an earlier test writes data.plan, so that workflow is listed too)
    expect((await secret("GET", "/contacts/fields/data.plan/usage")).json.workflows).toContainEqual({ id: workflow.id, name: "Scoped" })

    const available = await secret("GET", "/workflows/fields")
    expect(available.status).toBe(200)
    expect(available.json.contactFields).toEqual(
      expect.arrayContaining([{ field: "email", type: "string" }, { field: "data.plan", type: "string" }])
    )
    // Events reach the table through the worker; none runs here, so only the shape is checked.
    expect(Array.isArray(available.json.events)).toBe(true)
    const secretKey = await secret("GET", "/workflows/webhook-secret")
    expect(secretKey.json.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/)
  })
})

describe("conditions checked like segments and campaigns", () => {
  it("refuses a CONDITION on a segment of another project or of none, in either config form (422 unknown_segment)", async () => {
    const workflow = await newWorkflow({ name: "Segment checks", eventName: "x" })
    const own = await secret("POST", "/segments", {
      name: "Mine",
      condition: { logic: "AND", groups: [{ filters: [{ field: "email", operator: "contains", value: "@" }] }] }
    })
    expect(own.status).toBeLessThan(300)
    const { stdout } = await stack.cli("project", "create", "--name", "Other")
    const other = JSON.parse(stdout) as TestProject
    const theirs = await request(api.url, "POST", "/segments", {
      key: other.secretKey,
      body: { name: "Theirs", condition: { logic: "AND", groups: [{ filters: [{ field: "email", operator: "contains", value: "@" }] }] } }
    })
    const missing = "018f0000-0000-7000-8000-000000000000"
    for (const id of [theirs.json.id, missing]) {
      const single = await addStep(workflow.id, "CONDITION", { field: `segment.${id}`, operator: "memberOfSegment" }, 422)
      expect(single.error.errors[0]).toMatchObject({ field: "config", code: "unknown_segment" })
      const tree = await addStep(workflow.id, "CONDITION", {
        condition: { logic: "OR", groups: [{ filters: [{ field: `segment.${id}`, operator: "memberOfSegment" }] }] }
      }, 422)
      expect(tree.error.errors[0]).toMatchObject({ field: "config.condition", code: "unknown_segment" })
    }
    await addStep(workflow.id, "CONDITION", { field: `segment.${own.json.id}`, operator: "memberOfSegment" }, 201)
  })
})
