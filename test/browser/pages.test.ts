/// <reference lib="dom" />
/**
 * Every page of the dashboard with data in it, as people read it: axe finds nothing serious or critical
 * on any of them, and data reads as words rather than JSON or ids (custom data unquoted, lists joined,
 * workflow executions by their contact's email, nouns agreeing with their numbers). Screenshots of every
 * page: see support/browser.ts.
 */
import { join } from "node:path"
import type { Page } from "playwright-core"
import { beforeAll, describe, expect, it } from "vitest"
import { verifyDomain } from "../support/mail.ts"
import { type AxeFinding, seriousAxeFindings } from "./support/axe.ts"
import { screenshotDir, useBrowser } from "./support/browser.ts"

const env = useBrowser()
const projectPath = (path = "") => `/p/${env.project.id}${path}`

const ids: Record<string, string> = {}

/** Polls the API until `done` holds for what `path` answers. */
const until = async (path: string, done: (body: any) => boolean) => {
  const deadline = Date.now() + 20_000
  for (;;) {
    const body = await env.call("GET", path)
    if (done(body)) return body
    if (Date.now() > deadline) throw new Error(`${path} never reached the state waited for: ${JSON.stringify(body)}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

beforeAll(async () => {
  await verifyDomain({ api: env.api, dns: env.dns }, env.project.secretKey, "acme.test")
  const ada = await env.call("POST", "/contacts", {
    email: "ada@example.com",
    data: { plan: "pro", seats: 3, beta: true, tags: ["early", "vip"] }
  })
  await env.call("POST", "/contacts", { email: "bob@example.com", subscribed: false, data: { plan: "free", seats: 1 } })
  ids.contact = ada.id
  await env.call("POST", "/v1/track", { event: "signed-up", email: "ada@example.com", data: { source: "ads" } }, env.project.publicKey)
  await until(`/events/contact/${ada.id}`, (page) => page.data.length > 0)

  ids.template = (await env.call("POST", "/templates", {
    name: "Welcome",
    subject: "Welcome, {{ email }}",
    body: "<h1>Hello</h1><p>Thanks for joining.</p>",
    from: "hello@acme.test",
    type: "TRANSACTIONAL"
  })).id
  await env.call("POST", "/v1/send", { to: "ada@example.com", from: "hello@acme.test", subject: "Your receipt", body: "<p>Thanks</p>" })
  ids.segment = (await env.call("POST", "/segments", {
    name: "Pro plan",
    condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] }
  })).id
  ids.staticSegment = (await env.call("POST", "/segments", { name: "Early readers", type: "STATIC" })).id
  await env.call("POST", `/segments/${ids.staticSegment}/members`, { emails: ["ada@example.com"] })

  const campaign = { subject: "What is new", body: "<p>News</p>", from: "news@acme.test", audienceType: "SEGMENT", segmentId: ids.segment }
  ids.draft = (await env.call("POST", "/campaigns", { name: "Autumn news", ...campaign })).data.id
  ids.sent = (await env.call("POST", "/campaigns", { name: "Spring news", ...campaign })).data.id
  await env.call("POST", `/campaigns/${ids.sent}/send`, {})

  // A workflow whose execution waits on a one-hour delay.
  const workflow = await env.call("POST", "/workflows", { name: "Onboarding", eventName: "trial-started" })
  ids.workflow = workflow.id
  const delay = await env.call("POST", `/workflows/${workflow.id}/steps`, {
    type: "DELAY",
    name: "Pause",
    config: { amount: 1, unit: "hours" }
  })
  await env.call("POST", `/workflows/${workflow.id}/transitions`, { fromStepId: workflow.steps[0].id, toStepId: delay.id })
  await env.call("PATCH", `/workflows/${workflow.id}`, { enabled: true })
  await env.call("POST", "/v1/track", { event: "trial-started", email: "ada@example.com" }, env.project.publicKey)
  ids.execution = (await until(`/workflows/${workflow.id}/executions`, (page) => page.data.length > 0)).data[0].id
  await until(`/campaigns/${ids.sent}`, (body) => (body.data ?? body).status === "SENT")

  // A destination with one delivery in its log: a test event the SSRF guard refuses (a private address).
  ids.destination = (await env.call("POST", "/destinations", {
    url: "https://10.20.30.40/hooks/mailstream",
    events: ["email.*", "segment.*.entry", "signed-up"],
    description: "CRM sync"
  })).id
  await env.call("POST", `/destinations/${ids.destination}/test`)
}, 90_000)

/** Opens a page and waits until it has shown its heading and its data (no loading state left). */
const open = async (page: Page, path: string) => {
  await page.goto(path)
  await page.locator("h1").first().waitFor()
  await page.waitForFunction(() =>
    ![...document.querySelectorAll("[role=status]")].some((element) => element.textContent?.includes("Loading"))
  )
  // Charts, previews and counts that follow the first data.
  await page.waitForLoadState("networkidle", { timeout: 5_000 }).catch(() => undefined)
}

/** Visits each path, screenshots it, and returns axe's serious and critical findings by path. */
const walk = async (page: Page, paths: ReadonlyArray<readonly [string, string]>) => {
  const found: Record<string, ReadonlyArray<AxeFinding>> = {}
  // A server error is a console error the harness fails on: name the request, to know which it was.
  page.on("response", (response) => {
    if (response.status() >= 500) console.error(`${response.status()} from ${response.request().method()} ${response.url()}`)
  })
  for (const [name, path] of paths) {
    await open(page, path)
    await page.screenshot({ path: join(screenshotDir, `page-${name}-1280.png`), fullPage: true })
    const findings = await seriousAxeFindings(page)
    if (findings.length > 0) found[path] = findings
  }
  return found
}

describe("every page", () => {
  it("of a project, with data in it, has no serious or critical axe finding", async () => {
    const page = await env.page()
    const found = await walk(page, [
      ["home", projectPath()],
      ["contacts", projectPath("/contacts")],
      ["contact", projectPath(`/contacts/${ids.contact}`)],
      ["import", projectPath("/contacts/import")],
      ["templates", projectPath("/templates")],
      ["template", projectPath(`/templates/${ids.template}`)],
      ["template-new", projectPath("/templates/new")],
      ["segments", projectPath("/segments")],
      ["segment", projectPath(`/segments/${ids.segment}`)],
      ["segment-static", projectPath(`/segments/${ids.staticSegment}`)],
      ["segment-new", projectPath("/segments/new")],
      ["campaigns", projectPath("/campaigns")],
      ["campaign-draft", projectPath(`/campaigns/${ids.draft}`)],
      ["campaign-edit", projectPath(`/campaigns/${ids.draft}/edit`)],
      ["campaign-sent", projectPath(`/campaigns/${ids.sent}`)],
      ["campaign-new", projectPath("/campaigns/new")],
      ["workflows", projectPath("/workflows")],
      ["workflow", projectPath(`/workflows/${ids.workflow}?execution=${ids.execution}`)],
      ["events", projectPath("/events")],
      ["event", projectPath("/events?name=signed-up")],
      ["activity", projectPath("/activity")],
      ["analytics", projectPath("/analytics")],
      ["domains", projectPath("/domains")],
      ["destinations", projectPath("/destinations")],
      ["destination", projectPath(`/destinations/${ids.destination}`)],
      ["members", projectPath("/settings/members")],
      ["keys", projectPath("/settings/keys")],
      ["sending", projectPath("/settings/sending")],
      ["billing", projectPath("/settings/billing")],
      ["security", projectPath("/settings/security")],
      ["danger", projectPath("/settings/danger")],
      ["not-found", projectPath("/no-such-page")]
    ])
    expect(found).toEqual({})
  }, 180_000)

  it("outside a project, signed in or not, has no serious or critical axe finding", async () => {
    const signedIn = await env.page()
    const visitor = await env.page({ user: null })
    // A visitor's session check answers 401 before each account page shows.
    env.allowConsoleErrors(visitor, /status of 401/)
    expect({
      ...(await walk(signedIn, [["projects", "/p"]])),
      ...(await walk(visitor, [
        ["signin", "/signin"],
        ["signup", "/signup"],
        ["forgot-password", "/forgot-password"],
        ["reset-password", "/reset-password?token=unknown"],
        ["accept-invitation", "/accept-invitation?token=unknown"]
      ]))
    }).toEqual({})
  }, 60_000)
})

describe("data as people read it", () => {
  it("shows custom data as its values, not JSON: unquoted text, lists joined, in the table, the contact and the timeline", async () => {
    const page = await env.page()
    await open(page, projectPath("/contacts"))
    const row = await page.getByRole("table", { name: "Contacts" }).locator("tr", { hasText: "ada@example.com" }).innerText()
    expect(row).toMatch(/\bpro\b/)
    expect(row).not.toContain('"')
    expect(await page.getByTestId("contact-total").innerText()).toBe("2 contacts")

    await open(page, projectPath(`/contacts/${ids.contact}`))
    const data = (await page.getByRole("table", { name: "Custom data" }).locator("tbody tr").allInnerTexts()).join("\n")
    expect(data).toMatch(/plan\s+string\s+pro$/m)
    expect(data).toMatch(/tags\s+list\s+early, vip$/m)
    expect(data).not.toContain('"')
    const eventData = page.getByRole("term").filter({ hasText: "source" }).first()
    await eventData.waitFor()
    const timeline = await page.getByRole("list", { name: "Timeline" }).innerText()
    expect(timeline).not.toMatch(/[{}"]/)
    // The mail's and the workflow's names are on the line: not their ids.
    expect(timeline).toContain("email sent")
    expect(timeline).not.toMatch(/emailId|campaignId|executionId|[0-9a-f]{8}-[0-9a-f]{4}-/)

    await open(page, projectPath("/events?name=signed-up"))
    const recent = await page.getByRole("list", { name: "Recent events" }).innerText()
    expect(recent).toMatch(/source\s+ads/)
    expect(recent).not.toMatch(/[{}"]/)

    // The service's own events (email.sent) keep what people read (the subject), not their ids.
    await open(page, projectPath("/events"))
    const all = page.getByRole("list", { name: "Recent events" })
    await all.getByText("Your receipt").waitFor()
    expect(await all.innerText()).not.toMatch(/emailId|campaignId|[0-9a-f]{8}-[0-9a-f]{4}-/)
  })

  it("names a workflow execution's contact by email, and a one-hour delay as 1 hour", async () => {
    const page = await env.page()
    await open(page, projectPath(`/workflows/${ids.workflow}?execution=${ids.execution}`))
    const executions = page.getByRole("table", { name: "Executions" })
    await executions.getByRole("link", { name: "ada@example.com" }).waitFor()
    expect(await executions.innerText()).not.toContain(ids.contact!.slice(0, 8))
    await page.getByRole("region", { name: "Execution history" }).getByRole("heading", { name: "Execution for ada@example.com" }).waitFor()
    await page.getByTestId("step-Pause").getByText("1 hour", { exact: true }).waitFor()
  })

  it("makes nouns agree with their numbers: 1 contact matches, 1 recipient", async () => {
    const page = await env.page()
    await open(page, projectPath(`/segments/${ids.segment}`))
    await expect.poll(() => page.getByRole("region", { name: "Live count" }).innerText()).toMatch(/^1 contact matches/)
    await open(page, projectPath(`/campaigns/${ids.draft}`))
    await page.getByRole("region", { name: "Send" }).getByText(/^1 recipient now\.$/).waitFor()
  })
})
