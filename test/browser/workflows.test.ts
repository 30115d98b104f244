/// <reference lib="dom" />
/**
 * The workflow editor in a real Chromium against a real stack (api and worker): a workflow built step by
 * step in the editor's panel (TRIGGER → DELAY → CONDITION → SEND_EMAIL / EXIT), enabled, triggered by an
 * event tracked through /v1/track with the public key, and its execution followed to the end; the other
 * step types' forms, deleting a step with splice, and cancelling a waiting execution. Screenshots: see
 * support/browser.ts.
 */
import type { Page } from "playwright-core"
import { beforeAll, describe, expect, it } from "vitest"
import { heading, PHONE, screenshot, scrollsSideways, useBrowser } from "./support/browser.ts"

const env = useBrowser()
const projectPath = (path = "") => `/p/${env.project.id}${path}`

beforeAll(async () => {
  // SEND_EMAIL needs a template, and a template a verified sender domain.
  const domain = await env.call("POST", "/domains", { domain: "flows.acme.test" })
  const dkim = domain.records.find((record: { purpose: string }) => record.purpose === "DKIM")
  env.dns.addTxt(dkim.name, dkim.value)
  expect((await env.call("GET", `/domains/${domain.id}/verify`)).status).toBe("VERIFIED")
  await env.call("POST", "/templates", {
    name: "Welcome",
    subject: "Welcome",
    body: "<p>Hello</p>",
    from: "hello@flows.acme.test",
    type: "MARKETING"
  })
  await env.call("POST", "/contacts", { email: "pro@example.com", subscribed: true, data: { plan: "pro" } })
}, 60_000)

const addForm = (page: Page) => page.getByRole("form", { name: "Add a step" })

/** Adds a step through the panel's form; `fill` sets its config fields; `after` names the outlet to hang it on. */
const addStep = async (page: Page, type: string, name: string, fill: () => Promise<void>, after?: string) => {
  const form = addForm(page)
  await form.getByLabel("Step type").selectOption({ label: type })
  await form.getByLabel("Name (optional)").fill(name)
  await fill()
  if (after !== undefined) await form.getByLabel("After").selectOption({ label: after })
  await form.getByRole("button", { name: "Add step" }).click()
  await form.getByText(`Added ${name}.`).waitFor()
  await page.getByTestId(`step-${name}`).waitFor()
}

const workflowNamed = async (name: string) =>
  (await env.call("GET", "/workflows") as Array<{ id: string; name: string }>).find((workflow) => workflow.name === name)!

