/// <reference lib="dom" />
/**
 * Campaigns in a real Chromium against a real stack that sends into an in-process SMTP server: compose
 * a campaign (audience: a filter built with the condition builder, then a segment, each with its live
 * recipient count), send a test, send it now after confirming, watch the progress bar reach the end,
 * and see the outcome count an open fired by fetching the tracking pixel of a received mail; duplicate.
 * With SMTP configured, a template from an unverified domain gets a 403 naming it, linked to Domains, and an unverified user is asked to verify their email (without it, nothing could reach them).
 * Screenshots: see support/browser.ts.
 */
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, verifyDomain } from "../support/mail.ts"
import { startSmtpSink, type SmtpSink } from "../support/smtp.ts"
import { heading, PHONE, screenshot, scrollsSideways, useBrowser } from "./support/browser.ts"

// The stack's mail settings are filled in before useBrowser's beforeAll reads them (hooks run in order).
// With SMTP_URL set the platform's own mail (the owner's verification link) goes to the sink too: each
// message is also filed in the harness's outbox, as the file transport would, where the harness reads it.
const mailEnv: Record<string, string> = {}
let smtp: SmtpSink
let filing: ReturnType<typeof setInterval> | undefined
beforeAll(async () => {
  smtp = await startSmtpSink()
  const port = await freePort()
  Object.assign(mailEnv, { SMTP_URL: smtp.url, SEND_RATE_PER_SECOND: "0", PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` })
  let filed = 0
  filing = setInterval(() => {
    const outbox = env.outbox
    while (outbox && filed < smtp.messages.length) {
      filed++
      writeFileSync(join(outbox, `smtp-${filed}.eml`), smtp.messages[filed - 1]!.raw)
    }
  }, 50)
})
afterAll(async () => {
  clearInterval(filing)
  await smtp?.close()
})

const env = useBrowser({ env: mailEnv })
const projectPath = (path = "") => `/p/${env.project.id}${path}`
const email = (index: number) => `reader-${index}@example.com`
let segmentId: string
const mailTo = (to: RegExp) => smtp.messages.filter((mail) => mail.envelopeTo.some((address) => to.test(address)))

beforeAll(async () => {
  await verifyDomain({ api: env.api, dns: env.dns }, env.project.secretKey, "acme.test")
  for (let index = 0; index < 6; index++) {
    await env.call("POST", "/contacts", { email: email(index), data: { plan: index < 4 ? "pro" : "free", firstName: `Reader ${index}` } })
  }
  const segment = await env.call("POST", "/segments", { name: "Early readers", type: "STATIC" })
  segmentId = segment.id
  await env.call("POST", `/segments/${segmentId}/members`, { emails: [email(0), email(1), email(2)] })
}, 60_000)

describe("campaigns", () => {
  it("composes a campaign to a segment, tests it, sends it with the progress bar reaching the end, and counts an open", async () => {
    const page = await env.page()
    await page.goto(projectPath("/campaigns"))
    await heading(page, "Campaigns")
    await page.getByText("No campaigns yet").waitFor()
    await page.getByRole("link", { name: "New campaign" }).click()
    await heading(page, "New campaign")
    await page.getByLabel("Name", { exact: true }).fill("November news")
    await page.getByLabel("Subject", { exact: true }).fill('News for {{ firstName ?? "you" }}')
    await page.getByLabel("From address").fill("news@acme.test")
    await page.getByTestId("preview-subject").getByText("News for Jane").waitFor()

    // Every contact, then a filter built with the builder (plan = pro), then the segment: the count follows.
    await expect.poll(() => page.getByTestId("live-count").innerText(), { timeout: 10_000 }).toBe("6")
    await page.getByRole("radio", { name: "Contacts matching a filter" }).check()
    const filter = page.locator('[data-path="audienceCondition.groups[0].filters[0]"]')
    await filter.getByLabel("Field type").selectOption("data")
    await filter.getByLabel("Data key").fill("plan")
    await filter.getByLabel("Operator").selectOption("equals")
    await filter.getByLabel("Value type").selectOption("text")
    await filter.getByLabel("Value", { exact: true }).fill("pro")
    await expect.poll(() => page.getByTestId("live-count").innerText(), { timeout: 10_000 }).toBe("4")
    await page.getByRole("radio", { name: "A segment" }).check()
    await page.getByLabel("Segment", { exact: true }).selectOption(segmentId)
    await expect.poll(() => page.getByTestId("live-count").innerText(), { timeout: 10_000 }).toBe("3")
    await page.evaluate(() => document.querySelector("section[aria-label=Audience]")?.scrollIntoView())
    await screenshot(page, "campaign-compose-1280")
    await page.getByRole("button", { name: "Save draft" }).click()
    await heading(page, "November news")
    const campaignId = new URL(page.url()).pathname.split("/").pop()!
    expect(await env.call("GET", `/campaigns/${campaignId}`)).toMatchObject({
      status: "DRAFT",
      audienceType: "SEGMENT",
      segmentId,
      audienceCondition: null
    })

    await page.getByLabel("Test address").fill("tester@example.com")
    await page.getByRole("button", { name: "Send test" }).click()
    await page.getByText("Test sent to tester@example.com").waitFor()
    await expect.poll(() => mailTo(/^tester@/).map((mail) => mail.parsed.subject), { timeout: 15_000 }).toEqual(["[Test] News for you"])
    await page.getByTestId("recipient-count").getByText("3").waitFor()

    await page.getByRole("button", { name: "Send now…" }).click()
    const dialog = page.getByRole("dialog", { name: "Send November news now?" })
    await dialog.getByText("3 recipients").waitFor()
    await dialog.getByRole("button", { name: "Send now" }).click()
    const bar = page.getByRole("progressbar", { name: "Sending progress" })
    await bar.waitFor()
    await expect.poll(async () => [await bar.getAttribute("aria-valuenow"), await bar.getAttribute("aria-valuemax")], { timeout: 20_000 })
      .toEqual(["3", "3"])
    await expect.poll(() => page.getByTestId("campaign-status").innerText(), { timeout: 20_000 }).toBe("sent")
    expect(await page.getByTestId("progress-sent").innerText()).toBe("3")
    await expect.poll(() => mailTo(/^reader-/).map((mail) => mail.envelopeTo[0]).sort(), { timeout: 15_000 }).toEqual([
      email(0),
      email(1),
      email(2)
    ])
    const mails = mailTo(/^reader-/)
    expect(mails.map((mail) => mail.parsed.subject).sort()).toEqual(["News for Reader 0", "News for Reader 1", "News for Reader 2"])

    // Fetch one recipient's tracking pixel: the outcome counts the open.
    const pixel = String(mails[0]!.parsed.html).match(/src="([^"]+\.gif)"/)![1]!
    expect((await fetch(pixel)).headers.get("content-type")).toBe("image/gif")
    await expect.poll(async () => (await env.call("GET", `/campaigns/${campaignId}/stats`)).opened, { timeout: 15_000 }).toBe(1)
    await expect.poll(() => page.getByTestId("figure-opened").innerText(), { timeout: 15_000 }).toBe("1")
    // Another recipient unsubscribes with their mail's one-click link: the outcome counts the campaign's opt-out
    // (unsubscribedCount), as the reference's campaign stats do.
    const unsubscribeUrl = mails[1]!.parsed.headerLines.find((line) => line.key === "list-unsubscribe")!.line.match(/<([^>]+)>/)![1]!
    const oneClick = await fetch(unsubscribeUrl, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "List-Unsubscribe=One-Click"
    })
    expect(oneClick.status).toBe(200)
    expect((await env.call("GET", `/campaigns/${campaignId}/stats`)).unsubscribedCount).toBe(1)
    await expect.poll(() => page.getByTestId("figure-unsubscribes").innerText(), { timeout: 15_000 }).toBe("1")
    await page.getByRole("img", { name: /Opens 1/ }).locator("canvas").waitFor()
    await page.evaluate(() => document.querySelector("section[aria-label=Progress]")?.scrollIntoView())
    await screenshot(page, "campaign-sent-1280")

    const phone = await env.page({ viewport: PHONE })
    await phone.goto(projectPath(`/campaigns/${campaignId}`))
    await heading(phone, "November news")
    await phone.getByTestId("figure-opened").getByText("1").waitFor()
    expect(await scrollsSideways(phone)).toBe(false)
    await screenshot(phone, "campaign-sent-390")
    await phone.goto(projectPath("/campaigns"))
    await phone.getByRole("table", { name: "Campaigns" }).getByText("November news").waitFor()
    expect(await scrollsSideways(phone)).toBe(false)

    // Duplicate: a new draft with the same content and audience, opened for editing.
    await page.getByRole("button", { name: "Duplicate" }).click()
    await heading(page, /^Edit /)
    const copies = (await env.call("GET", "/campaigns?status=DRAFT")).data
    expect(copies).toHaveLength(1)
    expect(copies[0]).toMatchObject({ subject: 'News for {{ firstName ?? "you" }}', segmentId })
    await page.getByRole("link", { name: "Back to the campaign" }).click()
    await page.goto(projectPath("/campaigns"))
    await page.getByRole("button", { name: "Sent" }).click()
    await page.waitForFunction(() => document.querySelectorAll("table[aria-label=Campaigns] tbody tr").length === 1)
    expect(new URL(page.url()).searchParams.get("status")).toBe("SENT")
    await screenshot(page, "campaigns-1280")
  }, 55_000)

  it("cancels a scheduled campaign back to a draft, which can then be deleted (only drafts can)", async () => {
    const created = await env.call("POST", "/campaigns", {
      name: "Spring teaser",
      subject: "Soon",
      body: "<p>Soon</p>",
      from: "news@acme.test",
      audienceType: "SEGMENT",
      segmentId
    })
    const id = created.data.id
    await env.call("POST", `/campaigns/${id}/send`, { scheduledFor: new Date(Date.now() + 86_400_000).toISOString() })
    const page = await env.page()
    await page.goto(projectPath(`/campaigns/${id}`))
    await heading(page, "Spring teaser")
    await expect.poll(() => page.getByTestId("campaign-status").innerText()).toBe("scheduled")
    expect(await page.getByRole("button", { name: "Delete" }).count()).toBe(0)
    await page.getByRole("button", { name: "Cancel schedule" }).click()
    const dialog = page.getByRole("dialog", { name: "Cancel Spring teaser?" })
    await dialog.getByText("it goes back to a draft").waitFor()
    await screenshot(page, "campaign-unschedule-1280")
    await dialog.getByRole("button", { name: "Cancel schedule" }).click()
    await expect.poll(() => page.getByTestId("campaign-status").innerText(), { timeout: 10_000 }).toBe("draft")
    expect(await env.call("GET", `/campaigns/${id}`)).toMatchObject({ status: "DRAFT", scheduledFor: null })
    await page.getByRole("button", { name: "Delete" }).waitFor()
  }, 30_000)

  it("asks a user who has not verified their email to verify it: with SMTP the verification mail reaches them", async () => {
    const user = await env.signUp("unverified@example.com")
    const page = await env.page({ user })
    await page.goto("/p")
    await heading(page, "Projects")
    await page.getByText("Your email address is not verified yet").waitFor()
    await page.getByRole("link", { name: "Verify it" }).waitFor()
  })
})

// Here because it needs a relay: under local delivery (no SMTP_URL) any sender domain is accepted.
describe("a sender domain not verified, with a relay", () => {
  it("a template from an unverified domain: the 403 names the domain and links to the Domains page", async () => {
    const page = await env.page()
    env.allowConsoleErrors(page, /status of 403/)
    await page.goto(projectPath("/templates/new"))
    await heading(page, "New template")
    await page.getByLabel("Name", { exact: true }).fill("Welcome")
    await page.getByLabel("From", { exact: true }).fill("hello@unverified.acme.test")
    await page.getByRole("button", { name: "Create template" }).click()
    const alert = page.getByRole("alert").filter({ hasText: "unverified.acme.test" })
    await alert.getByText("The domain unverified.acme.test is not verified for this project").waitFor()
    expect(await alert.innerText()).not.toContain("INTERNAL_SERVER_ERROR")
    await alert.scrollIntoViewIfNeeded()
    await screenshot(page, "error-unverified-domain-1280")
    await alert.getByRole("link", { name: /unverified\.acme\.test/ }).click()
    // The template is not saved: leaving for Domains asks first (the unsaved-edits warning).
    await page.getByRole("dialog", { name: "Leave without saving?" }).getByRole("button", { name: "Leave without saving" }).click()
    await heading(page, "Domains")
    expect(new URL(page.url()).pathname).toBe(projectPath("/domains"))
  })
})
