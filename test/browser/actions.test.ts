/// <reference lib="dom" />
/**
 * The dashboard's actions of issue #36 (item 5) in a real Chromium against a real stack (mail to the file
 * outbox): deleting a template and a domain after confirming, the public key shown at any time and each
 * key rotated on its own, custom data on a new contact, the contacts table filtered by segment,
 * subscription and a custom field, the home page's charts and recent activity, the warning before unsaved
 * template edits are lost (a route change and closing the tab), the campaign composer with the template
 * editor and its preview, and a draft's and a sent campaign's body and recipients. axe finds nothing
 * serious or critical on each page. Screenshots: see support/browser.ts.
 */
import type { Locator, Page } from "playwright-core"
import { beforeAll, describe, expect, it } from "vitest"
import { verifyDomain } from "../support/mail.ts"
import { seriousFindings } from "./support/axe.ts"
import { heading, PHONE, screenshot, scrollsSideways, useBrowser } from "./support/browser.ts"

const env = useBrowser()
const projectPath = (path = "") => `/p/${env.project.id}${path}`
const nav = (page: Page, name: string) => page.getByRole("navigation", { name: "Project" }).getByRole("link", { name, exact: true })

/** axe on the page as shown, then its screenshot (with `shown` scrolled into view). */
const check = async (page: Page, name: string, shown?: Locator) => {
  expect(await seriousFindings(page), name).toEqual([])
  await shown?.evaluate((element) => element.scrollIntoView({ block: "start" }))
  await screenshot(page, name)
}

beforeAll(async () => {
  await verifyDomain({ api: env.api, dns: env.dns }, env.project.secretKey, "acme.test")
  for (const [index, plan] of ["pro", "pro", "free", "free"].entries()) {
    await env.call("POST", "/contacts", {
      email: `member-${index}@example.com`,
      subscribed: index !== 1,
      data: { plan, firstName: `Member ${index}` }
    })
  }
}, 60_000)

describe("templates", () => {
  it("warns before unsaved edits are lost (another page, closing the tab), then deletes the template after confirming", async () => {
    const template = await env.call("POST", "/templates", {
      name: "Welcome",
      subject: "Hi {{ firstName }}",
      body: "<p>Hello {{ firstName }}</p>",
      from: "hello@acme.test"
    })
    const page = await env.page()
    await page.goto(projectPath(`/templates/${template.id}`))
    await heading(page, "Welcome")
    await page.getByTestId("preview-subject").getByText("Hi Jane").waitFor()
    expect(await page.getByTestId("unsaved").count()).toBe(0)
    await page.getByLabel("Subject", { exact: true }).fill("Hi again {{ firstName }}")
    await page.getByTestId("unsaved").waitFor()

    // Another page of the app: asked first; Cancel stays with the edits.
    await nav(page, "Contacts").click()
    const leave = page.getByRole("dialog", { name: "Leave without saving?" })
    await leave.waitFor()
    await check(page, "template-unsaved-1280")
    await leave.getByRole("button", { name: "Cancel" }).click()
    await heading(page, "Welcome")
    expect(await page.getByLabel("Subject", { exact: true }).inputValue()).toBe("Hi again {{ firstName }}")

    // Closing or reloading the tab: the browser asks (beforeunload); dismissed, the page and its edits stay.
    const asked = new Promise<string>((resolve) =>
      page.once("dialog", (dialog) => {
        resolve(dialog.type())
        void dialog.dismiss()
      })
    )
    await page.evaluate(() => {
      // A real user gesture is needed for the browser to ask: the click above was one.
      location.reload()
    })
    expect(await asked).toBe("beforeunload")
    expect(await page.getByLabel("Subject", { exact: true }).inputValue()).toBe("Hi again {{ firstName }}")

    // Saved, nothing is asked any more.
    await page.getByRole("button", { name: "Save", exact: true }).click()
    await page.getByText("Saved.").waitFor()
    expect(await page.getByTestId("unsaved").count()).toBe(0)
    expect((await env.call("GET", `/templates/${template.id}`)).subject).toBe("Hi again {{ firstName }}")

    // Delete: confirmed, then back to the list without it.
    await page.getByRole("button", { name: "Delete", exact: true }).click()
    const confirm = page.getByRole("dialog", { name: "Delete Welcome?" })
    await confirm.waitFor()
    await confirm.getByRole("button", { name: "Delete template" }).click()
    await heading(page, "Templates")
    await page.getByText("No templates yet").waitFor()
    const gone = await fetch(`${env.api.url}/templates/${template.id}`, { headers: { authorization: `Bearer ${env.project.secretKey}` } })
    expect(gone.status).toBe(404)
  })
})

