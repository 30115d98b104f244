/**
 * Users and sessions: signup (and DISABLE_SIGNUPS), login with equal answers for a wrong password and an
 * unknown email, throttling, logout (a POST under the same-origin rule) revoking the session at once,
 * verification and password reset with single-use tokens mailed through the file outbox (a reset or a
 * password change spending every reset link), and the CLI's `user create`.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createStack, type Service, type Stack } from "../support/stack.ts"
import { Browser, mailedToken } from "./support.ts"

let stack: Stack
let api: Service
const outbox = mkdtempSync(join(tmpdir(), "ms-accounts-outbox-"))

/** `user create` with the password piped in. */
const createUser = (email: string, password: string) =>
  spawnSync(process.execPath, ["src/main.ts", "user", "create", "--email", email, "--password-stdin"], {
    cwd: new URL("../../", import.meta.url).pathname,
    env: stack.env,
    input: `${password}\n`,
    encoding: "utf8"
  })

/** Waits until the platform's mail queue is empty (every request made so far resolved and sent). */
const queueSent = async () => {
  const deadline = Date.now() + 5_000
  while ((await stack.query("SELECT 1 FROM platform_mail")).length > 0) {
    if (Date.now() > deadline) throw new Error("platform mail still queued after 5 s")
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0", OUTBOX_DIR: outbox, DISABLE_SIGNUPS: "true" })
  api = await stack.start("api")
})
afterAll(async () => {
  await stack?.stop()
})

describe("signup", () => {
  it("lets the very first user in despite DISABLE_SIGNUPS, as owner of a first project, and refuses the next", async () => {
    const legacy = await stack.createProject("Made with the CLI")
    // Three at once on the empty installation: exactly one of them is first.
    const contenders = ["Founder@Example.com", "rival1@example.com", "rival2@example.com"].map((email) => ({
      email,
      browser: new Browser(api.url)
    }))
    const replies = await Promise.all(
      contenders.map(({ email, browser }) => browser.post("/auth/signup", { email, password: "correct horse battery" }))
    )
    expect(replies.map((reply) => reply.status).sort()).toEqual([201, 403, 403])
    const winner = replies.findIndex((reply) => reply.status === 201)
    const { browser } = contenders[winner]!
    const email = contenders[winner]!.email.toLowerCase()
    expect(replies[winner]!.json.user.email).toBe(email)
    const cookie = (await new Browser(api.url).post("/auth/login", { email, password: "correct horse battery" }))
      .headers.getSetCookie().find((line) => line.startsWith("mailstream_session="))!
    expect(cookie).toMatch(/HttpOnly/i)
    expect(cookie).toMatch(/SameSite=Lax/i)
    expect(cookie).toMatch(/Max-Age=\d+/i)
    expect(cookie).not.toMatch(/Secure/i) // PUBLIC_URL is http here
    // The CLI-made project, nobody's until now, is the first user's.
    const projects = await browser.get("/users/@me/projects")
    expect(projects.json).toEqual([expect.objectContaining({ id: legacy.id, role: "OWNER" })])

    const refused = await new Browser(api.url).post("/auth/signup", { email: "second@example.com", password: "long enough pw" })
    expect(refused.status).toBe(403)
    expect(refused.json.error.code).toBe("SIGNUPS_DISABLED")
  })

  it("refuses a taken email, a short password and a bad email", async () => {
    const browser = new Browser(api.url)
    expect((await browser.post("/auth/signup", { email: "rival1@example.com", password: "long enough pw" })).status).toBe(403)
    const short = await browser.post("/auth/signup", { email: "x@example.com", password: "short" })
    expect(short.status).toBe(422)
    expect(short.json.error.errors[0].field).toBe("password")
    expect((await browser.post("/auth/signup", { email: "nope", password: "long enough pw" })).status).toBe(422)
  })

  it("creates users from the CLI with the password on stdin", async () => {
    const result = createUser("ops@example.com", "from the pipeline")
    expect(result.status, result.stderr).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ email: "ops@example.com" })
    expect(result.stdout + result.stderr).not.toContain("from the pipeline")
    const login = await new Browser(api.url).post("/auth/login", { email: "ops@example.com", password: "from the pipeline" })
    expect(login.status).toBe(200)
    const [row] = await stack.query<{ password_hash: string }>("SELECT password_hash FROM users WHERE email = 'ops@example.com'")
    expect(row!.password_hash).toMatch(/^\$argon2id\$/)
  })
})

