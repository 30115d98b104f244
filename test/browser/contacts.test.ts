/// <reference lib="dom" />
/**
 * The dashboard's contact work in a real Chromium against a real stack: importing a CSV (the mapping
 * preview, the progress bar polled from the job to 100 %, the error rows), a contact's page (typed data
 * edits, the subscription switch, segments, workflow executions, delete), the contacts table's custom-field
 * columns, bulk actions on a selection, export and create; a template's image upload; and the first load
 * of the contacts page over 100,000 contacts (timed in the page, printed). Every result is checked
 * through the API, not only on screen. Screenshots: see support/browser.ts.
 */
import { readFile } from "node:fs/promises"
import { createServer } from "node:net"
import { loadavg } from "node:os"
import { join } from "node:path"
import { crc32, deflateSync } from "node:zlib"
import type { Page } from "playwright-core"
import { beforeAll, describe, expect, it } from "vitest"
import { heading, PHONE, screenshot, screenshotDir, scrollsSideways, useBrowser } from "./support/browser.ts"

/**
 * A port free now and below Linux's ephemeral range (32768+), so no other process's port-0 bind takes it
 * while the stack starts (slow on a shared machine).
 */
const quietPort = async (): Promise<number> => {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer().once("error", () => resolve(false)).listen(port, "0.0.0.0", () => server.close(() => resolve(true)))
    })
    if (free) return port
  }
}

// A fixed port, so the public URL of uploaded images is this server's own (the preview loads them).
const port = await quietPort()
const publicUrl = `http://127.0.0.1:${port}`
const env = useBrowser({ env: { PORT: String(port), PUBLIC_URL: publicUrl } })
const projectPath = (path = "") => `/p/${env.project.id}${path}`

/** A solid width × height RGB PNG (big enough to see in the screenshots). */
const solidPng = (width: number, height: number, [r, g, b]: readonly [number, number, number]) => {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4)
    length.writeUInt32BE(data.length)
    const crc = Buffer.alloc(4)
    crc.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type), data])))
    return Buffer.concat([length, Buffer.from(type), data, crc])
  }
  const header = Buffer.alloc(13)
  header.writeUInt32BE(width, 0)
  header.writeUInt32BE(height, 4)
  header.set([8, 2, 0, 0, 0], 8)
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: width }, () => [r, g, b]).flat())])
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(Buffer.concat(Array.from({ length: height }, () => row)))),
    chunk("IEND", Buffer.alloc(0))
  ])
}
const PNG = solidPng(240, 80, [79, 70, 229])

const contactByEmail = async (email: string) =>
  (await env.call("POST", "/contacts/lookup", { emails: [email] })).results[0].contact as { id: string; subscribed: boolean } | null

const getContact = (id: string) => env.call("GET", `/contacts/${id}`)

