/// <reference lib="dom" />
/**
 * Event destinations in a real Chromium against a real stack, delivering to a real HTTP receiver on
 * 127.0.0.2 (the one private address the stack may reach, WEBHOOK_ALLOW_CIDRS): a destination made on
 * the page (field errors at their fields, the signing secret shown once and copied), a test event whose
 * outcome shows and which reaches the receiver signed with that secret, a /v1/track event delivered and
 * found in the log (opened for its webhook-id and answer, sent again with the same webhook-id), the
 * status filter, a range replay, the secret rotated with an overlap (deliveries signed with both); and a
 * destination the service disabled after failures: the banner on the project's pages, the flag in the
 * list, re-enabling it, editing and deleting it. axe on every page. Screenshots: see support/browser.ts.
 */
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { verifyWebhook } from "../../src/lib/standardWebhooks.ts"
import { seriousAxeFindings } from "./support/axe.ts"
import { heading, PHONE, screenshot, screenshotDir, scrollsSideways, useBrowser } from "./support/browser.ts"

// Retries 100 ms apart, doubling: three failed attempts of one event take well under a second.
const env = useBrowser({
  env: { WEBHOOK_ALLOW_CIDRS: "127.0.0.2/32", DESTINATION_DISABLE_AFTER_FAILURES: "3", DESTINATION_RETRY_BASE_MS: "100" }
})
const projectPath = (path = "") => `/p/${env.project.id}${path}`