describe("login and sessions", () => {
  it("answers a wrong password and an unknown email alike, in about the same time", async () => {
    const browser = new Browser(api.url)
    const timed = async (email: string) => {
      const started = performance.now()
      const reply = await browser.post("/auth/login", { email, password: "wrong password!" })
      return { reply, ms: performance.now() - started }
    }
    const wrong = await timed("ops@example.com")
    const unknown = await timed("nobody-here@example.com")
    for (const { reply } of [wrong, unknown]) {
      expect(reply.status).toBe(401)
      expect(reply.json.error).toMatchObject({ code: "INVALID_CREDENTIALS", message: "Wrong email or password" })
    }
    // Both run one argon2 verification: neither is a fast path.
    expect(Math.abs(wrong.ms - unknown.ms)).toBeLessThan(Math.max(wrong.ms, unknown.ms) * 0.8 + 30)
    expect(unknown.ms).toBeGreaterThan(5)
  })

  it("slows down repeated failures for one email with 429 and Retry-After", async () => {
    const browser = new Browser(api.url)
    const email = "target@example.com"
    createUser(email, "the real password")
    for (let i = 0; i < 5; i++) expect((await browser.post("/auth/login", { email, password: `guess ${i} wrong` })).status).toBe(401)
    const blocked = await browser.post("/auth/login", { email, password: "the real password" })
    expect(blocked.status).toBe(429)
    expect(blocked.json.error.code).toBe("TOO_MANY_ATTEMPTS")
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0)
  })

  it("logout revokes the session at once, even for a copy of the cookie", async () => {
    const browser = new Browser(api.url)
    expect((await browser.post("/auth/login", { email: "ops@example.com", password: "from the pipeline" })).status).toBe(200)
    const copy = new Browser(api.url)
    for (const [name, value] of browser.cookies) copy.cookies.set(name, value)
    expect((await copy.get("/users/@me")).json.email).toBe("ops@example.com")
    const out = await browser.post("/auth/logout")
    expect(out.status).toBe(200)
    expect(browser.cookies.has("mailstream_session")).toBe(false)
    const after = await copy.get("/users/@me")
    expect(after.status).toBe(401)
    expect(after.json.error.code).toBe("UNAUTHENTICATED")
  })

  it("signs out only on a POST from the dashboard's origin: another site cannot sign a user out", async () => {
    const browser = new Browser(api.url)
    expect((await browser.post("/auth/login", { email: "ops@example.com", password: "from the pipeline" })).status).toBe(200)
    const signedIn = async () => (await browser.get("/users/@me")).status
    // A GET changes nothing (any page could load it as an image): 405, pointing at the POST.
    const byGet = await browser.get("/auth/logout")
    expect(byGet.status).toBe(405)
    expect(byGet.json.error.code).toBe("METHOD_NOT_ALLOWED")
    expect(byGet.headers.get("allow")).toBe("POST")
    expect(browser.cookies.has("mailstream_session")).toBe(true)
    expect(await signedIn()).toBe(200)
    // What another site's form or script would send: its own Origin, or none with a cross-site fetch.
    const crossSite: Array<Record<string, string>> = [
      { origin: "https://evil.example" },
      { origin: "https://evil.example", "content-type": "application/x-www-form-urlencoded" },
      { origin: "", "sec-fetch-site": "cross-site" }
    ]
    for (const headers of crossSite) {
      const refused = await browser.call("POST", "/auth/logout", undefined, headers)
      expect(refused.status, JSON.stringify(headers)).toBe(403)
      expect(refused.json.error.code).toBe("CSRF_REJECTED")
      expect(browser.cookies.has("mailstream_session")).toBe(true)
      expect(await signedIn()).toBe(200)
    }
    expect((await browser.post("/auth/logout")).json).toEqual({ success: true })
    expect(await signedIn()).toBe(401)
    // Signed out already (or never in): nothing to refuse, the cookie is cleared all the same.
    expect((await new Browser(api.url).post("/auth/logout", undefined, { origin: "https://evil.example" })).status).toBe(200)
  })

  it("refuses a forged or tampered cookie", async () => {
    const browser = new Browser(api.url)
    await browser.post("/auth/login", { email: "ops@example.com", password: "from the pipeline" })
    const token = browser.cookies.get("mailstream_session")!
    const [header, payload, signature] = token.split(".")
    const forged = JSON.parse(Buffer.from(payload!, "base64url").toString())
    forged.sub = "00000000-0000-7000-8000-000000000000"
    browser.cookies.set("mailstream_session", `${header}.${Buffer.from(JSON.stringify(forged)).toString("base64url")}.${signature}`)
    expect((await browser.get("/users/@me")).status).toBe(401)
    expect((await new Browser(api.url).get("/users/@me")).status).toBe(401)
  })
})

