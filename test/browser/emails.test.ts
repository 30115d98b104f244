/// <reference lib="dom" />
/**
 * A new user's first email on an installation with no SMTP relay and no DNS (local delivery), in a real
 * Chromium: sign up, create a project (its keys shown once), add a contact, write a template from an
 * address at a domain nobody verified, send it with /v1/send and read it on the Emails page, rendered.
 * The banner and the Domains page say mail is delivered locally. axe finds nothing serious or critical
 * on the new pages. Screenshots: see support/browser.ts.
 */
import { createRequire } from "node:module"
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { heading, PHONE, screenshot, scrollsSideways, useBrowser } from "./support/browser.ts"

const env = useBrowser({ env: { SMTP_URL: "" } })

const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js")

/** axe's serious and critical findings on the page as it is now, one line each. */
const seriousFindings = async (page: Page) => {
  await page.addScriptTag({ path: AXE })
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (context: Document) => Promise<{ violations: Array<any> }> } }).axe
    return (await axe.run(document)).violations
  })
  return violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map((violation) => `${violation.id}: ${violation.help} (${violation.nodes.map((node: any) => node.target.join(" ")).join(", ")})`)
}

describe("the first email under local delivery", () => {
  it("goes from sign-up to reading the sent mail on the Emails page", async () => {
    const page = await env.page({ user: null })
    // Signed out, the first page's session check answers 401.
    env.allowConsoleErrors(page, /status of 401/)

    await page.goto("/signup")
    await heading(page, "Create an account")
    await page.getByLabel("Email").fill("newcomer@example.com")
    await page.getByLabel("Password").fill("correct horse battery")
    await page.getByRole("button", { name: "Create account" }).click()
    await heading(page, "Projects")
    await screenshot(page, "first-email-1-signed-up")

    await page.getByLabel("Project name").fill("First steps")
    await page.getByRole("button", { name: "Create project" }).click()
    const secretKey = (await page.getByTestId("Secret key").innerText()).trim()
    expect(secretKey).toMatch(/^sk_/)
    await screenshot(page, "first-email-2-project")
    await page.getByRole("link", { name: "Open First steps" }).click()
    const banner = page.getByTestId("local-delivery")
    await banner.waitFor()
    expect(await banner.innerText()).toContain("No SMTP relay is configured")
    const projectPath = new URL(page.url()).pathname

    await page.goto(`${projectPath}/contacts`)
    await heading(page, "Contacts")
    await page.getByRole("button", { name: "Add contact" }).click()
    await page.getByLabel("Email", { exact: true }).fill("ada@example.org")
    await page.getByRole("button", { name: "Create contact" }).click()
    // A new contact opens on its own page.
    await heading(page, "ada@example.org")
    await screenshot(page, "first-email-3-contact")

    await page.goto(`${projectPath}/templates/new`)
    await heading(page, "New template")
    // The From field says no verified domain is needed here.
    await page.getByText("Any address: under local delivery no domain needs verifying").waitFor()
    await page.getByLabel("Name", { exact: true }).fill("Welcome")
    await page.getByLabel("Type").selectOption("TRANSACTIONAL")
    await page.getByLabel("From", { exact: true }).fill("hello@not-verified.example")
    await page.getByRole("button", { name: "Create template" }).click()
    await page.waitForURL(/\/templates\/[0-9a-f-]{36}$/)
    const templateId = new URL(page.url()).pathname.split("/").at(-1)!
    await screenshot(page, "first-email-4-template")

    const sent = await fetch(`${env.api.url}/v1/send`, {
      method: "POST",
      headers: { authorization: `Bearer ${secretKey}`, "content-type": "application/json" },
      body: JSON.stringify({ to: "ada@example.org", template: templateId, data: { firstName: "Ada" } })
    })
    expect(sent.status, await sent.clone().text()).toBe(200)

    await page.getByRole("link", { name: "Emails", exact: true }).first().click()
    await heading(page, "Emails")
    const row = page.getByRole("table", { name: "Emails" }).locator("tbody tr").first()
    await row.getByText("sent", { exact: true }).waitFor({ timeout: 20_000 }).catch(async () => {
      // Queued mail shows at once; its status follows on a reload once the worker has sent it.
      await page.reload()
      await row.getByText("sent", { exact: true }).waitFor({ timeout: 20_000 })
    })
    expect(await row.innerText()).toContain("ada@example.org")
    await screenshot(page, "first-email-5-emails")
    expect(await seriousFindings(page)).toEqual([])

    await row.getByRole("link").first().click()
    await heading(page, /^Hello Ada/)
    const body = page.frameLocator("iframe[title^='Body of']")
    await body.getByRole("heading", { name: "Hello Ada" }).waitFor()
    await page.getByRole("table", { name: "Headers" }).getByText("Message-ID").waitFor()
    expect(await page.getByRole("region", { name: "Timeline" }).innerText()).toMatch(/queued[\s\S]*sent/)
    expect(await page.getByRole("region", { name: "Text part" }).innerText()).toContain("Hello Ada")
    await screenshot(page, "first-email-6-email")
    expect(await seriousFindings(page)).toEqual([])

    const download = page.waitForEvent("download")
    await page.getByRole("button", { name: "Download .eml" }).click()
    expect((await download).suggestedFilename()).toMatch(/^[0-9a-f-]{36}\.eml$/)
  })

  it("says on the Domains page that no verification is needed yet, and fits a phone", async () => {
    const page = await env.page()
    await page.goto(`/p/${env.project.id}/domains`)
    await heading(page, "Domains")
    await page.getByTestId("domains-local-delivery").waitFor()
    await screenshot(page, "domains-local-delivery")
    expect(await seriousFindings(page)).toEqual([])

    const phone = await env.page({ viewport: PHONE })
    await phone.goto(`/p/${env.project.id}/emails`)
    await heading(phone, "Emails")
    await phone.getByText("No email sent yet").waitFor()
    expect(await scrollsSideways(phone)).toBe(false)
    await screenshot(phone, "emails-390")
  })
})