describe("the workflow editor", () => {
  it("builds TRIGGER → DELAY → CONDITION → SEND_EMAIL / EXIT, enables it, and a tracked event's execution runs through it", async () => {
    const page = await env.page()
    await page.goto(projectPath("/workflows"))
    await heading(page, "Workflows")
    await page.getByText("No workflows yet").waitFor()
    const create = page.getByRole("form", { name: "New workflow" })
    await create.getByLabel("Name").fill("Onboarding")
    await create.getByLabel("Trigger event").fill("trial-started")
    await create.getByRole("button", { name: "Create workflow" }).click()
    await heading(page, "Onboarding")
    await page.getByText("When trial-started is tracked").waitFor()

    const form = addForm(page)
    // 0.05 minutes: a 3-second delay, so the test sees the execution wait and then move on.
    await addStep(page, "Delay", "Short pause", async () => {
      await form.getByLabel("Wait for").fill("0.05")
      await form.getByLabel("Unit", { exact: true }).selectOption("minutes")
    })
    await addStep(page, "Condition", "Is pro?", async () => {
      // The shared condition builder: custom data "plan" is "pro".
      await form.getByLabel("Field type").selectOption("data")
      await form.getByLabel("Data key").fill("plan")
      await form.getByLabel("Operator").selectOption("equals")
      await form.getByLabel("Value", { exact: true }).fill("pro")
    })
    // After a CONDITION the panel offers its yes outlet first.
    expect(await form.getByLabel("After").locator("option:checked").innerText()).toBe("Is pro? (yes)")
    await addStep(
      page,
      "Send email",
      "Send welcome",
      () => form.getByLabel("Template").selectOption({ label: "Welcome" }).then(() => undefined)
    )
    await addStep(page, "Exit", "Not pro", () => form.getByLabel("Reason (optional)").fill("free plan"), "Is pro? (no)")

    // The graph: five steps, four arrows, the condition's two labelled.
    const graph = page.getByTestId("workflow-graph")
    await expect.poll(() => graph.locator(".react-flow__edge").count()).toBe(4)
    expect(await graph.locator(".react-flow__node").count()).toBe(5)
    expect((await graph.locator(".react-flow__edge-text").allTextContents()).sort()).toEqual(["no", "yes"])

    // What the API now holds.
    const stored = await env.call("GET", `/workflows/${(await workflowNamed("Onboarding")).id}`)
    const byName = (name: string) => stored.steps.find((step: { name: string }) => step.name === name)
    expect(byName("Short pause").config).toEqual({ amount: 0.05, unit: "minutes" })
    expect(byName("Is pro?").config).toEqual({
      condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] }
    })
    const links = stored.transitions.map((
      transition: { fromStepId: string; toStepId: string; branch: string | null }
    ) => [
      stored.steps.find((step: { id: string }) => step.id === transition.fromStepId).name,
      transition.branch,
      stored.steps.find((step: { id: string }) => step.id === transition.toStepId).name
    ])
    expect(links.sort()).toEqual([
      ["Is pro?", "no", "Not pro"],
      ["Is pro?", "yes", "Send welcome"],
      ["Short pause", null, "Is pro?"],
      ["Trigger", null, "Short pause"]
    ].sort())

    await page.getByRole("button", { name: "Enable" }).click()
    await page.getByRole("button", { name: "Disable" }).waitFor()
    await page.getByText("No executions yet").waitFor()

    await env.call(
      "POST",
      "/v1/track",
      { event: "trial-started", email: "pro@example.com", data: { source: "ads" } },
      env.project.publicKey
    )
    const executions = page.getByRole("table", { name: "Executions" })
    // The execution appears (waiting on the delay or already past it) and ends completed.
    await executions.locator("tbody tr").first().waitFor({ timeout: 15_000 })
    await executions.getByText("completed").waitFor({ timeout: 20_000 })
    await executions.getByRole("button", { name: "History" }).click()
    const history = page.getByRole("table", { name: "Step history" })
    await history.locator("tbody tr").nth(3).waitFor()
    const rows = await history.locator("tbody tr").allInnerTexts()
    expect(rows.map((row) => row.split(/\s+/).slice(0, 2).join(" "))).toEqual(["Trigger Trigger", "Short pause", "Is pro?", "Send welcome"])
    for (const row of rows) expect(row).toContain("completed")
    expect(new URL(page.url()).searchParams.get("execution")).toMatch(/^[\w-]{36}$/)
    // The whole page for docs/dashboard.md: the condition open in the panel (the shared builder), the execution's
    // step marked in the graph, and its history.
    await page.getByLabel("Step", { exact: true }).selectOption({ label: "Condition: Is pro?" })
    await page.getByRole("form", { name: "Edit the step" }).getByLabel("Data key").waitFor()
    await page.setViewportSize({ width: 1280, height: 1880 })
    await page.evaluate(() => window.scrollTo(0, 0))
    await screenshot(page, "workflow-1280")

    const phone = await env.page({ viewport: PHONE })
    await phone.goto(page.url())
    await heading(phone, "Onboarding")
    await phone.getByTestId("step-Send welcome").waitFor()
    await phone.getByRole("table", { name: "Step history" }).waitFor()
    expect(await scrollsSideways(phone)).toBe(false)
    await screenshot(phone, "workflow-390")
  }, 60_000)

  it("offers every step type's form, connects event/timeout outlets, deletes with splice and cancels a waiting execution", async () => {
    const workflow = await env.call("POST", "/workflows", { name: "Trial follow-up", eventName: "trial-ended" })
    const page = await env.page()
    await page.goto(projectPath(`/workflows/${workflow.id}`))
    await heading(page, "Trial follow-up")
    const form = addForm(page)
    // Bad input: the API's 422 shows with its request id, a condition's at the filter it names.
    env.allowConsoleErrors(page, /status of 422/)
    // (A missing template or URL the browser itself refuses: these are `required` inputs.)
    await form.getByLabel("Step type").selectOption({ label: "Webhook" })
    await form.getByLabel("URL").fill("ftp://files.example.com/drop")
    await form.getByRole("button", { name: "Add step" }).click()
    const failure = form.getByRole("alert")
    await failure.waitFor()
    expect(await failure.innerText()).toContain("422")
    expect(await form.getByTestId("field-errors").innerText()).toBe("config.url: url must be an http(s) URL")
    expect(await failure.getByTestId("request-id").innerText()).toMatch(/^req_[\w-]+$/)
    await form.getByLabel("Step type").selectOption({ label: "Condition" })
    await form.getByLabel("Operator").selectOption("greaterThan")
    await form.getByRole("button", { name: "Add step" }).click()
    await form.getByTestId("condition-error").waitFor()
    expect((await env.call("GET", `/workflows/${workflow.id}`)).steps).toHaveLength(1)

    await addStep(page, "Wait for event", "Wait for payment", async () => {
      await form.getByLabel("Event name").fill("paid")
      await form.getByLabel("Timeout (optional)").fill("2")
      await form.getByLabel("Timeout unit").selectOption({ label: "hours" })
    })
    // After a WAIT_FOR_EVENT the panel offers its event outlet first.
    await addStep(page, "Webhook", "Tell CRM", async () => {
      await form.getByLabel("URL").fill("https://crm.example.com/hooks/paid")
      await form.getByLabel("Method").selectOption("PUT")
    })
    await addStep(page, "Update contact", "Mark paid", async () => {
      await form.getByRole("button", { name: "Add field" }).click()
      await form.getByLabel("Field 1 name").fill("paid")
      await form.getByLabel("Field 1 value").fill("1")
      await form.getByLabel("Subscription").selectOption("subscribe")
    })
    await addStep(page, "Exit", "Gave up", async () => undefined, "Wait for payment (timeout)")

    const stored = async () => env.call("GET", `/workflows/${workflow.id}`)
    const step = (found: { steps: Array<{ name: string; id: string; config: unknown }> }, name: string) =>
      found.steps.find((candidate) => candidate.name === name)!
    let current = await stored()
    expect(step(current, "Wait for payment").config).toEqual({ eventName: "paid", timeout: 7200 })
    expect(step(current, "Tell CRM").config).toEqual({ url: "https://crm.example.com/hooks/paid", method: "PUT" })
    expect(step(current, "Mark paid").config).toMatchObject({ updates: { paid: 1 }, subscriptionAction: "subscribe" })
    expect(current.transitions.map((transition: { waitOutcome: string | null }) => transition.waitOutcome).sort()).toEqual(
      ["EVENT", "TIMEOUT", null, null].sort()
    )

    // Keyboard: pick the webhook in the step list, delete it; its predecessor now leads to its successor.
    await page.getByLabel("Step", { exact: true }).selectOption({ label: "Webhook: Tell CRM" })
    await page.getByRole("button", { name: "Delete step" }).click()
    const dialog = page.getByRole("dialog", { name: "Delete the step Tell CRM?" })
    await dialog.getByRole("button", { name: "Delete step" }).click()
    await page.getByTestId("step-Tell CRM").waitFor({ state: "detached" })
    current = await stored()
    const wait = step(current, "Wait for payment")
    expect(
      current.transitions.find((transition: { fromStepId: string; waitOutcome: string }) =>
        transition.fromStepId === wait.id && transition.waitOutcome === "EVENT"
      ).toStepId
    )
      .toBe(step(current, "Mark paid").id)

    // Reconnect by the panel: the timeout outlet of the wait goes to "Mark paid" instead of "Gave up".
    await page.getByLabel("Step", { exact: true }).selectOption({ label: "Wait for event: Wait for payment" })
    await page.getByLabel("On timeout", { exact: true }).selectOption({ label: "Update contact: Mark paid" })
    await expect.poll(async () =>
      (await stored()).transitions.filter((transition: { toStepId: string }) => transition.toStepId === step(current, "Mark paid").id)
        .length
    ).toBe(2)

    // A waiting execution, cancelled from its row after the confirmation.
    await page.getByRole("button", { name: "Enable" }).click()
    await page.getByRole("button", { name: "Disable" }).waitFor()
    await env.call("POST", "/v1/track", { event: "trial-ended", email: "late@example.com" }, env.project.publicKey)
    const executions = page.getByRole("table", { name: "Executions" })
    await executions.getByText("waiting").waitFor({ timeout: 15_000 })
    await page.getByLabel("Status", { exact: true }).selectOption("WAITING")
    await executions.getByRole("button", { name: "Cancel" }).click()
    await page.getByRole("dialog", { name: "Cancel this execution?" }).getByRole("button", { name: "Cancel execution" }).click()
    await page.getByText("No waiting executions").waitFor()
    await page.getByLabel("Status", { exact: true }).selectOption("CANCELLED")
    await executions.getByText("cancelled").waitFor()

    // Two more waiting, both cancelled at once.
    await page.getByLabel("Status", { exact: true }).selectOption("WAITING")
    for (const email of ["later-1@example.com", "later-2@example.com"]) {
      await env.call("POST", "/v1/track", { event: "trial-ended", email }, env.project.publicKey)
    }
    await expect.poll(() => executions.locator("tbody tr").count(), { timeout: 15_000 }).toBe(2)
    await page.getByRole("button", { name: "Cancel all active" }).click()
    await page.getByRole("dialog", { name: "Cancel every active execution?" }).getByRole("button", { name: "Cancel all" }).click()
    await page.getByText("No waiting executions").waitFor()
    expect((await env.call("GET", `/workflows/${workflow.id}/executions?status=CANCELLED`)).total).toBe(3)
  }, 60_000)
})