describe("email verification and password reset", () => {
  it("verifies the email with a single-use token", async () => {
    // `user create` starts verified (the operator vouches); start this one over as a fresh signup would.
    await stack.query("UPDATE users SET email_verified_at = NULL WHERE email = 'ops@example.com'")
    const browser = new Browser(api.url)
    await browser.post("/auth/login", { email: "ops@example.com", password: "from the pipeline" })
    expect((await browser.get("/users/@me")).json.emailVerified).toBe(false)
    expect((await browser.post("/auth/request-verification")).status).toBe(200)
    const flood = await browser.post("/auth/request-verification")
    expect(flood.status).toBe(429)
    expect(Number(flood.headers.get("retry-after"))).toBeGreaterThan(0)
    const token = await mailedToken(outbox, "ops@example.com", "/verify-email")
    expect((await browser.post("/auth/verify-email", { token })).json).toEqual({ success: true })
    expect((await browser.get("/users/@me")).json.emailVerified).toBe(true)
    const again = await browser.post("/auth/verify-email", { token })
    expect(again.status).toBe(400)
    expect(again.json.error.code).toBe("INVALID_TOKEN")
  })

  it("resets a password, revoking every session; the request never reveals whether the email exists", async () => {
    const browser = new Browser(api.url)
    await browser.post("/auth/login", { email: "ops@example.com", password: "from the pipeline" })
    const known = await new Browser(api.url).post("/auth/request-password-reset", { email: "ops@example.com" })
    const unknown = await new Browser(api.url).post("/auth/request-password-reset", { email: "ghost@example.com" })
    expect(known.status).toBe(200)
    expect(unknown.status).toBe(200)
    expect(known.json).toEqual(unknown.json)
    const token = await mailedToken(outbox, "ops@example.com", "/reset-password")
    expect((await new Browser(api.url).post("/auth/reset-password", { token, password: "a brand new one" })).status).toBe(200)
    expect((await browser.get("/users/@me")).status).toBe(401)
    expect((await new Browser(api.url).post("/auth/login", { email: "ops@example.com", password: "from the pipeline" })).status).toBe(401)
    expect((await new Browser(api.url).post("/auth/login", { email: "ops@example.com", password: "a brand new one" })).status).toBe(200)
    const reused = await new Browser(api.url).post("/auth/reset-password", { token, password: "yet another one" })
    expect(reused.json.error.code).toBe("INVALID_TOKEN")
  })

  it("refuses an expired token", async () => {
    // One mail a minute per address: a second request right away answers the same but mails nothing.
    expect((await new Browser(api.url).post("/auth/request-password-reset", { email: "ops@example.com" })).status).toBe(200)
    await queueSent()
    expect((await stack.query("SELECT 1 FROM account_tokens WHERE purpose = 'reset_password'")).length).toBe(1)
    await stack.query("UPDATE account_tokens SET created_at = now() - interval '2 minutes'")
    await new Browser(api.url).post("/auth/request-password-reset", { email: "ops@example.com" })
    const token = await mailedToken(outbox, "ops@example.com", "/reset-password", 1)
    await stack.query(
      "UPDATE account_tokens SET expires_at = now() - interval '1 second' WHERE purpose = 'reset_password' AND used_at IS NULL"
    )
    const reply = await new Browser(api.url).post("/auth/reset-password", { token, password: "too late for it" })
    expect(reply.status).toBe(400)
    expect(reply.json.error.code).toBe("INVALID_TOKEN")
  })
})

