/**
 * Pre-account takeover (OWASP; Sudhodanan & Paverd, "Pre-hijacked accounts", 2022): someone registers
 * a victim's address before the victim does, and waits. Through real HTTP against the service with a
 * local GitHub (oauth2-mock-server) and the file outbox as the victim's mailbox:
 * - classic federated merge: the victim's GitHub sign-in is not joined to the pre-registered account;
 * - unexpired session: the victim takes the account over with a reset link, which ends the creator's
 *   sessions, password and links and takes the account out of the creator's projects;
 * - the creator's verification mail opened by the victim does not vouch for the creator's password;
 * - the reverse: an account GitHub made cannot be "signed up" again with a password;
 * - an invitation to the victim's address does not let the pre-registered account in.
 * There is no email change to abuse, and a provider's unverified email is refused (integrations.test.ts).
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createStack, type Service, type Stack } from "../support/stack.ts"
import { signInWith, startGitHub } from "./oauthProviders.ts"
import { Browser, joinProject, mailedLink, mailedToken, signUp } from "./support.ts"

let stack: Stack
let api: Service
let github: Awaited<ReturnType<typeof startGitHub>>
const outbox = mkdtempSync(join(tmpdir(), "ms-takeover-outbox-"))

beforeAll(async () => {
  github = await startGitHub()
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0", OUTBOX_DIR: outbox, ...github.env })
  api = await stack.start("api")
  // The installation's first user (who owns it) is someone else: the people below are ordinary users.
  await signUp(api.url, "operator@example.com")
})
afterAll(async () => {
  await stack?.stop()
  await github?.server.stop()
})

/** The victim's GitHub account: their address, verified by GitHub. */
const githubOf = (id: number, email: string) => void (github.account.current = { id, emails: [{ email, primary: true, verified: true }] })
const signInWithGitHub = (browser: Browser) => signInWith("github", browser, github.server.issuer.url!)
const identitiesOf = async (email: string) =>
  (await stack.query("SELECT 1 FROM user_identities i JOIN users u ON u.id = i.user_id WHERE u.email = $1", [email])).length
const projectIdsOf = async (browser: Browser) =>
  (await browser.get("/users/@me/projects")).json.map((project: { id: string }) => project.id)

describe("classic federated merge and unexpired session", () => {
  const victim = "victim@example.com"
  let attacker: Browser
  let accomplice: Browser
  let trap: string

  beforeAll(async () => {
    // The attacker registers the victim's address, keeps the session, builds a project and brings a second account in.
    attacker = (await signUp(api.url, victim, "the attacker's password")).browser
    trap = (await attacker.post("/users/@me/projects", { name: "Looks like yours" })).json.id
    accomplice = (await signUp(api.url, "accomplice@example.com")).browser
    await joinProject(attacker, trap, accomplice, "accomplice@example.com", "ADMIN")
  })

  it("does not join the victim's GitHub sign-in to the account someone registered with their address", async () => {
    githubOf(1001, victim)
    const browser = new Browser(api.url)
    const refused = await signInWithGitHub(browser)
    expect(refused.status).toBe(409)
    expect(refused.json.error.code).toBe("EMAIL_NOT_VERIFIED")
    expect(refused.json.error.suggestion).toMatch(/password reset/)
    expect(browser.cookies.has("mailstream_session")).toBe(false)
    expect(await identitiesOf(victim)).toBe(0)
    // Nothing changed for the account: still unverified, so still not joinable.
    expect((await attacker.get("/users/@me")).json).toMatchObject({ email: victim, emailVerified: false })
  })

  it("lets the address's owner take the account over with a reset link: the creator's sessions, password and projects are gone", async () => {
    expect((await new Browser(api.url).post("/auth/request-password-reset", { email: victim })).status).toBe(200)
    const mail = await mailedLink(outbox, victim, "/reset-password")
    // The mail says what the link will do, for a creator who is the owner after all (they can verify instead).
    expect(mail.text).toMatch(/never verified/)
    expect(mail.text).toMatch(/takes it out of its project/)
    expect((await new Browser(api.url).post("/auth/reset-password", { token: mail.token, password: "the victim's own password" })).status)
      .toBe(200)

    expect((await attacker.get("/users/@me")).status).toBe(401)
    expect((await new Browser(api.url).post("/auth/login", { email: victim, password: "the attacker's password" })).status).toBe(401)
    const owner = new Browser(api.url)
    expect((await owner.post("/auth/login", { email: victim, password: "the victim's own password" })).status).toBe(200)
    expect((await owner.get("/users/@me")).json.emailVerified).toBe(true)
    // Not inside the project the creator made (whose keys they saw, and where their second account is).
    expect(await projectIdsOf(owner)).toEqual([])
    expect((await owner.get(`/projects/${trap}/members`)).status).toBe(404)
    expect(await projectIdsOf(accomplice)).toEqual([trap])

    // Now the account is the address owner's: their GitHub sign-in joins it.
    githubOf(1001, victim)
    const viaGitHub = new Browser(api.url)
    expect((await signInWithGitHub(viaGitHub)).status).toBe(302)
    expect((await viaGitHub.get("/users/@me")).json.id).toBe((await owner.get("/users/@me")).json.id)
    expect(await identitiesOf(victim)).toBe(1)
  })
})

