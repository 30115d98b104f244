/// <reference lib="dom" />
/**
 * Projects and settings in a real Chromium against a real stack: the project list, creating and
 * switching projects, the setup checklist; rotating keys (the old key stops working), members by role
 * (a MEMBER sees the public key but cannot rotate a key, and every page the dashboard offers a MEMBER works for them),
 * pending invitations (their link copied, resent, withdrawn),
 * tracking, billing caps and consumption, security, and the danger zone's typed confirmations.
 */
import { describe, expect, it } from "vitest"
import { billingPagePath } from "../../src/http/api/dashboard.ts"
import { Browser as ApiBrowser } from "../accounts/support.ts"
import { heading, PHONE, screenshot, scrollsSideways, type Session, useBrowser } from "./support/browser.ts"

const env = useBrowser()

/** The dashboard API as `user` (cookie and Origin), for checks and set-up the test is not about. */
const as = (user: Session) => {
  const client = new ApiBrowser(env.api.url)
  client.cookies.set("mailstream_session", user.cookie)
  return client
}

/** GET /contacts with a secret key: its status. */
const contactsStatus = async (secretKey: string) =>
  (await fetch(`${env.api.url}/contacts`, { headers: { authorization: `Bearer ${secretKey}` } })).status

const settings = (projectId: string, tab: string) => `/p/${projectId}/settings/${tab}`

describe("projects", () => {
  it("creates a project (its keys shown once), switches between projects and shows the setup checklist", async () => {
    const page = await env.page()
    await page.goto("/p")
    await heading(page, "Projects")
    await page.getByLabel("Project name").fill("Newsletter")
    await page.getByRole("button", { name: "Create project" }).click()
    const secret = await page.getByTestId("Secret key").innerText()
    expect(secret).toMatch(/^sk_/)
    expect(await page.getByTestId("Public key").innerText()).toMatch(/^pk_/)
    expect(await contactsStatus(secret)).toBe(200)
    await page.getByRole("table", { name: "Projects" }).getByRole("link", { name: "Newsletter" }).waitFor()
    await screenshot(page, "projects-1280")

    await page.getByRole("link", { name: "Open Newsletter" }).click()
    await heading(page, "Home")
    const checklist = page.getByRole("region", { name: "Setup" })
    // No SMTP_URL here (local delivery): a verified domain is not needed, and the checklist says so.
    expect(await checklist.getByTestId("setup-progress").innerText()).toBe("1 of 5 done")
    await checklist.getByText("Verify a sending domain: not needed while mail is delivered locally").waitFor()
    await fetch(`${env.api.url}/contacts`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ email: "first@example.com" })
    })
    await page.reload()
    await checklist.getByText("2 of 5 done").waitFor()
    expect(await checklist.getByRole("link").allInnerTexts()).toEqual(["Create a template", "Track an event", "Send an email"])
    await screenshot(page, "home-setup-1280")

    const newsletter = new URL(page.url()).pathname
    await page.getByRole("combobox", { name: "Project" }).selectOption({ label: "Browser test project" })
    await heading(page, "Home")
    expect(new URL(page.url()).pathname).toBe(`/p/${env.project.id}`)
    expect(newsletter).not.toBe(`/p/${env.project.id}`)
  })
})

