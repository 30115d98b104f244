/// <reference lib="dom" />
/**
 * The Analytics and Activity pages in a real Chromium against a real stack (api and worker): mail sent
 * through /v1/send shows in today's bucket of a non-UTC zone (where today is not UTC's today for most
 * of the day), per domain and in the overview, and nowhere under another stream; the activity feed lists
 * what happened, filters it by type, and says "N new" when an event is tracked while it is open; a
 * workflow's delay shows as upcoming. Screenshots: see support/browser.ts.
 */
import { beforeAll, describe, expect, it } from "vitest"
import { heading, PHONE, screenshot, scrollsSideways, useBrowser } from "./support/browser.ts"

const env = useBrowser()
const projectPath = (path = "") => `/p/${env.project.id}${path}`
const ZONE = "Pacific/Kiritimati"
const SENT = ["ana@example.com", "ben@example.com", "cy@example.org"]

/** Today's date in the zone. */
const todayIn = (tz: string) =>
  new Intl.DateTimeFormat("en-CA", { timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit" }).format(new Date())

const eventually = async <A>(check: () => Promise<A | undefined>, what: string, ms = 20_000): Promise<A> => {
  const deadline = Date.now() + ms
  for (;;) {
    const found = await check()
    if (found !== undefined) return found
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

beforeAll(async () => {
  const domain = await env.call("POST", "/domains", { domain: "stats.acme.test" })
  const dkim = domain.records.find((record: { purpose: string }) => record.purpose === "DKIM")
  env.dns.addTxt(dkim.name, dkim.value)
  expect((await env.call("GET", `/domains/${domain.id}/verify`)).status).toBe("VERIFIED")
  for (const to of SENT) {
    await env.call("POST", "/v1/send", { to, from: "hello@stats.acme.test", subject: "Your receipt", body: "<p>Thanks</p>" })
  }
  // The sends are counted once the worker has sent them.
  await eventually(async () => {
    const overview = await env.call("GET", `/analytics/overview?tz=${encodeURIComponent(ZONE)}`)
    return overview.current.sent === SENT.length ? overview : undefined
  }, "the sends to be counted")
  // A workflow whose one-day delay is upcoming once its event is tracked.
  const workflow = await env.call("POST", "/workflows", { name: "Nurture", eventName: "joined" })
  const delay = await env.call("POST", `/workflows/${workflow.id}/steps`, {
    type: "DELAY",
    name: "A day later",
    config: { amount: 1, unit: "days" }
  })
  await env.call("POST", `/workflows/${workflow.id}/transitions`, { fromStepId: workflow.steps[0].id, toStepId: delay.id })
  await env.call("PATCH", `/workflows/${workflow.id}`, { enabled: true })
}, 60_000)

describe("the analytics page", () => {
  it("shows the sends in today's bucket of a non-UTC zone, per domain, and none under another stream", async () => {
    const page = await env.page()
    await page.goto(projectPath("/analytics?range=7d"))
    await heading(page, "Analytics")
    await page.getByLabel("Time zone").selectOption(ZONE)
    expect(new URL(page.url()).searchParams.get("tz")).toBe(ZONE)
    const today = todayIn(ZONE)
    await page.getByTestId("range-label").getByText(`to ${today} in ${ZONE}`).waitFor()
    await page.getByTestId("overview-sent").getByText(String(SENT.length), { exact: true }).waitFor()

    // The chart drew, and its figures put the sends on the zone's today.
    await page.getByRole("img", { name: `Mail per day in ${ZONE}` }).locator("canvas").waitFor()
    await page.getByText("Figures per day").click()
    const buckets = page.getByRole("table", { name: "Mail per bucket" })
    const rows = await buckets.locator("tbody tr").allInnerTexts()
    expect(rows).toHaveLength(7)
    expect(rows.at(-1)).toMatch(new RegExp(`^${today}\\s+${SENT.length}\\s`))
    for (const row of rows.slice(0, -1)) expect(row).toMatch(/^\d{4}-\d{2}-\d{2}\s+0\s/)

    const domains = await page.getByRole("table", { name: "Deliverability by domain" }).locator("tbody tr").allInnerTexts()
    expect(domains.map((row) => row.split(/\s+/).slice(0, 2).join(" "))).toEqual(["example.com 2", "example.org 1"])
    await page.getByText("No campaign mail in this range").waitFor()
    await page.getByRole("table", { name: /First opens by weekday and hour/ }).waitFor()
    await page.setViewportSize({ width: 1280, height: 1900 })
    await page.evaluate(() => window.scrollTo(0, 0))
    await screenshot(page, "analytics-1280")

    // Today alone: hourly buckets of the zone's day.
    await page.getByLabel("Range", { exact: true }).selectOption("today")
    await page.getByText("Figures per hour").click()
    const hours = page.getByRole("table", { name: "Mail per bucket" }).locator("tbody tr")
    await expect.poll(() => hours.count()).toBe(24)
    expect((await hours.first().innerText()).startsWith(`${today}T00:00`)).toBe(true)

    // The transactional sends are not campaign mail.
    await page.getByLabel("Stream").selectOption("CAMPAIGN")
    await page.getByTestId("overview-sent").getByText("0", { exact: true }).waitFor()

    const phone = await env.page({ viewport: PHONE })
    await phone.goto(projectPath(`/analytics?range=7d&tz=${encodeURIComponent(ZONE)}`))
    await heading(phone, "Analytics")
    await phone.getByTestId("overview-sent").getByText(String(SENT.length), { exact: true }).waitFor()
    await phone.getByRole("img", { name: /Mail per day/ }).locator("canvas").waitFor()
    await phone.getByRole("table", { name: /First opens by weekday and hour/ }).waitFor()
    expect(await scrollsSideways(phone)).toBe(false)
    await phone.getByRole("region", { name: "Mail over time" }).evaluate((element) => element.scrollIntoView())
    await screenshot(phone, "analytics-390")
  }, 40_000)

  it("shows a bad zone's error with its message and request id", async () => {
    const page = await env.page()
    env.allowConsoleErrors(page, /status of 422/)
    await page.goto(projectPath("/analytics?tz=Mars/Olympus_Mons"))
    const failure = page.getByRole("region", { name: "Overview" }).getByRole("alert")
    await failure.waitFor()
    expect(await failure.innerText()).toContain("422")
    expect(await failure.getByTestId("request-id").innerText()).toMatch(/^req_[\w-]+$/)
  })
})

describe("the activity page", () => {
  it("lists what happened, filters by type, says N new after a tracked event and shows the workflow's delay as upcoming", async () => {
    const page = await env.page()
    await page.goto(projectPath("/activity"))
    await heading(page, "Activity")
    const feed = page.getByRole("list", { name: "Activity feed" })
    await feed.getByText("email sent").first().waitFor()
    await page.getByRole("list", { name: "Upcoming" }).or(page.getByText("Nothing due")).first().waitFor()
    expect(await page.getByText("Nothing due").count()).toBe(1)

    // An event tracked while the page is open: the polled count says so; showing it puts it on top.
    await env.call("POST", "/v1/track", { event: "joined", email: "new@example.com", data: { plan: "pro" } }, env.project.publicKey)
    const fresh = page.getByTestId("new-activity")
    await fresh.waitFor({ timeout: 15_000 })
    expect(await fresh.innerText()).toMatch(/^\d+ new items?: show$/)
    await fresh.click()
    await fresh.waitFor({ state: "detached" })
    await feed.getByText("joined").waitFor()
    // The workflow it triggered waits a day: that is upcoming.
    await page.getByRole("list", { name: "Upcoming" }).getByText("A day later").waitFor({ timeout: 15_000 })
    await screenshot(page, "activity-1280")

    // Filter by type: only the custom events.
    await page.locator("fieldset label", { hasText: "custom event" }).click()
    expect(new URL(page.url()).searchParams.get("types")).toBe("event")
    // Polled until the filtered list has arrived (an empty list in between would pass an `every`).
    await expect.poll(async () => {
      const texts = await feed.locator("li").allInnerTexts()
      return texts.length === 1 && texts[0]!.startsWith("custom event")
    }).toBe(true)

    const phone = await env.page({ viewport: PHONE })
    await phone.goto(projectPath("/activity"))
    await heading(phone, "Activity")
    await phone.getByRole("list", { name: "Activity feed" }).getByText("joined").waitFor()
    expect(await scrollsSideways(phone)).toBe(false)
    await screenshot(phone, "activity-390")
  }, 40_000)
})