describe("the creator's verification mail", () => {
  it("does not verify the account when opened without its session, so the victim's GitHub sign-in still stays out", async () => {
    const victim = "victim2@example.com"
    const attacker = (await signUp(api.url, victim, "the attacker's password")).browser
    const token = await mailedToken(outbox, victim, "/verify-email")
    // The victim opens the mail they did not ask for: not signed in, or signed in as themselves elsewhere.
    const anonymous = await new Browser(api.url).post("/auth/verify-email", { token })
    expect(anonymous.status).toBe(401)
    const someoneElse = (await signUp(api.url, "victim2-other@example.com")).browser
    const other = await someoneElse.post("/auth/verify-email", { token })
    expect(other.status).toBe(403)
    expect(other.json.error.code).toBe("VERIFICATION_FOR_ANOTHER_ACCOUNT")
    expect((await someoneElse.get("/users/@me")).json.emailVerified).toBe(false)
    expect((await attacker.get("/users/@me")).json.emailVerified).toBe(false)
    githubOf(2002, victim)
    expect((await signInWithGitHub(new Browser(api.url))).status).toBe(409)

    // The same link in the session of the account it was mailed for (its creator, had they owned the mailbox) verifies it.
    expect((await attacker.post("/auth/verify-email", { token })).json).toEqual({ success: true })
    expect((await attacker.get("/users/@me")).json.emailVerified).toBe(true)
  })
})

describe("the reverse", () => {
  it("does not let anyone add a password to an account a GitHub sign-in created", async () => {
    const owner = "github-only@example.com"
    githubOf(3003, owner)
    const browser = new Browser(api.url)
    expect((await signInWithGitHub(browser)).status).toBe(302)
    expect((await browser.get("/users/@me")).json).toMatchObject({ email: owner, emailVerified: true, hasPassword: false })
    const again = await new Browser(api.url).post("/auth/signup", { email: owner, password: "someone else's password" })
    expect(again.status).toBe(409)
    expect(again.json.error.code).toBe("EMAIL_TAKEN")
    expect((await new Browser(api.url).post("/auth/login", { email: owner, password: "someone else's password" })).status).toBe(401)
    const change = await browser.post("/auth/change-password", { currentPassword: "", newPassword: "a password at last" })
    expect(change.status).toBe(409)
    expect(change.json.error.code).toBe("NO_PASSWORD")
    expect((await browser.get("/users/@me")).json.hasPassword).toBe(false)
  })
})

describe("an invitation to the victim's address", () => {
  it("does not let the account registered with it in; the address's owner joins with the mailed link", async () => {
    const victim = "victim3@example.com"
    const attacker = (await signUp(api.url, victim, "the attacker's password")).browser
    const team = (await signUp(api.url, "team-owner@example.com")).browser
    const project = (await team.post("/users/@me/projects", { name: "The victim's team" })).json.id
    const invited = await team.post(`/projects/${project}/members`, { email: victim, role: "ADMIN" })
    expect(invited.status).toBe(202)
    expect(await projectIdsOf(attacker)).toEqual([])
    expect((await attacker.get(`/projects/${project}/members`)).status).toBe(404)
    expect((await attacker.post("/auth/accept-invitation", { token: "guessed-token-guessed-token-guessed-token" })).status).toBe(400)

    // The victim takes their address back (reset), then joins with the link mailed to them.
    await new Browser(api.url).post("/auth/request-password-reset", { email: victim })
    await new Browser(api.url).post("/auth/reset-password", {
      token: await mailedToken(outbox, victim, "/reset-password"),
      password: "the victim's password"
    })
    expect((await attacker.get("/users/@me")).status).toBe(401)
    const owner = new Browser(api.url)
    await owner.post("/auth/login", { email: victim, password: "the victim's password" })
    const accepted = await owner.post("/auth/accept-invitation", { token: await mailedToken(outbox, victim, "/accept-invitation") })
    expect(accepted.json).toEqual({ projectId: project, role: "ADMIN" })
  })
})

describe("the installation's first user", () => {
  it("keeps their projects through a reset even unverified: whoever is first owns the installation anyway", async () => {
    const operator = new Browser(api.url)
    await operator.post("/auth/request-password-reset", { email: "operator@example.com" })
    const mail = await mailedLink(outbox, "operator@example.com", "/reset-password")
    expect(mail.text).not.toMatch(/takes it out of/)
    await operator.post("/auth/reset-password", { token: mail.token, password: "the operator's new password" })
    await operator.post("/auth/login", { email: "operator@example.com", password: "the operator's new password" })
    expect((await operator.get("/users/@me/projects")).json).toEqual([expect.objectContaining({ name: "My first project", role: "OWNER" })])
  })
})