/** Polls until `check` stops throwing (the worker applies changes asynchronously). */
const eventually = async <A>(check: () => Promise<A>, timeout = 20_000): Promise<A> => {
  const deadline = Date.now() + timeout
  for (;;) {
    try {
      return await check()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
}

const progressOf = (page: Page, label: string) => page.getByRole("progressbar", { name: label })

/** Waits until the progress bar says 100 and returns every value it showed on the way. */
const watchProgress = async (page: Page, label: string) => {
  const seen: Array<number> = []
  await progressOf(page, label).waitFor()
  await expect.poll(async () => {
    const value = Number(await progressOf(page, label).getAttribute("aria-valuenow"))
    if (seen.at(-1) !== value) seen.push(value)
    return value
  }, { timeout: 30_000, interval: 50 }).toBe(100)
  return seen
}

let verifiedFrom: string
beforeAll(async () => {
  const domain = await env.call("POST", "/domains", { domain: "contacts.acme.test" })
  const dkim = domain.records.find((record: { purpose: string }) => record.purpose === "DKIM")
  env.dns.addTxt(dkim.name, dkim.value)
  expect((await env.call("GET", `/domains/${domain.id}/verify`)).status).toBe("VERIFIED")
  verifiedFrom = "hello@contacts.acme.test"
}, 60_000)

describe("contacts in the dashboard", () => {
  it("imports a CSV: previews the mapping, follows the job to 100 %, then lists the rows it could not import", async () => {
    const csv = [
      "Email Address;First Name;plan;seats;vip;joined;notes",
      "ada@import.test;Ada;pro;3;true;2026-01-15;call her",
      "not-an-email;;free;1;false;;",
      "bob@import.test;;free;;false;2026-02-01;",
      "cy@import.test;Cy;team;12;yes;;x"
    ].join("\r\n")
    const page = await env.page()
    await page.goto(projectPath("/contacts"))
    await page.getByRole("link", { name: "Import CSV" }).click()
    await heading(page, "Import contacts")
    await page.getByLabel("CSV file", { exact: true }).setInputFiles({ name: "people.csv", mimeType: "text/csv", buffer: Buffer.from(csv) })

    // The preview decides with the server's rules: the email column, typed data, the reader's own header names.
    const mapping = page.getByRole("table", { name: "Column mapping" })
    await mapping.waitFor()
    expect(await page.getByTestId("role-Email Address").innerText()).toBe("email")
    expect(await page.getByTestId("role-seats").innerText()).toBe("field seats")
    // The spec's rule for a two-word title: the key it becomes, lower case with a space.
    expect(await page.getByTestId("role-First Name").innerText()).toBe("field first name")
    expect(await mapping.locator("tr", { hasText: "seats" }).innerText()).toMatch(/3 \(number\)/)
    // Map "vip" to another field name and leave "notes" out.
    await page.getByLabel("Import vip as").selectOption("key")
    await page.getByLabel("Field name for vip").fill("isVip")
    await page.getByLabel("Import notes as").selectOption("ignore")
    expect(await page.getByTestId("role-vip").innerText()).toBe("field isVip")
    expect(await page.getByTestId("role-notes").innerText()).toBe("not imported")
    expect(await scrollsSideways(page)).toBe(false)
    await screenshot(page, "import-preview-1280")

    await page.getByRole("button", { name: "Start import" }).click()
    const seen = await watchProgress(page, "Import progress")
    expect(seen.at(-1)).toBe(100)
    expect(new URL(page.url()).searchParams.get("job")).toMatch(/.+/)
    const errors = page.getByRole("table", { name: "Rows not applied" })
    await errors.waitFor()
    expect(await errors.locator("tbody tr").allInnerTexts()).toEqual([expect.stringMatching(/^3\s+not-an-email\s+/)])
    expect(await page.getByTestId("job-counts").innerText()).toMatch(/4 of 4 rows · 3 created · 0 updated · 1 skipped · 0 failed/)
    await screenshot(page, "import-done-1280")

    const ada = await contactByEmail("ada@import.test")
    expect((await getContact(ada!.id)).data).toEqual({ "first name": "Ada", plan: "pro", seats: 3, isVip: true, joined: "2026-01-15" })
    const cy = await contactByEmail("cy@import.test")
    expect((await getContact(cy!.id)).data).toEqual({ "first name": "Cy", plan: "team", seats: 12, isVip: "yes" })

    // A reload keeps following the same job (its id is in the URL).
    await page.reload()
    expect(await progressOf(page, "Import progress").getAttribute("aria-valuenow")).toBe("100")
  })

  it("edits a contact's data keeping each type, toggles its subscription, shows its segments and executions, deletes it", async () => {
    const created = await env.call("POST", "/contacts", { email: "edit@example.com", subscribed: true, data: { plan: "free", seats: 2 } })
    const segment = await env.call("POST", "/segments", {
      name: "Pro editors",
      condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] }
    })
    const workflow = await env.call("POST", "/workflows", { name: "Editor onboarding", eventName: "edited" })
    await env.call("PATCH", `/workflows/${workflow.id}`, { enabled: true })
    await env.call("POST", `/workflows/${workflow.id}/executions`, { contactId: created.id })

    const page = await env.page()
    await page.goto(projectPath(`/contacts/${created.id}`))
    await heading(page, "edit@example.com")
    await page.getByRole("table", { name: "Workflow executions" }).getByRole("link", { name: "Editor onboarding" }).waitFor()

    await page.getByRole("button", { name: "Edit data" }).click()
    const editor = page.getByRole("form", { name: "Edit custom data" })
    await editor.getByLabel("Value of plan").fill("pro")
    await editor.getByLabel("Value of seats").fill("10")
    const add = async (key: string, type: string) => {
      await editor.getByRole("button", { name: "Add field" }).click()
      await editor.getByLabel("Field name").last().fill(key)
      await editor.getByLabel(`Type of ${key}`).selectOption(type)
    }
    await add("vip", "boolean")
    await add("renewsAt", "date")
    await editor.getByLabel("Value of renewsAt").fill("2026-03-01T10:00:00Z")
    await add("prefs", "json")
    await editor.getByLabel("Value of prefs").fill('{"news": true, "topics": ["a", 2]}')
    await add("code", "text")
    await editor.getByLabel("Value of code").fill("007")
    // A number field with text in it is refused here, before any request.
    await editor.getByLabel("Value of seats").fill("ten")
    await editor.getByRole("button", { name: "Save data" }).click()
    await editor.getByText("Not a number").waitFor()
    await screenshot(page, "contact-edit-1280")
    await editor.getByLabel("Value of seats").fill("10")
    await editor.getByRole("button", { name: "Save data" }).click()
    await page.getByRole("button", { name: "Edit data" }).waitFor()
    expect((await getContact(created.id)).data).toEqual({
      plan: "pro",
      seats: 10,
      vip: true,
      renewsAt: "2026-03-01T10:00:00.000Z",
      prefs: { news: true, topics: ["a", 2] },
      code: "007"
    })
    const rows = await page.getByRole("table", { name: "Custom data" }).locator("tbody tr").allInnerTexts()
    expect(rows.join("\n")).toMatch(/seats\s+number\s+10/)
    // Text as it is: the type column tells "007" (string) from 7 (number).
    expect(rows.join("\n")).toMatch(/code\s+string\s+007$/m)

    // Removing a field sends null for it: the API drops the key.
    await page.getByRole("button", { name: "Edit data" }).click()
    await editor.getByRole("button", { name: "Remove seats" }).click()
    await editor.getByRole("button", { name: "Save data" }).click()
    await page.getByRole("button", { name: "Edit data" }).waitFor()
    expect(Object.keys((await getContact(created.id)).data).sort()).toEqual(["code", "plan", "prefs", "renewsAt", "vip"])

    // The subscription switch, by keyboard.
    const toggle = page.getByRole("switch", { name: "Subscribed" })
    await toggle.focus()
    await page.keyboard.press("Space")
    await expect.poll(async () => (await getContact(created.id)).subscribed).toBe(false)
    await expect.poll(() => toggle.isChecked()).toBe(false)

    // The segment (plan is now "pro"), once the worker has applied the change.
    await eventually(async () => {
      const memberships = await env.call("GET", `/contacts/${created.id}/memberships`)
      expect(memberships.segments.map((entry: { id: string }) => entry.id)).toEqual([segment.id])
    })
    await page.reload()
    await page.getByRole("list", { name: "Segments of the contact" }).getByRole("link", { name: "Pro editors" }).waitFor()
    await page.getByRole("list", { name: "Timeline" }).getByText("contact unsubscribed").waitFor()
    await page.screenshot({ path: join(screenshotDir, "contact-page-1280.png"), fullPage: true })

    const phone = await env.page({ viewport: PHONE })
    await phone.goto(projectPath(`/contacts/${created.id}`))
    await heading(phone, "edit@example.com")
    await phone.getByRole("table", { name: "Workflow executions" }).waitFor()
    expect(await scrollsSideways(phone)).toBe(false)
    await screenshot(phone, "contact-390")

    await page.getByRole("button", { name: "Delete contact" }).click()
    await page.getByRole("dialog", { name: "Delete edit@example.com?" }).getByRole("button", { name: "Delete" }).click()
    await heading(page, "Contacts")
    expect(await contactByEmail("edit@example.com")).toBeNull()
  })

  it("shows custom-field columns, runs bulk actions on a selection, exports and creates contacts", async () => {
    for (const index of [1, 2, 3]) {
      await env.call("POST", "/contacts", { email: `bulk-${index}@example.com`, subscribed: true, data: { plan: "bulk", seats: index } })
    }
    const page = await env.page()
    await page.goto(projectPath("/contacts?search=bulk-"))
    await heading(page, "Contacts")
    const table = page.getByRole("table", { name: "Contacts" })
    await table.getByRole("columnheader", { name: "plan" }).waitFor()
    await page.waitForFunction(() => document.querySelectorAll("table[aria-label=Contacts] tbody tr").length === 3)
    // Custom data as people read it: the text itself, not its JSON ("bulk" in quotes).
    const row = await table.locator("tr", { hasText: "bulk-2@example.com" }).innerText()
    expect(row).toMatch(/\bbulk\b/)
    expect(row).not.toContain('"')

    await page.getByLabel("Select bulk-1@example.com").check()
    await page.getByLabel("Select bulk-2@example.com").check()
    const bulk = page.getByRole("region", { name: "Bulk actions" })
    await bulk.getByText("2 selected").waitFor()
    await screenshot(page, "contacts-selection-1280")
    await bulk.getByRole("button", { name: "Unsubscribe" }).click()
    await watchProgress(page, "Bulk action progress")
    // In the job's own words: contacts now unsubscribed, not rows created and updated.
    expect(await page.getByTestId("job-counts").innerText()).toBe("2 of 2 contacts · 2 now unsubscribed")
    const subscriptions = async () =>
      Promise.all([1, 2, 3].map(async (index) => (await contactByEmail(`bulk-${index}@example.com`))?.subscribed))
    expect(await subscriptions()).toEqual([false, false, true])
    // The table follows, and the selection is gone.
    await table.locator("tr", { hasText: "bulk-1@example.com" }).getByText("Unsubscribed").waitFor()
    expect(await bulk.count()).toBe(0)

    // Select all on the page, then delete with confirmation.
    await page.getByRole("button", { name: "Dismiss" }).click()
    await page.getByLabel("Select every contact on this page").check()
    await bulk.getByRole("button", { name: "Delete" }).click()
    await page.getByRole("dialog", { name: "Delete 3 contacts?" }).getByRole("button", { name: "Delete" }).click()
    await watchProgress(page, "Bulk action progress")
    expect(await subscriptions()).toEqual([undefined, undefined, undefined])
    await page.getByText("No contact matches").waitFor()

    // Export: the whole list as a CSV file, through the typed client.
    await page.getByLabel("Search by email").fill("")
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export CSV" }).click()])
    expect(download.suggestedFilename()).toMatch(/^contacts-\d{4}-\d{2}-\d{2}\.csv$/)
    const exported = await readFile((await download.path())!, "utf8")
    const [header, ...lines] = exported.trim().split(/\r?\n/)
    expect(header!.split(",").slice(0, 3)).toEqual(["email", "subscribed", "createdAt"])
    expect(lines.some((line) => line.startsWith("ada@import.test,"))).toBe(true)
    expect(lines.some((line) => line.startsWith("bulk-1@example.com,"))).toBe(false)

    // Create one.
    await page.getByRole("button", { name: "Add contact" }).click()
    await page.getByLabel("Email", { exact: true }).fill("New.Person@Example.com")
    await page.getByRole("button", { name: "Create contact" }).click()
    await heading(page, "new.person@example.com")
    expect(await contactByEmail("new.person@example.com")).toMatchObject({ subscribed: true })

    const phone = await env.page({ viewport: PHONE })
    await phone.goto(projectPath("/contacts"))
    await phone.getByLabel("Select new.person@example.com").check()
    await phone.getByRole("region", { name: "Bulk actions" }).waitFor()
    expect(await scrollsSideways(phone)).toBe(false)
    await phone.goto(projectPath("/contacts/import"))
    await heading(phone, "Import contacts")
    expect(await scrollsSideways(phone)).toBe(false)
  }, 60_000) // a bulk action, an export and two pages: near 30 s on a loaded 2-core machine
})