describe("reset links are spent together", () => {
  /** Lets the next reset request past the one-a-minute limit (as if the last link was mailed 2 minutes ago). */
  const afterCooldown = (email: string) =>
    stack.query("UPDATE account_tokens SET created_at = created_at - interval '2 minutes' WHERE email = $1", [email])
  const resetLink = async (email: string, mailedBefore: number) => {
    expect((await new Browser(api.url).post("/auth/request-password-reset", { email })).status).toBe(200)
    return mailedToken(outbox, email, "/reset-password", mailedBefore)
  }
  const reset = (token: string, password: string) => new Browser(api.url).post("/auth/reset-password", { token, password })

  it("a successful reset spends every other reset link mailed before it", async () => {
    const email = "two-links@example.com"
    createUser(email, "the first password")
    const older = await resetLink(email, 0)
    await afterCooldown(email)
    const newer = await resetLink(email, 1)
    expect((await reset(newer, "the second password")).status).toBe(200)
    const stale = await reset(older, "an attacker's choice")
    expect(stale.status).toBe(400)
    expect(stale.json.error.code).toBe("INVALID_TOKEN")
    expect((await new Browser(api.url).post("/auth/login", { email, password: "the second password" })).status).toBe(200)
  })

  it("a password change spends every reset link and ends every other session", async () => {
    const email = "changer@example.com"
    createUser(email, "the first password")
    const here = new Browser(api.url)
    const elsewhere = new Browser(api.url)
    for (const browser of [here, elsewhere]) await browser.post("/auth/login", { email, password: "the first password" })
    const link = await resetLink(email, 0)
    const wrong = await here.post("/auth/change-password", { currentPassword: "not the password", newPassword: "the second password" })
    expect(wrong.status).toBe(403)
    expect(wrong.json.error.code).toBe("WRONG_PASSWORD")
    const short = await here.post("/auth/change-password", { currentPassword: "the first password", newPassword: "short" })
    expect(short.status).toBe(422)
    const crossSite = await here.post("/auth/change-password", { currentPassword: "the first password", newPassword: "x".repeat(12) }, {
      origin: "https://evil.example"
    })
    expect(crossSite.json.error.code).toBe("CSRF_REJECTED")
    expect((await here.post("/auth/change-password", { currentPassword: "the first password", newPassword: "the second password" })).json)
      .toEqual({ success: true })
    expect((await here.get("/users/@me")).status).toBe(200)
    expect((await elsewhere.get("/users/@me")).status).toBe(401)
    expect((await reset(link, "an attacker's choice")).json.error.code).toBe("INVALID_TOKEN")
    expect((await new Browser(api.url).post("/auth/login", { email, password: "the first password" })).status).toBe(401)
    expect((await new Browser(api.url).post("/auth/login", { email, password: "the second password" })).status).toBe(200)
  })
})

describe("GET /config", () => {
  it("says signups are off, no OAuth providers and no billing", async () => {
    const config = await new Browser(api.url).get("/config")
    expect(config.json).toMatchObject({ signupsEnabled: false, oauthProviders: [], billing: false, trackingDefault: true })
    expect(config.json.version).toBeTypeOf("string")
    const oauth = await new Browser(api.url).get("/auth/oauth-config")
    expect(oauth.json).toEqual({ providers: [] })
  })
})
