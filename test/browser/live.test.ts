/// <reference lib="dom" />
/**
 * Live pages (issue 36): with a page open, a `/v1/track` from outside moves a segment's count, match
 * preview and members within 2 s, and a campaign sent from outside shows its progress step by step and
 * its outcome, all without a reload (a mark set in the page survives). axe on both pages. Screenshots:
 * see support/browser.ts.
 */
import type { Page } from "playwright-core"
import { beforeAll, describe, expect, it } from "vitest"
import { verifyDomain } from "../support/mail.ts"
import { seriousAxeFindings } from "./support/axe.ts"
import { heading, screenshot, useBrowser } from "./support/browser.ts"

const env = useBrowser()
const projectPath = (path = "") => `/p/${env.project.id}${path}`

/** Opens `path` and resolves once the tab's live stream answered (its events can then reach the page). */
const openLive = async (page: Page, path: string, title: string) => {
  const stream = page.waitForResponse((response) =>
    response.url().endsWith(`/projects/${env.project.id}/live`) && response.status() === 200
  )
  await page.goto(projectPath(path))
  await heading(page, title)
  await stream
  // A reload would lose this: the page must change in place.
  await page.evaluate(() => Object.assign(window, { notReloaded: true }))
}

const stillTheSamePage = (page: Page) => page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded === true)

beforeAll(async () => {
  await verifyDomain({ api: env.api, dns: env.dns }, env.project.secretKey, "live.test")
}, 30_000)

describe("live pages", () => {
  it("a segment's count, match preview and members follow a /v1/track from outside within 2 s", async () => {
    // A segment that does not track membership: no segment event reaches stream OUT, the worker's "changed" does.
    const segment = await env.call("POST", "/segments", {
      name: "Live readers",
      condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "live" }] }] }
    })
    const page = await env.page()
    await openLive(page, `/segments/${segment.id}`, "Live readers")
    await page.getByText("No members").waitFor()
    await expect.poll(() => page.getByTestId("live-count").innerText(), { timeout: 10_000 }).toBe("0")
    expect(await page.getByTestId("segment-members").innerText()).toBe("0")
    await screenshot(page, "live-segment-before-1280")

    const started = Date.now()
    await env.call("POST", "/v1/track", { email: "reader@example.com", event: "upgraded", data: { plan: "live" } }, env.project.publicKey)
    await page.getByRole("table", { name: "Members" }).getByRole("link", { name: "reader@example.com" }).waitFor({ timeout: 10_000 })
    await expect.poll(() => page.getByTestId("segment-members").innerText(), { timeout: 10_000 }).toBe("1")
    await expect.poll(() => page.getByTestId("live-count").innerText(), { timeout: 10_000 }).toBe("1")
    const elapsed = Date.now() - started
    expect(elapsed, `updated ${elapsed} ms after the track`).toBeLessThan(2_000)
    expect(await stillTheSamePage(page)).toBe(true)
    await page.getByRole("table", { name: "Members" }).scrollIntoViewIfNeeded()
    await screenshot(page, "live-segment-after-1280")
    expect(await seriousAxeFindings(page)).toEqual([])
  }, 60_000)

  it("a campaign sent from outside shows its progress step by step, then its outcome, without a reload", async () => {
    // Two a second: the six mails take about three seconds, so the bar has steps to show.
    await env.stack.cli("project", "settings", "--id", env.project.id, "--send-rate", "2")
    for (let index = 0; index < 6; index++) await env.call("POST", "/contacts", { email: `fan-${index}@example.com`, data: { fan: true } })
    const created = await env.call("POST", "/campaigns", {
      name: "Live launch",
      subject: "It is live",
      body: "<p>It is live</p>",
      from: "news@live.test",
      audienceType: "FILTERED",
      audienceCondition: { logic: "AND", groups: [{ filters: [{ field: "data.fan", operator: "equals", value: true }] }] }
    })
    const id = created.data.id
    const page = await env.page()
    await openLive(page, `/campaigns/${id}`, "Live launch")
    await expect.poll(() => page.getByTestId("campaign-status").innerText()).toBe("draft")

    // Every value the bar takes, as the page renders it.
    await page.evaluate(() => {
      const seen: Array<string> = []
      Object.assign(window, { progressSeen: seen })
      new MutationObserver(() => {
        const now = document.querySelector("[role=progressbar]")?.getAttribute("aria-valuenow")
        if (now != null && seen[seen.length - 1] !== now) seen.push(now)
      }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["aria-valuenow"] })
    })
    await env.call("POST", `/campaigns/${id}/send`, {})
    await expect.poll(() => page.getByTestId("campaign-status").innerText(), { timeout: 20_000 }).toBe("sent")
    const bar = page.getByRole("progressbar", { name: "Sending progress" })
    await expect.poll(() => bar.getAttribute("aria-valuenow"), { timeout: 10_000 }).toBe("6")
    await expect.poll(() => page.getByTestId("figure-sent").innerText(), { timeout: 10_000 }).toBe("6")
    const seen = await page.evaluate(() => (window as unknown as { progressSeen: Array<string> }).progressSeen)
    // Steps between none and all: the page followed the sending, not just its end.
    expect(seen.filter((value) => value !== "0" && value !== "6").length, `progress seen: ${seen.join(", ")}`).toBeGreaterThan(0)
    expect(await stillTheSamePage(page)).toBe(true)
    await page.evaluate(() => document.querySelector("section[aria-label=Progress]")?.scrollIntoView())
    await screenshot(page, "live-campaign-1280")
    expect(await seriousAxeFindings(page)).toEqual([])
  }, 60_000)

  it("the home page's counts and the activity feed's new items follow tracked events, without a reload", async () => {
    const home = await env.page()
    await openLive(home, "", "Home")
    const contacts = home.getByTestId("count-contacts")
    await expect.poll(() => contacts.innerText(), { timeout: 10_000 }).toMatch(/^\d+$/)
    const before = Number(await contacts.innerText())
    const activity = await env.page()
    await openLive(activity, "/activity", "Activity")
    await env.call("POST", "/v1/track", { email: "newcomer@example.com", event: "signed_up" }, env.project.publicKey)
    await expect.poll(() => contacts.innerText(), { timeout: 5_000 }).toBe(String(before + 1))
    await activity.getByTestId("new-activity").waitFor({ timeout: 5_000 })
    expect(await stillTheSamePage(home)).toBe(true)
    expect(await stillTheSamePage(activity)).toBe(true)
    await screenshot(home, "live-home-1280")
    await screenshot(activity, "live-activity-1280")
    expect(await seriousAxeFindings(home)).toEqual([])
    expect(await seriousAxeFindings(activity)).toEqual([])
  }, 60_000)

  it("the Emails page shows mail sent from outside, and its status moving, without a reload", async () => {
    const page = await env.page()
    await openLive(page, "/emails", "Emails")
    await env.call("POST", "/v1/send", { to: "inbox@example.com", from: "hello@live.test", subject: "Seen live", body: "<p>Hi</p>" })
    const row = page.getByRole("table", { name: "Emails" }).locator("tbody tr", { hasText: "Seen live" })
    await row.waitFor({ timeout: 5_000 })
    await expect.poll(() => row.innerText(), { timeout: 10_000 }).toMatch(/\bsent\b/)
    expect(await stillTheSamePage(page)).toBe(true)
    await screenshot(page, "live-emails-1280")
    expect(await seriousAxeFindings(page)).toEqual([])
  }, 60_000)
})