describe("domains", () => {
  it("deletes a domain once its name is typed", async () => {
    await env.call("POST", "/domains", { domain: "old.example" })
    const page = await env.page()
    await page.goto(projectPath("/domains"))
    await heading(page, "Domains")
    const card = page.getByRole("article", { name: "old.example" })
    await card.getByRole("button", { name: "Delete" }).click()
    const confirm = page.getByRole("dialog", { name: "Delete old.example?" })
    await confirm.waitFor()
    const action = confirm.getByRole("button", { name: "Delete domain" })
    expect(await action.isDisabled()).toBe(true)
    await confirm.getByLabel(/Type old.example to confirm/).fill("old.example")
    await check(page, "domain-delete-1280")
    await action.click()
    await card.waitFor({ state: "detached" })
    await page.getByRole("article", { name: "acme.test" }).waitFor()
    const left = await env.call("GET", `/domains/project/${env.project.id}`)
    expect(left.map((domain: { domain: string }) => domain.domain)).toEqual(["acme.test"])
  })
})

describe("keys", () => {
  it("shows the public key at any time and rotates each key on its own", async () => {
    const page = await env.page()
    await page.goto(projectPath("/settings/keys"))
    await heading(page, "Settings")
    // Made before public keys were kept? The CLI's project keeps it: shown now.
    const shownKey = page.getByTestId("Public key")
    await expect.poll(() => shownKey.innerText()).toBe(env.project.publicKey)

    await page.getByRole("button", { name: "Rotate public key" }).click()
    const confirm = page.getByRole("dialog", { name: "Rotate the public key?" })
    await confirm.getByRole("button", { name: "Rotate public key" }).click()
    await page.getByText("The new public key is in use.").waitFor()
    const newPublic = (await env.call("GET", "/contacts?limit=1")) && await page.getByTestId("Public key").first().innerText()
    expect(newPublic).toMatch(/^pk_/)
    expect(newPublic).not.toBe(env.project.publicKey)
    // The secret key still works; the new public key tracks, the old one no longer does.
    const track = (key: string) =>
      fetch(`${env.api.url}/v1/track`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ email: "keys@example.com", event: "rotated" })
      })
    expect((await track(newPublic)).status).toBe(200)
    await expect.poll(async () => (await track(env.project.publicKey)).status, { timeout: 3_000 }).toBe(401)

    await page.getByRole("button", { name: "Rotate secret key" }).click()
    await page.getByRole("dialog", { name: "Rotate the secret key?" }).getByRole("button", { name: "Rotate secret key" }).click()
    await page.getByText("Copy the secret key now").waitFor()
    const newSecret = await page.getByTestId("Secret key").innerText()
    expect(newSecret).toMatch(/^sk_/)
    // The public key shown stays the one just made.
    expect(await page.getByTestId("Public key").first().innerText()).toBe(newPublic)
    await check(page, "keys-rotated-1280")
    Object.assign(env.project, { publicKey: newPublic, secretKey: newSecret })

    // A MEMBER sees the public key too, and no rotation.
    const member = await env.signUp("keys-member@example.com")
    await env.stack.query("INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, 'MEMBER')", [env.project.id, member.id])
    const memberPage = await env.page({ user: member })
    await memberPage.goto(projectPath("/settings/keys"))
    await expect.poll(() => memberPage.getByTestId("Public key").innerText()).toBe(newPublic)
    expect(await memberPage.getByRole("button", { name: /Rotate/ }).count()).toBe(0)
  })
})