describe("templates in the dashboard", () => {
  it("uploads an image into the body through the typed client, saves it, and a duplicate carries it", async () => {
    const template = await env.call("POST", "/templates", {
      name: "With picture",
      subject: "Look",
      body: "<p>Before</p>\n",
      from: verifiedFrom,
      type: "MARKETING"
    })
    const page = await env.page()
    await page.goto(projectPath(`/templates/${template.id}`))
    await heading(page, "With picture")
    const editor = page.getByTestId("code-editor").locator(".cm-content")
    await editor.getByText("Before").waitFor()
    await page.getByText("No workflow sends this template.").waitFor()
    // Put the cursor at the end of the body, then upload.
    await editor.click()
    await page.keyboard.press("ControlOrMeta+End")
    await page.getByLabel("Insert image").setInputFiles({ name: "pixel.png", mimeType: "image/png", buffer: PNG })
    await editor.getByText("/uploads/").waitFor()
    const body = await editor.innerText()
    const url = /src="([^"]+)"/.exec(body)![1]!
    expect(url).toMatch(new RegExp(`^${publicUrl}/uploads/[0-9a-f]{64}\\.png$`))
    // The preview shows it, loaded from the server.
    const image = page.frameLocator("iframe[title='Rendered body']").locator(`img[src="${url}"]`)
    await image.waitFor()
    await expect.poll(() => image.evaluate((element: HTMLImageElement) => element.complete && element.naturalWidth)).toBe(240)
    await screenshot(page, "template-image-1280")

    await page.getByRole("button", { name: "Save" }).click()
    await page.getByText("Saved.").waitFor()
    expect((await env.call("GET", `/templates/${template.id}`)).body).toContain(`<img src="${url}"`)
    const served = await fetch(url)
    expect(served.headers.get("content-type")).toBe("image/png")
    expect(Buffer.from(await served.arrayBuffer())).toEqual(PNG)

    await page.getByRole("button", { name: "Duplicate" }).click()
    await heading(page, "With picture (Copy)")
    const copyId = new URL(page.url()).pathname.split("/").pop()
    expect(copyId).not.toBe(template.id)
    expect((await env.call("GET", `/templates/${copyId}`)).body).toContain(`<img src="${url}"`)
  })

  it("shows an upload the server refuses with its message and request id", async () => {
    const template = await env.call("POST", "/templates", { name: "Refused", subject: "S", body: "<p>B</p>", from: verifiedFrom })
    const page = await env.page()
    env.allowConsoleErrors(page, /status of 422/)
    await page.goto(projectPath(`/templates/${template.id}`))
    await heading(page, "Refused")
    await page.getByLabel("Insert image").setInputFiles({ name: "x.png", mimeType: "image/png", buffer: Buffer.from("<svg></svg>") })
    const alert = page.getByRole("alert").filter({ hasText: "not a PNG, JPEG, GIF or WebP" })
    await alert.waitFor()
    expect(await alert.getByTestId("request-id").innerText()).toMatch(/.+/)
  })
})