describe("settings", () => {
  it("rotates both keys after a confirmation: the old key stops working, the new one works", async () => {
    const created = (await as(env.owner).post("/users/@me/projects", { name: "Rotating" })).json
    expect(await contactsStatus(created.secretKey)).toBe(200)
    const page = await env.page()
    await page.goto(settings(created.id, "keys"))
    await page.getByRole("button", { name: "Rotate both keys" }).click()
    const dialog = page.getByRole("dialog", { name: "Rotate both keys?" })
    await dialog.waitFor()
    await screenshot(page, "keys-confirm-1280")
    // Cancel changes nothing.
    await dialog.getByRole("button", { name: "Cancel" }).click()
    await dialog.waitFor({ state: "hidden" })
    expect(await contactsStatus(created.secretKey)).toBe(200)

    await page.getByRole("button", { name: "Rotate both keys" }).click()
    await dialog.getByRole("button", { name: "Rotate both keys" }).click()
    const secret = page.getByTestId("Secret key")
    await secret.waitFor()
    const rotated = await secret.innerText()
    expect(rotated).toMatch(/^sk_/)
    expect(rotated).not.toBe(created.secretKey)
    await page.getByRole("button", { name: "Copy Secret key" }).click()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(rotated)
    await screenshot(page, "keys-1280")
    await expect.poll(() => contactsStatus(created.secretKey), { timeout: 5_000 }).toBe(401)
    expect(await contactsStatus(rotated)).toBe(200)
  })

  it("lets an OWNER invite, re-role and remove members; a MEMBER sees the list and the public key but rotates no key", async () => {
    const colleague = await env.signUp("colleague@example.com")
    const page = await env.page()
    await page.goto(settings(env.project.id, "members"))
    await page.getByLabel("Email").fill(colleague.email)
    await page.getByRole("button", { name: "Invite" }).click()
    // An account of that email is invited too, not added: it joins by opening the link, signed in.
    await page.getByText(`Invitation mailed to ${colleague.email} as MEMBER.`).waitFor()
    const link = new URL(await page.getByTestId("invitation-link").innerText())
    const joining = await env.page({ user: colleague })
    await joining.goto(link.pathname + link.search)
    await joining.getByRole("button", { name: "Join the project" }).click()
    await heading(joining, "Home")
    await page.reload()
    await page.getByLabel(`Role of ${colleague.email}`).selectOption("ADMIN")
    await expect.poll(async () => {
      const list = (await as(env.owner).get(`/projects/${env.project.id}/members`)).json.members
      return list.find((member: { email: string }) => member.email === colleague.email)?.role
    }).toBe("ADMIN")
    await screenshot(page, "members-1280")

    // An ADMIN may not touch the OWNER: no role menu and no Remove button on the owner's row.
    const admin = await env.page({ user: colleague })
    await admin.goto(settings(env.project.id, "members"))
    await admin.getByRole("table", { name: "Members" }).waitFor()
    expect(await admin.getByLabel(`Role of ${env.owner.email}`).count()).toBe(0)
    expect(await admin.getByRole("button", { name: `Remove ${env.owner.email}` }).count()).toBe(0)
    await admin.getByRole("link", { name: "API keys" }).click()
    await admin.getByRole("button", { name: "Rotate both keys" }).waitFor()

    await page.getByLabel(`Role of ${colleague.email}`).selectOption("MEMBER")
    await expect.poll(async () => {
      const list = (await as(env.owner).get(`/projects/${env.project.id}/members`)).json.members
      return list.find((member: { email: string }) => member.email === colleague.email)?.role
    }).toBe("MEMBER")
    const member = await env.page({ user: colleague })
    await member.goto(settings(env.project.id, "members"))
    await member.getByRole("table", { name: "Members" }).waitFor()
    // The tabs follow the caller's role, which arrives with the project list (after the members table, at times).
    await expect.poll(() => member.getByRole("navigation", { name: "Settings" }).getByRole("link").allInnerTexts())
      .toEqual(["Members", "API keys", "Sending", "Billing", "Security"])
    expect(await member.getByRole("button", { name: "Invite" }).count()).toBe(0)
    expect(await member.getByRole("navigation", { name: "Project" }).getByRole("link", { name: "Domains" }).count()).toBe(0)
    await member.goto(settings(env.project.id, "keys"))
    await member.getByText("Admins and owners can rotate the keys.").waitFor()
    await expect.poll(() => member.getByTestId("Public key").innerText()).toMatch(/^pk_/)
    expect(await member.getByRole("button", { name: /Rotate/ }).count()).toBe(0)
    await screenshot(member, "keys-member-1280")

    await page.getByRole("button", { name: `Remove ${colleague.email}` }).click()
    await page.getByRole("dialog", { name: `Remove ${colleague.email}?` }).getByRole("button", { name: "Remove" }).click()
    await page.getByRole("cell", { name: colleague.email, exact: true }).waitFor({ state: "detached" })
    const left = (await as(env.owner).get(`/projects/${env.project.id}/members`)).json.members
    expect(left.map((entry: { email: string }) => entry.email)).not.toContain(colleague.email)
  })

  it("shows pending invitations with the link to pass on; resending replaces the link, withdrawing ends it", async () => {
    const page = await env.page()
    await page.goto(settings(env.project.id, "members"))
    await page.getByLabel("Email").fill("typo@exampel.com")
    await page.getByLabel("Role").selectOption("ADMIN")
    await page.getByRole("button", { name: "Invite" }).click()
    await page.getByText("Invitation mailed to typo@exampel.com as ADMIN.").waitFor()
    const first = await page.getByTestId("invitation-link").innerText()
    expect(first).toMatch(/\/accept-invitation\?token=/)
    await page.getByRole("button", { name: "Copy invitation link" }).click()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(first)
    const pending = page.getByRole("table", { name: "Pending invitations" })
    await pending.getByRole("cell", { name: "typo@exampel.com", exact: true }).waitFor()
    await screenshot(page, "members-invitation-1280")

    /** Whether an invitation link still works (its token pending; the API tests show what a dead one answers). */
    const works = async (link: string) =>
      (await env.stack.query(
        "SELECT 1 FROM account_tokens WHERE purpose = 'invitation' AND used_at IS NULL AND hash = sha256(convert_to($1, 'UTF8'))",
        [new URL(link).searchParams.get("token")]
      )).length > 0
    expect(await works(first)).toBe(true)
    await page.getByRole("button", { name: "Resend the invitation to typo@exampel.com" }).click()
    await expect.poll(() => page.getByTestId("invitation-link").innerText()).not.toBe(first)
    const second = await page.getByTestId("invitation-link").innerText()
    expect(await works(first)).toBe(false)
    expect(await works(second)).toBe(true)

    await page.getByRole("button", { name: "Withdraw the invitation to typo@exampel.com" }).click()
    await pending.waitFor({ state: "detached" })
    // The link shown was that invitation's: it is gone with it.
    expect(await page.getByTestId("invitation-link").count()).toBe(0)
    expect(await works(second)).toBe(false)

    const phone = await env.page({ viewport: PHONE })
    await phone.goto(settings(env.project.id, "members"))
    await phone.getByLabel("Email").fill("someone@example.com")
    await phone.getByRole("button", { name: "Invite" }).click()
    await phone.getByTestId("invitation-link").waitFor()
    expect(await scrollsSideways(phone)).toBe(false)
    await screenshot(phone, "members-invitation-390")
    await phone.getByRole("button", { name: "Withdraw the invitation to someone@example.com" }).click()
    await phone.getByRole("table", { name: "Pending invitations" }).waitFor({ state: "detached" })
  })

  it("turns tracking off, saves billing caps, shows this month's consumption and the security rates", async () => {
    const page = await env.page()
    await page.goto(settings(env.project.id, "sending"))
    const tracking = page.getByLabel("Track opens and clicks")
    await tracking.waitFor()
    expect(await tracking.isChecked()).toBe(true)
    // The box shows the server's state: it clears once the change is saved and the project list refetched.
    await tracking.click()
    await expect.poll(() => tracking.isChecked()).toBe(false)
    await expect.poll(async () => {
      const projects = (await as(env.owner).get("/users/@me/projects")).json
      return projects.find((project: { id: string }) => project.id === env.project.id).trackingEnabled
    }).toBe(false)
    await page.getByText("--send-rate N").waitFor()

    await page.getByRole("navigation", { name: "Settings" }).getByRole("link", { name: "Billing" }).click()
    await page.getByLabel("Transactional").fill("1000")
    await page.getByLabel("Workflows").fill("50")
    await page.getByRole("button", { name: "Save caps" }).click()
    await page.getByText("Caps saved.").waitFor()
    expect((await as(env.owner).get(`/users/@me/projects/${env.project.id}/billing-limits`)).json)
      .toEqual({ transactional: 1000, campaigns: null, workflows: 50, inbound: null })
    const month = page.getByRole("table", { name: "This month" })
    await month.getByText("1,000").waitFor()
    expect((await month.locator("tbody tr").allInnerTexts()).map((row) => row.split(/\s+/).join(" "))).toEqual([
      "Transactional 0 1,000",
      "Campaigns 0 none",
      "Workflows 0 50",
      "Inbound 0 none"
    ])
    await screenshot(page, "billing-1280")
    // Where Stripe's checkout sends the user back: this page, saying how the checkout ended.
    await page.goto(`${billingPagePath(env.project.id)}?checkout=success`)
    await page.getByText("Checkout complete").waitFor()
    await page.getByRole("table", { name: "This month" }).waitFor()
    await screenshot(page, "billing-checkout-1280")

    await page.getByRole("navigation", { name: "Settings" }).getByRole("link", { name: "Security" }).click()
    const health = page.getByRole("region", { name: "Sending health" })
    await health.getByText("sending", { exact: true }).waitFor()
    expect(await health.innerText()).toMatch(/Bounce rate\s+0\.00 % \(0; limit 5\.00 %\)/)
    await screenshot(page, "security-1280")
  })

  it("resets a project's data and deletes it, each only once its name is typed", async () => {
    const created = (await as(env.owner).post("/users/@me/projects", { name: "Doomed" })).json
    await fetch(`${env.api.url}/contacts`, {
      method: "POST",
      headers: { authorization: `Bearer ${created.secretKey}`, "content-type": "application/json" },
      body: JSON.stringify({ email: "gone@example.com" })
    })
    const page = await env.page()
    await page.goto(settings(created.id, "danger"))
    await page.getByRole("button", { name: "Reset data…" }).click()
    const reset = page.getByRole("dialog", { name: "Reset Doomed?" })
    const confirm = reset.getByRole("button", { name: "Reset data" })
    expect(await confirm.isDisabled()).toBe(true)
    await reset.getByLabel("Type Doomed to confirm").fill("doomed")
    expect(await confirm.isDisabled()).toBe(true)
    await reset.getByLabel("Type Doomed to confirm").fill("Doomed")
    await screenshot(page, "danger-1280")
    await confirm.click()
    await page.getByText("The project's data was reset").waitFor()
    const contacts = await fetch(`${env.api.url}/contacts`, { headers: { authorization: `Bearer ${created.secretKey}` } }).then((r) =>
      r.json()
    )
    expect(contacts.total).toBe(0)

    await page.getByRole("button", { name: "Delete project…" }).click()
    const remove = page.getByRole("dialog", { name: "Delete Doomed?" })
    await remove.getByLabel("Type Doomed to confirm").fill("Doomed")
    await remove.getByRole("button", { name: "Delete project" }).click()
    await heading(page, "Projects")
    expect(await page.getByRole("table", { name: "Projects" }).innerText()).not.toContain("Doomed")
    expect(await contactsStatus(created.secretKey)).toBe(401)
  })

  it("offers a MEMBER the pages of their role, each working: no call the role is refused, export included", async () => {
    const walker = await env.signUp("walker@example.com")
    // Straight into the table: how someone joins is not what this test is about.
    await env.stack.query("INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, 'MEMBER')", [env.project.id, walker.id])
    const page = await env.page({ user: walker })
    const refused: Array<string> = []
    page.on("response", (response) => {
      if ([401, 403].includes(response.status())) refused.push(`${response.status()} ${response.request().method()} ${response.url()}`)
    })
    await page.goto(`/p/${env.project.id}`)
    const nav = page.getByRole("navigation", { name: "Project" })
    // The links follow the role, which arrives with the project list.
    await expect.poll(() => nav.getByRole("link").allInnerTexts()).toEqual([
      "Home",
      "Contacts",
      "Templates",
      "Segments",
      "Campaigns",
      "Workflows",
      "Emails",
      "Events",
      "Activity",
      "Analytics",
      "Settings"
    ])
    /** Until the page has loaded what it shows: no spinner left, and no error in its place. */
    const settled = async (what: string) => {
      await expect.poll(() => page.getByRole("status").filter({ hasText: "Loading" }).count(), { timeout: 10_000 }).toBe(0)
      expect(await page.getByRole("alert").allInnerTexts(), what).toEqual([])
    }
    for (const label of await nav.getByRole("link").allInnerTexts()) {
      await nav.getByRole("link", { name: label, exact: true }).click()
      await heading(page, label)
      await settled(label)
    }
    for (const tab of ["Members", "API keys", "Sending", "Billing", "Security"]) {
      await page.getByRole("navigation", { name: "Settings" }).getByRole("link", { name: tab }).click()
      await settled(tab)
      if (tab === "Billing") {
        // The caps and the month's usage are shown; only changing the caps is an admin's.
        await page.getByRole("table", { name: "This month" }).waitFor()
        await page.getByText("Admins and owners can change the caps.").waitFor()
      }
    }
    await page.goto(`/p/${env.project.id}/contacts`)
    const download = page.waitForEvent("download")
    await page.getByRole("button", { name: "Export CSV" }).click()
    expect((await download).suggestedFilename()).toMatch(/^contacts-.*\.csv$/)
    // A link to a page of a larger role says who may open it, without asking the API.
    await page.goto(`/p/${env.project.id}/domains`)
    await page.getByText("Only admins and owners of this project can open this page.").waitFor()
    await screenshot(page, "domains-member-1280")
    expect(refused).toEqual([])
  })

  it("fits every settings tab and the project list in 390 px without sideways scrolling", async () => {
    const page = await env.page({ viewport: PHONE })
    await page.goto("/p")
    await page.getByRole("table", { name: "Projects" }).waitFor()
    expect(await scrollsSideways(page)).toBe(false)
    for (
      const [tab, ready] of [
        ["members", "Invite someone"],
        ["keys", "Rotate both keys"],
        ["sending", "Send rate"],
        ["billing", "Monthly caps"],
        ["security", "Sending health"],
        ["danger", "Reset data"]
      ] as const
    ) {
      await page.goto(settings(env.project.id, tab))
      await page.getByRole("heading", { level: 2, name: ready }).or(page.getByRole("button", { name: ready })).first().waitFor()
      expect(await scrollsSideways(page), tab).toBe(false)
    }
    await screenshot(page, "danger-390")
  })
})