describe("contacts", () => {
  it("creates a contact with typed custom data", async () => {
    const page = await env.page()
    await page.goto(projectPath("/contacts"))
    await heading(page, "Contacts")
    await page.getByRole("button", { name: "Add contact" }).click()
    const form = page.getByRole("form", { name: "Add a contact" })
    await form.getByLabel("Email").fill("new-with-data@example.com")
    // A field without a name is refused before any request.
    await form.getByRole("button", { name: "Add field" }).click()
    await form.getByRole("button", { name: "Create contact" }).click()
    await form.getByText("A field needs a name").waitFor()
    await form.getByLabel("Field name").fill("plan")
    await form.getByLabel("Value of plan").fill("team")
    await form.getByRole("button", { name: "Add field" }).click()
    await form.getByLabel("Field name").nth(1).fill("seats")
    await form.getByLabel("Type of seats").selectOption("number")
    await form.getByLabel("Value of seats").fill("12")
    await check(page, "contact-add-data-1280")
    await form.getByRole("button", { name: "Create contact" }).click()
    await heading(page, "new-with-data@example.com")
    const [created] = (await env.call("GET", "/contacts?search=new-with-data")).data
    expect(created.data).toEqual({ plan: "team", seats: 12 })
  })

  it("filters the table by segment, subscription and a custom field's value, kept in the URL", async () => {
    const segment = await env.call("POST", "/segments", {
      name: "Pro plan",
      condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] }
    })
    const page = await env.page()
    await page.goto(projectPath("/contacts"))
    await heading(page, "Contacts")
    const emails = () => page.getByRole("table", { name: "Contacts" }).locator("tbody tr td:nth-child(2)").allInnerTexts()
    await page.getByLabel("Segment", { exact: true }).selectOption({ label: "Pro plan" })
    await expect.poll(async () => (await emails()).sort()).toEqual(["member-0@example.com", "member-1@example.com"])
    expect(new URL(page.url()).searchParams.get("segment")).toBe(segment.id)
    await page.getByLabel("Subscription").selectOption("true")
    await expect.poll(emails).toEqual(["member-0@example.com"])

    await page.getByLabel("Segment", { exact: true }).selectOption("")
    await page.getByLabel("Subscription").selectOption("")
    await page.getByLabel("Custom field").selectOption({ label: "plan" })
    await expect.poll(async () => (await emails()).length).toBe(5)
    await page.getByLabel("Value of plan").fill("free")
    await expect.poll(async () => (await emails()).sort()).toEqual(["member-2@example.com", "member-3@example.com"])
    await check(page, "contacts-filtered-1280")
    // Reloaded, the filters are still there.
    await page.reload()
    await expect.poll(async () => (await emails()).sort()).toEqual(["member-2@example.com", "member-3@example.com"])
    expect(await page.getByLabel("Value of plan").inputValue()).toBe("free")

    // At 390 px the filters stack, with no sideways scrolling.
    const phone = await env.page({ viewport: PHONE })
    await phone.goto(page.url())
    await expect.poll(async () => (await phone.getByRole("link", { name: /@example\.com$/ }).allInnerTexts()).sort())
      .toEqual(["member-2@example.com", "member-3@example.com"])
    expect(await scrollsSideways(phone)).toBe(false)
    await screenshot(phone, "contacts-filtered-390")
  })
})

