/// <reference lib="dom" />
/**
 * The dashboard in a real Chromium against a real stack: pages load, lists and detail pages show the
 * API's data, the project id travels as X-Project-Id, navigation works by mouse and keyboard at 1280 and
 * 390 px, and API errors are shown with their message and request id. Pages open signed in as the
 * project's owner (support/browser.ts); the sign-in pages have their own file. Screenshots: see support/browser.ts.
 */
import { randomUUID } from "node:crypto"
import type { Page } from "playwright-core"
import { beforeAll, describe, expect, it } from "vitest"
import { heading, PHONE, screenshot, scrollsSideways, useBrowser } from "./support/browser.ts"

const env = useBrowser()
const projectPath = (path = "") => `/p/${env.project.id}${path}`

const CONTACTS = 30
const email = (index: number) => `user-${String(index).padStart(2, "0")}@example.com`
let featured: { id: string; email: string }

beforeAll(async () => {
  for (let index = 0; index < CONTACTS; index++) {
    await env.call("POST", "/contacts", {
      email: email(index),
      subscribed: index % 3 !== 0,
      data: { plan: index % 2 ? "pro" : "free", seats: index }
    })
  }
  featured = await env.call("GET", `/contacts?search=${encodeURIComponent(email(7))}`).then((page) => page.data[0])
  await env.call("POST", "/v1/track", { event: "signed-up", email: email(7), data: { source: "ads" } }, env.project.publicKey)
  // The worker applies tracked events asynchronously: wait until the contact's timeline has it.
  const deadline = Date.now() + 20_000
  while ((await env.call("GET", `/events/contact/${featured.id}`)).data.length === 0) {
    if (Date.now() > deadline) throw new Error("the tracked event never reached the contact")
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}, 60_000)

const rowsOf = (page: Page, table: string) => page.getByRole("table", { name: table }).locator("tbody tr")

/** The rows' texts once the table has loaded (its heading shows before its data). */
const rowTexts = async (page: Page, table: string) => {
  await rowsOf(page, table).first().waitFor()
  return rowsOf(page, table).allInnerTexts()
}

describe("the dashboard", () => {
  it("loads at / and lands on the project list, which lists the owner's project", async () => {
    const page = await env.page()
    await page.goto("/")
    await heading(page, "Projects")
    expect(new URL(page.url()).pathname).toBe("/p")
    expect(await page.title()).toBe("Projects · mailstream")
    expect(await rowTexts(page, "Projects")).toEqual([expect.stringMatching(/^Browser test project\s+OWNER/)])
  })

  it("lists contacts with search, filter and cursor pages, sending the project id as X-Project-Id", async () => {
    const page = await env.page()
    // What Chromium really put on the wire, read through the DevTools protocol.
    const cdp = await page.context().newCDPSession(page)
    await cdp.send("Network.enable")
    // The two events of a request may arrive in either order: join them by request id when reading.
    const urls = new Map<string, string>()
    const headersSent = new Map<string, Record<string, string>>()
    cdp.on("Network.requestWillBeSent", (event) => urls.set(event.requestId, event.request.url))
    cdp.on("Network.requestWillBeSentExtraInfo", (event) => {
      headersSent.set(
        event.requestId,
        Object.fromEntries(Object.entries(event.headers).map(([name, value]) => [name.toLowerCase(), String(value)]))
      )
    })
    const sentTo = (matches: (url: URL) => boolean) =>
      [...headersSent].filter(([id]) => urls.has(id) && matches(new URL(urls.get(id)!))).map(([, headers]) => headers)

    await page.goto(projectPath("/contacts"))
    await heading(page, "Contacts")
    await page.getByTestId("contact-total").getByText(`${CONTACTS} contacts`).waitFor()
    expect(await rowsOf(page, "Contacts").count()).toBe(25)
    await screenshot(page, "contacts-1280")

    await expect.poll(() => sentTo((url) => url.pathname === "/contacts").length, { timeout: 5_000 }).toBeGreaterThan(0)
    for (const headers of sentTo((url) => url.pathname === "/contacts")) expect(headers["x-project-id"]).toBe(env.project.id)
    // The page itself is not an API call: it carries no project header.
    const pageLoads = sentTo((url) => url.pathname === projectPath("/contacts"))
    expect(pageLoads.length).toBe(1)
    expect(pageLoads[0]!["x-project-id"]).toBeUndefined()

    await page.getByRole("button", { name: "Next" }).click()
    await page.getByText("Page 2").waitFor()
    await page.waitForFunction(() => document.querySelectorAll("table[aria-label=Contacts] tbody tr").length === 5)
    await page.getByRole("button", { name: "Previous" }).click()
    await page.waitForFunction(() => document.querySelectorAll("table[aria-label=Contacts] tbody tr").length === 25)

    await page.getByLabel("Search by email").fill("user-07")
    await page.waitForFunction(() => document.querySelectorAll("table[aria-label=Contacts] tbody tr").length === 1)
    expect(new URL(page.url()).searchParams.get("search")).toBe("user-07")
    await page.getByLabel("Search by email").fill("")
    await page.getByLabel("Subscription").selectOption("false")
    await page.getByTestId("contact-total").getByText("10 contacts").waitFor()
    for (const text of await rowsOf(page, "Contacts").allInnerTexts()) expect(text).toContain("Unsubscribed")

    await page.getByLabel("Subscription").selectOption("")
    await page.getByLabel("Search by email").fill("user-07")
    await page.getByRole("link", { name: email(7) }).click()
    await heading(page, email(7))
    const data = await rowTexts(page, "Custom data")
    expect(data.join("\n")).toMatch(/plan\s+string\s+pro$/m)
    expect(data.join("\n")).toMatch(/seats\s+number\s+7/)
    await page.getByText("signed-up").waitFor()
    await screenshot(page, "contact-1280")
  })

  it("navigates by sidebar and keyboard, moving focus to the page", async () => {
    const page = await env.page()
    await page.goto(projectPath())
    await heading(page, "Home")
    await page.getByTestId("count-contacts").getByText(String(CONTACTS)).waitFor()
    await screenshot(page, "home-1280")

    // The first Tab reaches the skip link, which jumps to the page's content.
    await page.keyboard.press("Tab")
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content")
    await page.keyboard.press("Enter")
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("main")

    await page.getByRole("navigation", { name: "Project" }).getByRole("link", { name: "Templates" }).click()
    await heading(page, "Templates")
    expect(new URL(page.url()).pathname).toBe(projectPath("/templates"))
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("main")

    // Keyboard only: focus the Events link and follow it with Enter.
    await page.getByRole("navigation", { name: "Project" }).getByRole("link", { name: "Events" }).focus()
    await page.keyboard.press("Enter")
    await heading(page, "Events")
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("main")
    expect(await rowTexts(page, "Event names")).toEqual([expect.stringMatching(/signed-up\s+1\s/)])
    const current = page.getByRole("navigation", { name: "Project" }).getByRole("link", { name: "Events" })
    expect(await current.getAttribute("aria-current")).toBe("page")
  })

  it("at 390 px hides the sidebar behind a Menu button that Escape closes, without sideways scrolling", async () => {
    const page = await env.page({ viewport: PHONE })
    await page.goto(projectPath("/contacts"))
    await heading(page, "Contacts")
    await page.getByTestId("contact-total").waitFor()
    const menu = page.getByRole("button", { name: "Menu" })
    expect(await page.getByRole("navigation", { name: "Project" }).count()).toBe(0)
    expect(await scrollsSideways(page)).toBe(false)
    await screenshot(page, "contacts-390")

    await menu.click()
    expect(await menu.getAttribute("aria-expanded")).toBe("true")
    await page.getByRole("navigation", { name: "Project" }).waitFor()
    await screenshot(page, "menu-390")
    await page.keyboard.press("Escape")
    await page.getByRole("navigation", { name: "Project" }).waitFor({ state: "detached" })
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Menu")

    await menu.click()
    await page.getByRole("navigation", { name: "Project" }).getByRole("link", { name: "Domains" }).click()
    await heading(page, "Domains")
    expect(await page.getByRole("navigation", { name: "Project" }).count()).toBe(0)
    expect(await scrollsSideways(page)).toBe(false)
  })

  it("shows a declared 404 with its message and request id", async () => {
    const page = await env.page()
    env.allowConsoleErrors(page, /status of 404/)
    await page.goto(projectPath(`/contacts/${randomUUID()}`))
    const notFound = page.getByRole("alert")
    await notFound.waitFor()
    expect(await notFound.getByTestId("error-message").innerText()).toBe("Contact not found")
    expect(await notFound.innerText()).toContain("404 NOT_FOUND")
    expect(await notFound.getByTestId("request-id").innerText()).toMatch(/^req_[\w-]+$/)
    await screenshot(page, "error-404-1280")
  })

  it("adds a domain, lists its DNS records with copy buttons and checks them on demand", async () => {
    const page = await env.page()
    await page.goto(projectPath("/domains"))
    await heading(page, "Domains")
    await page.getByText("No sending domains yet").waitFor()
    await page.getByLabel("Add a domain").fill("mail.acme.test")
    await page.getByRole("button", { name: "Add domain" }).click()

    const records = page.getByRole("table", { name: "DNS records of mail.acme.test" })
    await records.waitFor()
    const rows = await records.locator("tbody tr").allInnerTexts()
    expect(rows.map((row) => row.split(/\s/)[0])).toEqual(["DKIM", "SPF", "DMARC"])
    const [domain] = await env.call("GET", `/domains/project/${env.project.id}`)
    const dkim = domain.records.find((record: { purpose: string }) => record.purpose === "DKIM")

    await page.getByRole("button", { name: "Copy DKIM value" }).click()
    await page.getByRole("button", { name: "Copy DKIM value" }).getByText("Copied").waitFor()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(dkim.value)
    await screenshot(page, "domains-1280")

    // Publish the DKIM record in the test DNS and check now: the domain turns verified.
    env.dns.addTxt(dkim.name, dkim.value)
    await page.getByRole("button", { name: "Check now" }).click()
    await page.getByRole("article", { name: "mail.acme.test" }).locator("header").getByText("verified", { exact: true }).waitFor({
      timeout: 15_000
    })
    expect((await env.call("GET", `/domains/${domain.id}`)).status).toBe("VERIFIED")
  })

  it("shows templates, segments, campaigns and workflows: each list and one of each", async () => {
    // Templates need a verified sender domain.
    const domain = await env.call("POST", "/domains", { domain: "news.acme.test" })
    const dkim = domain.records.find((record: { purpose: string }) => record.purpose === "DKIM")
    env.dns.addTxt(dkim.name, dkim.value)
    expect((await env.call("GET", `/domains/${domain.id}/verify`)).status).toBe("VERIFIED")
    const template = await env.call("POST", "/templates", {
      name: "Welcome",
      subject: "Welcome, {{ contact.email }}",
      body: "<h1>Hello</h1><p>Thanks for joining.</p>",
      from: "hello@news.acme.test",
      type: "TRANSACTIONAL"
    })
    const segment = await env.call("POST", "/segments", {
      name: "Pro plan",
      condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] }
    })
    const campaign = (await env.call("POST", "/campaigns", {
      name: "Spring news",
      subject: "What is new",
      body: "<p>News</p>",
      from: "news@news.acme.test",
      audienceType: "SEGMENT",
      segmentId: segment.id
    })).data
    const workflow = await env.call("POST", "/workflows", { name: "Onboarding", eventName: "signed-up" })

    const page = await env.page()
    const nav = page.getByRole("navigation", { name: "Project" })
    await page.goto(projectPath("/templates"))
    await heading(page, "Templates")
    await page.getByRole("link", { name: "Welcome" }).click()
    await heading(page, "Welcome")
    await page.getByTestId("code-editor").getByText("Thanks for joining.").waitFor()
    expect(await page.getByTestId("code-editor").locator(".cm-content").innerText()).toBe("<h1>Hello</h1><p>Thanks for joining.</p>")
    expect(await page.getByLabel("Subject").inputValue()).toBe("Welcome, {{ contact.email }}")
    expect(new URL(page.url()).pathname).toBe(projectPath(`/templates/${template.id}`))
    await screenshot(page, "template-1280")

    await nav.getByRole("link", { name: "Segments" }).click()
    await heading(page, "Segments")
    expect(await rowTexts(page, "Segments")).toEqual([expect.stringMatching(/^Pro plan\s+dynamic\s+15\s/)])
    await page.getByRole("link", { name: "Pro plan" }).click()
    await heading(page, "Pro plan")
    await page.waitForFunction(() => document.querySelectorAll("table[aria-label=Members] tbody tr").length === 15)
    expect(new URL(page.url()).pathname).toBe(projectPath(`/segments/${segment.id}`))

    await nav.getByRole("link", { name: "Campaigns" }).click()
    await heading(page, "Campaigns")
    await page.getByRole("link", { name: "Spring news" }).click()
    await heading(page, "Spring news")
    await page.getByRole("link", { name: "Segment Pro plan" }).waitFor()
    // A draft: its send panel, with the audience's live recipient count (test/browser/campaigns.test.ts sends one).
    await page.getByRole("region", { name: "Send" }).getByTestId("recipient-count").getByText(/^\d+$/).waitFor()
    expect(new URL(page.url()).pathname).toBe(projectPath(`/campaigns/${campaign.id}`))
    await screenshot(page, "campaign-1280")

    await nav.getByRole("link", { name: "Workflows" }).click()
    await heading(page, "Workflows")
    expect(await rowTexts(page, "Workflows")).toEqual([expect.stringContaining("Event signed-up")])
    await page.getByRole("link", { name: "Onboarding" }).click()
    await heading(page, "Onboarding")
    await page.getByRole("region", { name: "Steps" }).getByText("When signed-up is tracked").waitFor()
    expect(new URL(page.url()).pathname).toBe(projectPath(`/workflows/${workflow.id}`))
  })

  it("shows its own not-found page for an address it does not have", async () => {
    const page = await env.page()
    await page.goto(projectPath("/no-such-page"))
    await heading(page, "Page not found")
    await page.getByRole("navigation", { name: "Project" }).waitFor()
    await page.goto("/signin/no-such-page")
    await heading(page, "Page not found")
  })

  it("creates a template in the editor, and the server's preview follows the typing and the chosen contact", async () => {
    const domain = await env.call("POST", "/domains", { domain: "editor.acme.test" })
    const dkim = domain.records.find((record: { purpose: string }) => record.purpose === "DKIM")
    env.dns.addTxt(dkim.name, dkim.value)
    expect((await env.call("GET", `/domains/${domain.id}/verify`)).status).toBe("VERIFIED")

    const page = await env.page()
    // Half-typed Liquid does not render: the preview answers 422 (shown, then replaced) while typing.
    env.allowConsoleErrors(page, /status of 422/)
    await page.goto(projectPath("/templates"))
    await page.getByRole("link", { name: "New template" }).click()
    await heading(page, "New template")
    const subject = page.getByTestId("preview-subject")
    await subject.getByText("Hello Jane").waitFor()
    const frame = page.frameLocator("iframe[title='Rendered body']")
    await frame.getByRole("heading", { name: "Hello Jane" }).waitFor()
    expect(await page.locator("iframe[title='Rendered body']").getAttribute("sandbox")).toBe("")

    await page.getByLabel("Name", { exact: true }).fill("Onboarding")
    await page.getByLabel("From", { exact: true }).fill("hi@editor.acme.test")
    await page.getByLabel("Subject").fill("Your {{ plan }} plan")
    // Type into CodeMirror as a user would: the preview follows.
    const editor = page.getByTestId("code-editor").locator(".cm-content")
    await editor.click()
    await page.keyboard.press("ControlOrMeta+a")
    await page.keyboard.press("Delete")
    // The HTML mode closes the tag as it is opened: "<p>" brings its "</p>".
    await editor.pressSequentially("<p>Seats: {{ seats }}")
    await frame.getByText("Seats: ").waitFor()
    await page.getByRole("combobox", { name: "For" }).selectOption({ label: email(7) })
    await subject.getByText("Your pro plan").waitFor()
    await frame.getByText("Seats: 7").waitFor()
    await screenshot(page, "template-editor-1280")

    await page.getByRole("button", { name: "Create template" }).click()
    await heading(page, "Onboarding")
    const templateId = new URL(page.url()).pathname.split("/").pop()
    expect(await env.call("GET", `/templates/${templateId}`)).toMatchObject({
      name: "Onboarding",
      subject: "Your {{ plan }} plan",
      body: "<p>Seats: {{ seats }}</p>",
      from: "hi@editor.acme.test"
    })
    await page.getByRole("button", { name: "Duplicate" }).click()
    await heading(page, "Onboarding (Copy)")
  })
})