interface Received {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

/** The receiver: `/ok…` answers 200 with a small JSON body, `/down…` 500 until it has `recovered`. */
const received: Array<Received> = []
let recovered = false
let receiverUrl = ""
const receiver = createServer((request, response) => {
  const chunks: Array<Buffer> = []
  request.on("data", (chunk: Buffer) => chunks.push(chunk))
  request.on("end", () => {
    received.push({ path: request.url ?? "", headers: request.headers, body: Buffer.concat(chunks).toString("utf8") })
    if (request.url?.startsWith("/ok") || recovered) {
      response.writeHead(200, { "content-type": "application/json" })
      response.end(JSON.stringify({ received: true }))
    } else {
      response.writeHead(500, { "content-type": "text/plain" })
      response.end("receiver is down")
    }
  })
})

beforeAll(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.2", resolve))
  receiverUrl = `http://127.0.0.2:${(receiver.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())))

/** The requests the receiver got of event `type`, once there are `count`. */
const receivedOf = async (type: string, count = 1) => {
  const matching = () => received.filter((entry) => JSON.parse(entry.body).type === type)
  await expect.poll(() => matching().length, { timeout: 15_000 }).toBeGreaterThanOrEqual(count)
  return matching()
}

const signedWith = (secret: string, request: Received) =>
  verifyWebhook(
    secret,
    String(request.headers["webhook-id"]),
    Number(request.headers["webhook-timestamp"]),
    request.body,
    String(request.headers["webhook-signature"])
  )

/** The log's row of a delivery of event `type` (the newest), once it shows `status`. */
const deliveryRow = async (page: Page, type: string, status: string) => {
  const row = page.getByTestId("delivery").filter({ hasText: type }).filter({ hasText: status }).first()
  await row.waitFor({ timeout: 15_000 })
  return row
}

describe("event destinations", () => {
  it("are made on the page, tested, receive a tracked event, are replayed and have their secret rotated", async () => {
    const page = await env.page()
    await page.goto(projectPath())
    await heading(page, "Home")
    await page.getByRole("navigation", { name: "Project" }).getByRole("link", { name: "Destinations" }).click()
    await heading(page, "Destinations")
    await page.getByText("No destinations yet").waitFor()
    expect(await seriousAxeFindings(page)).toEqual([])

    await page.getByRole("button", { name: "New destination" }).first().click()
    const form = page.getByRole("form", { name: "Create destination" })
    // A pattern the contract refuses is named at the typed field, and not added.
    const typed = form.getByLabel("Other event or pattern")
    await typed.fill("order placed!")
    await typed.press("Enter")
    await form.getByText(/order placed!: tokens separated by dots/).waitFor()
    expect(await form.getByRole("list", { name: "Other events" }).count()).toBe(0)
    await typed.fill("order-placed")
    await typed.press("Enter")
    await form.getByRole("list", { name: "Other events" }).getByText("order-placed").waitFor()
    await form.getByRole("checkbox", { name: /Segment entries/ }).check()
    // An address that is not http(s): the contract's message at the URL field, nothing created.
    await form.getByLabel("Endpoint URL").fill("ftp://files.example.com/in")
    await form.getByRole("button", { name: "Create destination" }).click()
    const urlError = form.getByRole("alert").filter({ hasText: /http\(s\) URL/ })
    await urlError.waitFor()
    expect(await form.getByLabel("Endpoint URL").getAttribute("aria-invalid")).toBe("true")
    expect((await env.call("GET", "/destinations")).data).toEqual([])
    await screenshot(page, "destinations-new-errors-1280")

    await form.getByLabel("Endpoint URL").fill(`${receiverUrl}/ok`)
    await form.getByLabel("Description (optional)").fill("Order service")
    await form.getByRole("button", { name: "Create destination" }).click()
    const secret = await page.getByTestId("signing-secret").innerText()
    expect(secret).toMatch(/^whsec_/)
    await page.getByRole("button", { name: "Copy signing secret" }).click()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret)
    // (Until it says Copy again, the button's name and text differ: axe would flag that.)
    await page.getByRole("button", { name: "Copy signing secret" }).getByText("Copy", { exact: true }).waitFor()
    const table = page.getByRole("table", { name: "Destinations" })
    await table.getByRole("link", { name: `${receiverUrl}/ok` }).waitFor()
    expect(await table.getByRole("list", { name: "Events" }).getByRole("listitem").allInnerTexts()).toEqual([
      "order-placed",
      "segment.*.entry"
    ])
    await table.getByText("enabled", { exact: true }).waitFor()
    await screenshot(page, "destinations-created-1280")
    expect(await seriousAxeFindings(page)).toEqual([])
    const [created] = (await env.call("GET", "/destinations")).data
    expect(created).toMatchObject({ url: `${receiverUrl}/ok`, events: ["order-placed", "segment.*.entry"], description: "Order service" })

    // The test event: its outcome on the page, the request at the receiver signed with the secret shown.
    await page.getByRole("link", { name: "Open it" }).click()
    await heading(page, "Order service")
    await page.getByRole("button", { name: "Send test event" }).click()
    await page.getByTestId("test-outcome").waitFor()
    expect(await page.getByTestId("test-outcome").innerText()).toMatch(/^The test event was delivered: 200 in \d+ ms$/)
    await page.getByRole("region", { name: "Test event" }).getByText('{"received":true}').waitFor()
    const [test] = await receivedOf("destination.test")
    expect(signedWith(secret, test!)).toBe(true)
    await deliveryRow(page, "destination.test", "succeeded")

    // A tracked event reaches the receiver and shows in the log, where its details name its webhook-id.
    await env.call("POST", "/v1/track", { event: "order-placed", email: "buyer@example.com", data: { total: 42 } }, env.project.publicKey)
    const [order] = await receivedOf("order-placed")
    expect(signedWith(secret, order!)).toBe(true)
    const webhookId = String(order!.headers["webhook-id"])
    const row = await deliveryRow(page, "order-placed", "succeeded")
    expect(await row.innerText()).toMatch(/\b1\b[\s\S]*\b200\b/)
    await row.getByRole("button", { name: /^Details of order-placed delivery/ }).click()
    const details = page.getByRole("region", { name: `Delivery ${webhookId}` })
    await details.getByText(webhookId).waitFor()
    await details.getByText('{"received":true}').waitFor()
    await details.getByRole("link", { name: "Open contact" }).waitFor()
    await screenshot(page, "destination-log-1280")
    await page.screenshot({ path: join(screenshotDir, "destination-log-full-1280.png"), fullPage: true })
    expect(await seriousAxeFindings(page)).toEqual([])

    // Sent again: the same webhook-id reaches the receiver a second time.
    await details.getByRole("button", { name: "Send again" }).click()
    await details.getByText("Queued again with the same webhook-id.").waitFor()
    await expect.poll(() => received.filter((entry) => entry.headers["webhook-id"] === webhookId).length, { timeout: 15_000 }).toBe(2)

    // The status filter: every delivery succeeded, none is parked.
    const status = page.getByLabel("Status", { exact: true })
    await status.selectOption("parked")
    await page.getByText("No parked delivery").waitFor()
    await status.selectOption("succeeded")
    await deliveryRow(page, "order-placed", "succeeded")
    expect(new URL(page.url()).searchParams.get("status")).toBe("succeeded")
    await status.selectOption("")

    // A range replay: the last day's deliveries (the test event and the order) are sent again.
    const before = received.length
    const local = (ms: number) => new Date(ms - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16)
    const replayForm = page.getByRole("form", { name: "Replay a time range" })
    await replayForm.getByLabel("From").fill(local(Date.now() - 3_600_000))
    await replayForm.getByLabel("To").fill(local(Date.now() + 3_600_000))
    await page.getByRole("button", { name: "Replay range" }).click()
    await page.getByText(/^\d+ deliver(y|ies) sent again: follow them in the log\.$/).waitFor()
    const replayed = Number((await page.getByText(/sent again: follow them/).innerText()).split(" ")[0])
    expect(replayed).toBeGreaterThanOrEqual(1)
    await expect.poll(() => received.length - before, { timeout: 15_000 }).toBe(replayed)

    // Rotation with an hour's overlap: the new secret shown once, deliveries signed with both.
    await page.getByRole("button", { name: "Rotate secret" }).click()
    const dialog = page.getByRole("dialog", { name: "Rotate the signing secret?" })
    await dialog.getByLabel("Keep signing with the previous secret too for").selectOption({ label: "1 hour" })
    await screenshot(page, "destination-rotate-1280")
    await dialog.getByRole("button", { name: "Rotate secret" }).click()
    await dialog.waitFor({ state: "hidden" })
    await expect.poll(() => page.getByTestId("signing-secret").innerText(), { timeout: 10_000 }).not.toBe(secret)
    const rotated = await page.getByTestId("signing-secret").innerText()
    expect(rotated).toMatch(/^whsec_/)
    await page.getByText(/deliveries are signed with the previous secret too/).waitFor()
    const tests = (await receivedOf("destination.test")).length
    await page.getByRole("button", { name: "Send test event" }).click()
    await page.getByTestId("test-outcome").waitFor()
    expect(await page.getByTestId("test-outcome").innerText()).toMatch(/delivered: 200/)
    const afterRotation = (await receivedOf("destination.test", tests + 1)).at(-1)!
    expect(signedWith(rotated, afterRotation)).toBe(true)
    expect(signedWith(secret, afterRotation)).toBe(true)
    expect(String(afterRotation.headers["webhook-signature"]).split(" ")).toHaveLength(2)
    await screenshot(page, "destination-rotated-1280")
    expect(await seriousAxeFindings(page)).toEqual([])

    // On a phone the page stays within the screen (the log scrolls in its own box).
    await page.setViewportSize(PHONE)
    await screenshot(page, "destination-390")
    await page.screenshot({ path: join(screenshotDir, "destination-full-390.png"), fullPage: true })
    expect(await scrollsSideways(page)).toBe(false)
  }, 120_000)

  it("disabled after failures: a banner on the project's pages, flagged in the list, re-enabled, edited and deleted", async () => {
    const failing = await env.call("POST", "/destinations", {
      url: `${receiverUrl}/down`,
      events: ["email.*", "invoice-failed"],
      description: "Billing hook"
    })
    // A test event is never retried (failed, it is parked at once), nor counted towards disabling.
    expect((await env.call("POST", `/destinations/${failing.id}/test`)).status).toBe("parked")
    // A real event's attempts are: three failed in a row (DESTINATION_DISABLE_AFTER_FAILURES) disable it.
    await env.call("POST", "/v1/track", { event: "invoice-failed", email: "payer@example.com" }, env.project.publicKey)
    await expect.poll(async () => (await env.call("GET", `/destinations/${failing.id}`)).disabledReason, { timeout: 20_000 }).toBe(
      "failures"
    )

    const page = await env.page()
    await page.goto(projectPath("/contacts"))
    await heading(page, "Contacts")
    const banner = page.getByTestId("destinations-disabled")
    await banner.getByText("An event destination was disabled").waitFor()
    expect(await banner.innerText()).toContain(`${receiverUrl}/down`)
    await screenshot(page, "destinations-banner-1280")
    await page.goto(projectPath("/destinations"))
    await heading(page, "Destinations")
    const row = page.getByRole("table", { name: "Destinations" }).locator("tr", { hasText: "Billing hook" })
    await row.getByText("disabled after failures").waitFor()
    // The page says it itself: no banner here.
    expect(await banner.count()).toBe(0)
    await screenshot(page, "destinations-disabled-1280")

    await row.getByRole("link", { name: `${receiverUrl}/down` }).click()
    await heading(page, "Billing hook")
    const alert = page.getByRole("alert").filter({ hasText: "Disabled automatically" })
    await alert.getByText(/after 3 failed attempts in a row/).waitFor()
    // The failing event is in the log, with its attempts and what the endpoint answered.
    const failed = await deliveryRow(page, "invoice-failed", "failed")
    expect(await failed.innerText()).toMatch(/\b3\b[\s\S]*\b500\b/)
    await failed.getByRole("button", { name: /^Details of/ }).click()
    await page.getByRole("region", { name: /^Delivery / }).getByText("receiver is down").first().waitFor()
    await screenshot(page, "destination-disabled-1280")
    await page.screenshot({ path: join(screenshotDir, "destination-disabled-full-1280.png"), fullPage: true })
    expect(await seriousAxeFindings(page)).toEqual([])
    // The endpoint fixed, re-enabled: the waiting delivery is made, the run of failures ends.
    recovered = true
    await alert.getByRole("button", { name: "Re-enable" }).click()
    await alert.waitFor({ state: "hidden" })
    await deliveryRow(page, "invoice-failed", "succeeded")
    expect(await env.call("GET", `/destinations/${failing.id}`)).toMatchObject({
      enabled: true,
      disabledReason: null,
      consecutiveFailures: 0
    })

    // Edited: the address fixed and a pattern added; leaving with unsaved edits asks first.
    const edit = page.getByRole("form", { name: "Save changes" })
    await edit.getByLabel("Endpoint URL").fill(`${receiverUrl}/ok/billing`)
    await page.getByRole("navigation", { name: "Project" }).getByRole("link", { name: "Home" }).click()
    const leave = page.getByRole("dialog", { name: "Leave without saving?" })
    await leave.getByRole("button", { name: "Cancel" }).click()
    await edit.getByRole("checkbox", { name: /Subscription changes/ }).check()
    await edit.getByRole("button", { name: "Save changes" }).click()
    await page.getByText("Saved: new events follow the new settings.").waitFor()
    expect(await env.call("GET", `/destinations/${failing.id}`)).toMatchObject({
      url: `${receiverUrl}/ok/billing`,
      events: ["email.*", "invoice-failed", "contact.*"]
    })

    await page.getByRole("button", { name: "Delete destination" }).click()
    const confirm = page.getByRole("dialog", { name: "Delete this destination?" })
    await confirm.getByRole("button", { name: "Delete destination" }).click()
    await heading(page, "Destinations")
    await page.getByRole("table", { name: "Destinations" }).waitFor()
    expect(await page.getByRole("table", { name: "Destinations" }).getByText("Billing hook").count()).toBe(0)
    expect((await env.call("GET", "/destinations")).data.map((destination: { id: string }) => destination.id)).not.toContain(failing.id)
  }, 90_000)
})