describe("campaigns", () => {
  it("composes in the template editor with its preview, then shows a draft's and a sent campaign's body and recipients", {
    timeout: 90_000
  }, async () => {
    const readers = await env.call("POST", "/segments", { name: "Spring readers", type: "STATIC" })
    await env.call("POST", `/segments/${readers.id}/members`, { emails: ["member-2@example.com", "member-3@example.com"] })
    const page = await env.page()
    await page.goto(projectPath("/campaigns/new"))
    await heading(page, "New campaign")
    await page.getByLabel("Name", { exact: true }).fill("Spring news")
    await page.getByLabel("Subject", { exact: true }).fill("Spring for {{ firstName }}")
    await page.getByLabel("From address").fill("news@acme.test")
    // The body in CodeMirror, as in the template editor; the preview follows the typing.
    // Half-typed Liquid does not render: the preview answers 422 while typing.
    env.allowConsoleErrors(page, /status of 422/)
    const editor = page.getByTestId("code-editor").locator(".cm-content")
    await editor.click()
    await page.keyboard.press("ControlOrMeta+a")
    await page.keyboard.press("Delete")
    // The HTML mode closes the tag as it is opened: "<p>" brings its "</p>".
    await editor.pressSequentially("<p>Blossoms for {{ firstName }}")
    const frame = page.frameLocator('iframe[title="Rendered body"]')
    await frame.getByText("Blossoms for Jane").waitFor()
    await page.getByRole("combobox", { name: "For" }).selectOption({ label: "member-2@example.com" })
    await frame.getByText("Blossoms for Member 2").waitFor()
    await page.getByRole("radio", { name: "A segment" }).check()
    await page.getByLabel("Segment", { exact: true }).selectOption(readers.id)
    await expect.poll(() => page.getByTestId("live-count").innerText(), { timeout: 10_000 }).toBe("2")
    await check(page, "campaign-compose-editor-1280", page.getByRole("region", { name: "Preview" }))

    // Unsaved, leaving asks; saving leads to the draft's page without asking.
    await nav(page, "Campaigns").click()
    await page.getByRole("dialog", { name: "Leave without saving?" }).getByRole("button", { name: "Cancel" }).click()
    await page.getByRole("button", { name: "Save draft" }).click()
    await heading(page, "Spring news")

    // The draft: its body rendered, its source, and who it would go to now.
    const message = page.getByRole("region", { name: "Message" })
    await message.frameLocator('iframe[title="Rendered body"]').getByText("Blossoms for Jane").waitFor()
    await message.getByText("Source (HTML with Liquid)").click()
    expect(await page.getByTestId("campaign-source").innerText()).toBe("<p>Blossoms for {{ firstName }}</p>")
    const recipients = page.getByRole("region", { name: "Recipients" })
    await recipients.getByText("Sent now, it would go to 2 contacts.").waitFor()
    expect((await recipients.getByRole("table").locator("tbody tr").allInnerTexts()).map((row) => row.trim())).toEqual([
      "member-2@example.com",
      "member-3@example.com"
    ])
    await check(page, "campaign-draft-recipients-1280", recipients)

    // Sent: the frozen recipients with their mail's status.
    await page.getByRole("button", { name: "Send now" }).click()
    await page.getByRole("dialog", { name: /Send/ }).getByRole("button", { name: /Send/ }).click()
    await expect.poll(() => page.getByTestId("campaign-status").innerText(), { timeout: 20_000 }).toBe("sent")
    await recipients.getByText("2 contacts in the audience when sending started.").waitFor()
    await expect.poll(() => recipients.getByRole("table").locator("tbody tr").allInnerTexts(), { timeout: 10_000 })
      .toEqual([expect.stringMatching(/member-2@example\.com\s+sent/), expect.stringMatching(/member-3@example\.com\s+sent/)])
    await check(page, "campaign-sent-recipients-1280", recipients)
    const phone = await env.page({ viewport: PHONE })
    await phone.goto(page.url())
    await phone.getByRole("region", { name: "Recipients" }).getByText("2 contacts in the audience when sending started.").waitFor()
    expect(await scrollsSideways(phone)).toBe(false)
  })
})

describe("home", () => {
  it("shows the last two weeks as charts and the recent activity", async () => {
    const page = await env.page()
    await page.goto(projectPath())
    await heading(page, "Home")
    await page.getByRole("img", { name: /^Mail per day in / }).waitFor()
    await page.getByRole("img", { name: /^Contacts per day in / }).waitFor()
    // Every contact was made today; the mail is what the campaign test sent, if it ran.
    const { total } = await env.call("GET", "/contacts?limit=1")
    await expect.poll(() => page.getByTestId("home-contact-totals").innerText()).toBe(`${total} new · 0 unsubscribed`)
    const { sentCount } = (await env.call("GET", "/campaigns?status=SENT")).data.reduce(
      (sum: { sentCount: number }, campaign: { sentCount: number }) => ({ sentCount: sum.sentCount + campaign.sentCount }),
      { sentCount: 0 }
    )
    await expect.poll(() => page.getByTestId("home-mail-totals").innerText()).toMatch(new RegExp(`^${sentCount} sent · `))
    const recent = page.getByRole("list", { name: "Recent activity" })
    await recent.waitFor()
    expect(await recent.locator("li").count()).toBeGreaterThan(0)
    expect(await recent.locator("li").count()).toBeLessThanOrEqual(8)
    await check(page, "home-charts-1280", page.getByRole("heading", { name: "Last two weeks" }))
  })
})