describe("the contacts page over 100,000 contacts", () => {
  it("shows its first rows and the exact total, timing five cold loads in the page", async () => {
    await env.stack.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'perf-' || g || '@example.com', g % 5 <> 0,
              jsonb_build_object('plan', CASE WHEN g % 2 = 0 THEN 'pro' ELSE 'free' END, 'seats', g % 50),
              now() - make_interval(secs => g), now()
       FROM generate_series(1, 100000) g`,
      [env.project.id]
    )
    await env.stack.query("ANALYZE contacts")
    const n =
      (await env.stack.query<{ n: number }>("SELECT count(*)::int AS n FROM contacts WHERE project_id = $1", [env.project.id]))[0]!.n
    expect(n).toBeGreaterThanOrEqual(100_000)

    /** One load in a fresh context (nothing cached): ms from navigation start to the table's first rows. */
    const firstLoad = async () => {
      const page = await env.page()
      await page.addInitScript(() => {
        const observer = new MutationObserver(() => {
          if (document.querySelector("table[aria-label=Contacts] tbody tr")) {
            ;(window as unknown as { firstRows: number }).firstRows = performance.now()
            observer.disconnect()
          }
        })
        observer.observe(document, { childList: true, subtree: true })
      })
      await page.goto(projectPath("/contacts"))
      await page.waitForFunction(() => (window as unknown as { firstRows?: number }).firstRows !== undefined)
      const ms = await page.evaluate(() => (window as unknown as { firstRows: number }).firstRows)
      // Where the time went: the document, the scripts and the API calls, in ms from navigation start.
      const spans = await page.evaluate(() => {
        const navigation = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming
        return [
          `document ${Math.round(navigation.responseEnd)}, interactive ${Math.round(navigation.domInteractive)}`,
          `modules evaluated ${Math.round(performance.getEntriesByName("mailstream:modules-evaluated")[0]?.startTime ?? -1)}`,
          ...(performance.getEntriesByType("resource") as Array<PerformanceResourceTiming>).map((entry) =>
            `${new URL(entry.name).pathname.replace(/^\/assets\/|\?.*$/g, "")} ${Math.round(entry.startTime)}–${
              Math.round(entry.responseEnd)
            }`
          )
        ].join("; ")
      })
      console.log(`[contacts first load] ${Math.round(ms)} ms: ${spans}`)
      await page.getByTestId("contact-total").waitFor()
      expect(await page.getByTestId("contact-total").innerText()).toBe(`${n.toLocaleString("en-US")} contacts`)
      return ms
    }
    const times: Array<number> = []
    for (let load = 0; load < 5; load++) times.push(await firstLoad())
    const page = await env.page()
    await page.goto(projectPath("/contacts"))
    await page.getByTestId("contact-total").waitFor()
    await screenshot(page, "contacts-100k-1280")
    console.log(
      `[contacts first load] ${n} contacts: ${times.map((ms) => `${Math.round(ms)} ms`).join(", ")} (cold contexts); load average ${
        loadavg().map((load) => load.toFixed(1)).join(" ")
      }`
    )
    // The 1 s target is a benchmark figure (BENCHMARKS.md, "Dashboard: contacts first load"), read from the
    // lines printed above on a quiet machine: a timed assertion would fail on a busy CI machine, not on the page.
    expect(times).toHaveLength(5)
  }, 120_000)
})
