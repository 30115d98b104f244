/// <reference lib="dom" />
/**
 * The account pages in a real Chromium against a real stack: sign up, sign in (with the configured OAuth
 * button), sign out, a 401 anywhere sending the visitor to /signin and back, the mailed links (verify the
 * email, reset the password) read from the file outbox, and joining a project from an invitation, both as
 * a newcomer who signs up with it and as a user who is signed in already.
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { Browser as ApiBrowser, mailedToken } from "../accounts/support.ts"
import { heading, PASSWORD, PHONE, screenshot, scrollsSideways, useBrowser } from "./support/browser.ts"

// GitHub sign-in is offered once its client id and secret are set (the button only starts the flow).
const env = useBrowser({ env: { GITHUB_CLIENT_ID: "browser-test-client", GITHUB_CLIENT_SECRET: "browser-test-secret" } })

const signIn = async (page: Page, email: string, password = PASSWORD) => {
  await page.getByLabel("Email").fill(email)
  await page.getByLabel("Password").fill(password)
  await page.getByRole("button", { name: "Sign in" }).click()
}

const path = (page: Page) => {
  const url = new URL(page.url())
  return url.pathname + url.search
}

describe("account pages", () => {
  it("signs up, signs out, refuses a wrong password and signs in again, offering the configured OAuth provider", async () => {
    const page = await env.page({ user: null })
    // Signed out, /p answers 401 before the sign-in page shows; a wrong password answers 401 too.
    env.allowConsoleErrors(page, /status of 401/)
    await page.goto("/signup")
    await heading(page, "Create an account")
    await page.getByRole("link", { name: "Continue with GitHub" }).waitFor()
    await screenshot(page, "signup-1280")
    await page.getByLabel("Email").fill("ada@example.com")
    await page.getByLabel("Password").fill(PASSWORD)
    await page.getByRole("button", { name: "Create account" }).click()
    await heading(page, "Projects")
    await page.getByText("No projects yet").waitFor()
    expect(await page.getByTestId("signed-in-as").innerText()).toBe("ada@example.com")

    await page.getByRole("button", { name: "Sign out" }).click()
    await heading(page, "Sign in")
    await page.goto("/p")
    await heading(page, "Sign in")
    expect(path(page)).toBe("/signin?next=%2Fp")

    const github = page.getByRole("link", { name: "Continue with GitHub" })
    expect(new URL(await github.getAttribute("href") ?? "", env.api.url).pathname).toBe("/auth/oauth/github")
    await signIn(page, "ada@example.com", "not the password")
    const refused = page.getByRole("alert")
    await refused.waitFor()
    expect(await refused.innerText()).toContain("401 INVALID_CREDENTIALS")
    await screenshot(page, "signin-error-1280")

    await signIn(page, "ada@example.com")
    await heading(page, "Projects")
    expect(path(page)).toBe("/p")
  })

  it("sends a visitor from any page to /signin and back to that page after signing in, at 1280 and 390 px", async () => {
    for (const [viewport, name] of [[undefined, "signin-1280"], [PHONE, "signin-390"]] as const) {
      const page = await env.page({ user: null, ...(viewport ? { viewport } : {}) })
      env.allowConsoleErrors(page, /status of 401/)
      const target = `/p/${env.project.id}/contacts?search=nobody`
      await page.goto(target)
      await heading(page, "Sign in")
      expect(path(page)).toBe(`/signin?next=${encodeURIComponent(target)}`)
      expect(await scrollsSideways(page)).toBe(false)
      await screenshot(page, name)
      await signIn(page, env.owner.email)
      await heading(page, "Contacts")
      expect(path(page)).toBe(target)
    }
  })

  it("verifies the email with the link mailed at sign-up, signed in to the account (a visitor signs in first)", async () => {
    const user = await env.signUp("grace@example.com")
    const signedIn = await env.page({ user })
    await signedIn.goto("/p")
    await heading(signedIn, "Projects")
    await signedIn.getByText("No projects yet").waitFor()
    // No SMTP_URL here: the verification mail only reaches the file outbox, so no banner asks the user to
    // verify (test/browser/campaigns.test.ts, with SMTP, shows it).
    expect(await signedIn.getByText("not verified yet").count()).toBe(0)

    // Opened where nobody is signed in: the link alone does not vouch for whoever chose the account's password.
    const token = await mailedToken(env.outbox, user.email, "/verify-email")
    const page = await env.page({ user: null })
    env.allowConsoleErrors(page, /status of 401/)
    await page.goto(`/verify-email?token=${token}`)
    await page.getByText("Sign in to the account this link was mailed for").waitFor()
    await screenshot(page, "verify-email-signed-out-1280")
    await page.getByRole("link", { name: "Sign in" }).click()
    await heading(page, "Sign in")
    await signIn(page, user.email)
    await page.getByText("Your email address is verified.").waitFor()
    expect(path(page)).toBe(`/verify-email?token=${token}`)
    await screenshot(page, "verify-email-1280")
    await page.getByRole("link", { name: "Go to your projects" }).click()
    await heading(page, "Projects")
    await page.getByText("No projects yet").waitFor()
    expect(await page.getByText("not verified yet").count()).toBe(0)

    // A used link is refused with the API's message.
    env.allowConsoleErrors(page, /status of 400/)
    await page.goto(`/verify-email?token=${token}`)
    expect(await page.getByRole("alert").innerText()).toContain("400 INVALID_TOKEN")
  })

  it("resets a forgotten password through the mailed link", async () => {
    const user = await env.signUp("forgetful@example.com")
    const page = await env.page({ user: null })
    await page.goto("/signin")
    await page.getByRole("link", { name: "Forgot your password?" }).click()
    await heading(page, "Forgot your password")
    await page.getByLabel("Email").fill(user.email)
    await page.getByRole("button", { name: "Mail me a link" }).click()
    await page.getByText(`If an account exists for ${user.email}`).waitFor()

    const token = await mailedToken(env.outbox, user.email, "/reset-password")
    await page.goto(`/reset-password?token=${token}`)
    await heading(page, "Choose a new password")
    await page.getByLabel("New password").fill("a brand new password")
    await page.getByRole("button", { name: "Set password" }).click()
    await page.getByText("Your password is changed").waitFor()
    await page.getByRole("link", { name: "Sign in" }).click()
    await heading(page, "Sign in")
    await signIn(page, user.email, "a brand new password")
    await heading(page, "Projects")
    // The reset ended the session the user had before.
    const before = await env.page({ user })
    env.allowConsoleErrors(before, /status of 401/)
    await before.goto("/p")
    await heading(before, "Sign in")
  })

  it("changes the password on the projects page, signing out the user's other sessions", async () => {
    const user = await env.signUp("changer@example.com")
    const elsewhere = new ApiBrowser(env.api.url)
    expect((await elsewhere.post("/auth/login", { email: user.email, password: user.password })).status).toBe(200)
    const page = await env.page({ user })
    await page.goto("/p")
    await heading(page, "Projects")
    const card = page.getByRole("region", { name: "Your password" })
    env.allowConsoleErrors(page, /status of 403/)
    await card.getByLabel("Current password").fill("not the password")
    await card.getByLabel("New password").fill("a changed password")
    await card.getByRole("button", { name: "Change password" }).click()
    expect(await card.getByRole("alert").innerText()).toContain("403 WRONG_PASSWORD")
    await card.getByLabel("Current password").fill(user.password)
    await card.getByLabel("New password").fill("a changed password")
    await card.getByRole("button", { name: "Change password" }).click()
    await card.getByText("Your password is changed").waitFor()
    await screenshot(page, "change-password-1280")
    expect((await elsewhere.get("/users/@me")).status).toBe(401)
    await page.reload()
    await heading(page, "Projects")
    expect((await new ApiBrowser(env.api.url).post("/auth/login", { email: user.email, password: "a changed password" })).status).toBe(200)
  })

  it("joins a project from an invitation: a newcomer signs up with it, a signed-in user accepts it", async () => {
    const owner = await env.page()
    await owner.goto(`/p/${env.project.id}/settings/members`)
    for (const email of ["newcomer@example.com", "later@example.com"]) {
      await owner.getByLabel("Email").fill(email)
      await owner.getByRole("button", { name: "Invite" }).click()
      await owner.getByText(`Invitation mailed to ${email} as MEMBER.`).waitFor()
    }
    const pending = owner.getByRole("table", { name: "Pending invitations" })
    await pending.getByRole("cell", { name: "later@example.com", exact: true }).waitFor()

    // A newcomer: the link offers to create an account with the invitation.
    const newcomer = await env.page({ user: null })
    env.allowConsoleErrors(newcomer, /status of 401/)
    await newcomer.goto(`/accept-invitation?token=${await mailedToken(env.outbox, "newcomer@example.com", "/accept-invitation")}`)
    await heading(newcomer, "Join a project")
    await screenshot(newcomer, "accept-invitation-1280")
    await newcomer.getByRole("link", { name: "Create an account" }).click()
    await heading(newcomer, "Create an account")
    await newcomer.getByLabel("Email").fill("newcomer@example.com")
    await newcomer.getByLabel("Password").fill(PASSWORD)
    await newcomer.getByRole("button", { name: "Create account" }).click()
    await heading(newcomer, "Projects")
    await newcomer.getByRole("table", { name: "Projects" }).getByText("Browser test project").waitFor()
    expect(await newcomer.getByRole("table", { name: "Projects" }).innerText()).toMatch(/Browser test project\s+MEMBER/)

    // A user who signed up (without the invitation) after it was sent: signed in, they accept it.
    const later = await env.signUp("later@example.com")
    const page = await env.page({ user: later })
    await page.goto(`/accept-invitation?token=${await mailedToken(env.outbox, "later@example.com", "/accept-invitation")}`)
    await page.getByText("You are signed in as").waitFor()
    await page.getByRole("button", { name: "Join the project" }).click()
    await heading(page, "Home")
    expect(new URL(page.url()).pathname).toBe(`/p/${env.project.id}`)

    await owner.reload()
    const members = owner.getByRole("table", { name: "Members" })
    await members.getByRole("cell", { name: "later@example.com", exact: true }).waitFor()
    expect(await members.innerText()).toContain("newcomer@example.com")
    expect(await owner.getByRole("table", { name: "Pending invitations" }).count()).toBe(0)
  })
})
