/**
 * Sign-in throttling behind a reverse proxy (issue 33, finding 3), through HTTP. Two api processes share
 * one database: `proxied` trusts loopback as its proxy (TRUSTED_PROXIES), `direct` trusts nobody, so this
 * test's connections are a proxy's to the first and anonymous clients' to the second. X-Forwarded-For
 * names the client only from a trusted peer, read from the right; one client's failures lock out neither
 * the other clients behind the same proxy nor, through its email, an account's owner on a browser that
 * signed in to it before (its known-device cookie), while the one guessing stays slowed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createStack, type Service, type Stack } from "../support/stack.ts"
import { Browser, signUp } from "./support.ts"

let stack: Stack
let proxied: Service
let direct: Service

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0" })
  ;[proxied, direct] = await Promise.all([
    stack.start("api", { TRUSTED_PROXIES: "127.0.0.0/8,::1" }),
    stack.start("api")
  ])
})
afterAll(async () => {
  await stack?.stop()
})

/** A sign-in from `browser` (a fresh one by default) as if a proxy forwarded it for `forwardedFor`. */
const signIn = (base: string, email: string, password: string, forwardedFor?: string, browser = new Browser(base)) =>
  browser.post("/auth/login", { email, password }, forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor })

const PASSWORD = "correct horse battery"
const madeUp = (i: number) => `nobody-${i}-${Math.random().toString(36).slice(2)}@example.com`

describe("the client address behind a proxy", () => {
  it("comes from X-Forwarded-For, read from the right, only when the peer is a trusted proxy", async () => {
    const { user } = await signUp(proxied.url, "bystander@example.com")
    // 20 failures from one client behind the proxy; what it writes to the left of its address varies.
    for (let i = 0; i < 20; i++) {
      expect((await signIn(proxied.url, madeUp(i), "wrong password", `10.${i}.0.1, 203.0.113.7`)).status).toBe(401)
    }
    const locked = await signIn(proxied.url, madeUp(99), "wrong password", "198.51.100.1, 203.0.113.7")
    expect(locked.status).toBe(429)
    expect(locked.json.error.code).toBe("TOO_MANY_ATTEMPTS")
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0)
    // A further trusted hop on the right is skipped: still the same client.
    expect((await signIn(proxied.url, madeUp(98), "wrong password", "203.0.113.7, 127.0.0.9")).status).toBe(429)
    // Another client behind the same proxy is not locked out.
    const other = await signIn(proxied.url, user.email, PASSWORD, "203.0.113.8")
    expect(other.status, other.text).toBe(200)

    // A peer that is not a trusted proxy: its X-Forwarded-For is ignored, its failures are its own.
    for (let i = 0; i < 20; i++) {
      expect((await signIn(direct.url, madeUp(100 + i), "wrong password", `203.0.113.${100 + i}`)).status).toBe(401)
    }
    expect((await signIn(direct.url, user.email, PASSWORD, "203.0.113.200")).status).toBe(429)
    // Behind the proxy, that peer's address is the proxy's, not a client's: nobody there is locked out.
    expect((await signIn(proxied.url, user.email, PASSWORD, "203.0.113.201")).status).toBe(200)
  })

  it("counts an IPv6 client's failures by its /64", async () => {
    const { user } = await signUp(proxied.url, "ipv6-neighbour@example.com")
    for (let i = 0; i < 20; i++) {
      expect((await signIn(proxied.url, madeUp(200 + i), "wrong password", `2001:db8:1:2::${(i + 1).toString(16)}`)).status).toBe(401)
    }
    expect((await signIn(proxied.url, madeUp(299), "wrong password", "[2001:db8:1:2:ffff::1]:443")).status).toBe(429)
    expect((await signIn(proxied.url, user.email, PASSWORD, "2001:db8:1:3::1")).status).toBe(200)
  })
})

describe("an account whose email is being guessed", () => {
  it("still lets its owner in from a browser that signed in before; the one guessing stays slowed", async () => {
    const { user: victim } = await signUp(proxied.url, "victim@example.com")
    const laptop = new Browser(proxied.url)
    expect((await signIn(proxied.url, victim.email, PASSWORD, "192.0.2.10", laptop)).status).toBe(200)
    const cookie = (await signIn(proxied.url, victim.email, PASSWORD, "192.0.2.10", laptop)).headers.getSetCookie()
      .find((line) => line.startsWith("mailstream_device="))!
    expect(cookie).toMatch(/HttpOnly/i)
    expect(cookie).toMatch(/Path=\/auth\/login/i)
    expect(cookie).toMatch(/SameSite=Strict/i)
    expect(cookie).toMatch(/Max-Age=31536000/i)

    // Someone guesses from ever new addresses, so no per-address limit stops them: the email's does.
    for (let i = 0; i < 5; i++) {
      expect((await signIn(proxied.url, victim.email, `guess ${i}`, `198.51.100.${i + 1}`)).status).toBe(401)
    }
    const slowed = await signIn(proxied.url, victim.email, "guess 5", "198.51.100.6")
    expect(slowed.status).toBe(429)
    expect(Number(slowed.headers.get("retry-after"))).toBeGreaterThan(800)
    // Browsers that never signed in to the account wait too, with the right password (the trade-off).
    expect((await signIn(proxied.url, victim.email, PASSWORD, "198.51.100.7")).status).toBe(429)
    // A device cookie of another account, or anything that is not one, does not help.
    const { browser: attacker } = await signUp(proxied.url, "attacker@example.com")
    expect((await signIn(proxied.url, "attacker@example.com", PASSWORD, "198.51.100.8", attacker)).status).toBe(200)
    expect(attacker.cookies.has("mailstream_device")).toBe(true)
    expect((await signIn(proxied.url, victim.email, PASSWORD, "198.51.100.8", attacker)).status).toBe(429)
    const forger = new Browser(proxied.url)
    forger.cookies.set("mailstream_device", attacker.cookies.get("mailstream_session")!)
    expect((await signIn(proxied.url, victim.email, PASSWORD, "198.51.100.9", forger)).status).toBe(429)

    // The owner's browser signs in, from wherever it is.
    expect((await signIn(proxied.url, victim.email, PASSWORD, "192.0.2.10", laptop)).status).toBe(200)
    expect((await signIn(proxied.url, victim.email, PASSWORD, "198.51.100.10", laptop)).status).toBe(200)
    // And the one guessing is still slowed: the owner's sign-ins did not reset the email's failures.
    expect((await signIn(proxied.url, victim.email, "guess 6", "198.51.100.11")).status).toBe(429)

    // A known device is held to its own failures: a stolen cookie is no way round the limits.
    for (let i = 0; i < 5; i++) {
      expect((await signIn(proxied.url, victim.email, `typo ${i}`, "192.0.2.10", laptop)).status).toBe(401)
    }
    expect((await signIn(proxied.url, victim.email, PASSWORD, "192.0.2.10", laptop)).status).toBe(429)
  })
})
