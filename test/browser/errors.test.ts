/// <reference lib="dom" />
/**
 * Errors where the user looks: a value the contract refuses is named at its field before anything is
 * sent (Add contact, Invite), a server's 422 at the field it names (a bad domain, half-typed Liquid in a
 * template). None of them tells the user to reload. (The 403 for an unverified sender domain is in
 * campaigns.test.ts: it needs a relay, since under local delivery no domain needs verifying.)
 * Screenshots: see support/browser.ts.
 */
import type { Locator, Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { heading, screenshot, useBrowser } from "./support/browser.ts"

const env = useBrowser()
const projectPath = (path = "") => `/p/${env.project.id}${path}`

/** The API requests the page makes to `path` with `method`, as they leave the browser. */
const requestsTo = (page: Page, method: string, path: string) => {
  const seen: Array<string> = []
  page.on("request", (request) => {
    if (request.method() === method && new URL(request.url()).pathname === path) seen.push(request.url())
  })
  return seen
}

/** The error message shown under the labelled field (or the field itself), found through its aria-describedby. */
const errorOf = async (page: Page, label: string | Locator) => {
  const field = typeof label === "string" ? page.getByLabel(label, { exact: true }) : label
  await expect.poll(() => field.getAttribute("aria-invalid")).toBe("true")
  const ids = (await field.getAttribute("aria-describedby"))!.split(" ")
  return page.locator(`[id="${ids[0]}"]`).innerText()
}

const EMAIL_MESSAGE = "Expected a valid email address (at most 254 characters)"

describe("errors in the dashboard's forms", () => {
  it("Add contact: bob@bar is named at the email field, nothing is sent, and nothing says reload", async () => {
    const page = await env.page()
    const sent = requestsTo(page, "POST", "/contacts")
    await page.goto(projectPath("/contacts"))
    await heading(page, "Contacts")
    await page.getByRole("button", { name: "Add contact" }).click()
    const form = page.getByRole("region", { name: "Add a contact" })
    await form.getByLabel("Email").fill("bob@bar")
    await form.getByRole("button", { name: "Create contact" }).click()
    expect(await errorOf(page, "Email")).toBe(EMAIL_MESSAGE)
    expect(await page.locator("main").innerText()).not.toMatch(/reload/i)
    await screenshot(page, "error-add-contact-1280")
    expect(sent).toEqual([])
    expect((await env.call("GET", "/contacts?search=bob")).data).toEqual([])

    // Correcting the value clears the message, and the contact is created.
    await form.getByLabel("Email").fill("bob@bar.example")
    expect(await page.getByLabel("Email", { exact: true }).getAttribute("aria-invalid")).toBeNull()
    await form.getByRole("button", { name: "Create contact" }).click()
    await heading(page, "bob@bar.example")
    expect(sent).toHaveLength(1)
  })

  it("Invite: x@y is named at the email field and no invitation is sent", async () => {
    const page = await env.page()
    const sent = requestsTo(page, "POST", `/projects/${env.project.id}/members`)
    await page.goto(projectPath("/settings/members"))
    const form = page.getByRole("region", { name: "Invite someone" })
    await form.getByLabel("Email").fill("x@y")
    await form.getByRole("button", { name: "Invite" }).click()
    expect(await errorOf(page, "Email")).toBe(EMAIL_MESSAGE)
    expect(await page.locator("main").innerText()).not.toMatch(/reload|does not match what this page expects/i)
    await screenshot(page, "error-invite-1280")
    expect(sent).toEqual([])
    expect(await page.getByRole("table", { name: "Pending invitations" }).count()).toBe(0)
  })

  it("Sign up: x@y is named at the email field and no account is asked for", async () => {
    const page = await env.page({ user: null })
    env.allowConsoleErrors(page, /status of 401/)
    const sent = requestsTo(page, "POST", "/auth/signup")
    await page.goto("/signup")
    await heading(page, "Create an account")
    await page.getByLabel("Email").fill("x@y")
    await page.getByLabel("Password").fill("correct horse battery")
    await page.getByRole("button", { name: "Create account" }).click()
    expect(await errorOf(page, "Email")).toBe(EMAIL_MESSAGE)
    expect(sent).toEqual([])
  })

  it("Add domain: the server's 422 is shown at the domain field with its own message", async () => {
    const page = await env.page()
    env.allowConsoleErrors(page, /status of 422/)
    await page.goto(projectPath("/domains"))
    await heading(page, "Domains")
    await page.getByLabel("Add a domain").fill("not a domain")
    await page.getByRole("button", { name: "Add domain" }).click()
    expect(await errorOf(page, "Add a domain")).toBe("Expected a domain name such as example.com")
    // Shown once, at the field: no "Request validation failed" beside it.
    expect(await page.locator("main").innerText()).not.toContain("Request validation failed")
    await screenshot(page, "error-domain-1280")
  })

  it("a template: half-typed Liquid is named under the body as it is typed, and again when saved", async () => {
    const page = await env.page()
    env.allowConsoleErrors(page, /status of 422/)
    await page.goto(projectPath("/templates/new"))
    await heading(page, "New template")
    const frame = page.frameLocator("iframe[title='Rendered body']")
    await frame.getByRole("heading", { name: "Hello Jane" }).waitFor()

    const editor = page.getByTestId("code-editor").locator(".cm-content")
    await editor.click()
    await page.keyboard.press("ControlOrMeta+End")
    await page.keyboard.type("{% if plan %}Pro")
    const body = page.getByRole("textbox", { name: "Body" })
    const bodyMessage = await errorOf(page, body)
    expect(bodyMessage).toBe("invalid template: tag {% if plan %} not closed (line 4)")
    // The last good preview stays up beside it.
    await frame.getByRole("heading", { name: "Hello Jane" }).waitFor()
    await page.getByText("does not render as it is").waitFor()

    await page.getByLabel("Name", { exact: true }).fill("Half typed")
    await page.getByLabel("From", { exact: true }).fill("hello@acme.test")
    await page.getByRole("button", { name: "Create template" }).click()
    await expect.poll(() => errorOf(page, body)).toBe(bodyMessage)
    expect(await page.locator("main").innerText()).not.toContain("Request validation failed")
    await screenshot(page, "error-liquid-1280")
    expect((await env.call("GET", "/templates")).data).toEqual([])
  })
})
