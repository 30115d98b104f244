/**
 * The accounts' outside integrations, each against a real local counterpart: Google sign-in against an
 * OpenID Connect server (oauth2-mock-server), Stripe through the official package pointed at a local
 * HTTP server answering the calls used, webhook signatures made with the package; image uploads decided
 * from their bytes; REQUIRE_EMAIL_VERIFICATION on dashboard sends.
 */
import { createServer, type IncomingMessage, type Server } from "node:http"
import { OAuth2Server } from "oauth2-mock-server"
import Stripe from "stripe"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { billingPagePath } from "../../src/http/api/dashboard.ts"
import { createStack, request, type Service, type Stack } from "../support/stack.ts"
import { type GitHubAccount, signInWith as signInThrough, startGitHub } from "./oauthProviders.ts"
import { Browser, signUp } from "./support.ts"

const WEBHOOK_SECRET = "whsec_test_secret"

let stack: Stack
let api: Service
let oidc: OAuth2Server
let github: Awaited<ReturnType<typeof startGitHub>>
const setGitHubAccount = (account: GitHubAccount) => void (github.account.current = account)
let stripeServer: Server
const stripeCalls: Array<{ method: string; path: string; body: string; authorization: string | undefined }> = []
/** What the OIDC server puts in its next tokens. */
let identity: Record<string, unknown> = {}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = ""
    req.on("data", (chunk) => (body += chunk))
    req.on("end", () => resolve(body))
  })

/** The few Stripe API calls the service makes, answered as Stripe would. */
const startStripe = () =>
  new Promise<string>((resolve) => {
    stripeServer = createServer(async (req, res) => {
      const body = await readBody(req)
      const path = req.url ?? ""
      stripeCalls.push({ method: req.method ?? "", path, body, authorization: req.headers.authorization })
      const json = (value: unknown) => {
        res.writeHead(200, { "content-type": "application/json", "request-id": "req_test" })
        res.end(JSON.stringify(value))
      }
      if (req.method === "POST" && path === "/v1/customers") return json({ id: "cus_test_1", object: "customer" })
      if (req.method === "POST" && path === "/v1/checkout/sessions") {
        return json({ id: "cs_test_1", object: "checkout.session", url: "https://checkout.stripe.test/c/cs_test_1" })
      }
      if (req.method === "POST" && path === "/v1/billing_portal/sessions") {
        return json({ id: "bps_test_1", object: "billing_portal.session", url: "https://billing.stripe.test/p/bps_test_1" })
      }
      if (req.method === "GET" && path.startsWith("/v1/invoices")) {
        return json({
          object: "list",
          url: "/v1/invoices",
          has_more: false,
          data: [{
            id: "in_test_1",
            object: "invoice",
            number: "MS-0001",
            status: "paid",
            amount_due: 2900,
            amount_paid: 2900,
            currency: "eur",
            created: 1_767_225_600,
            hosted_invoice_url: "https://invoice.stripe.test/i/1",
            invoice_pdf: null
          }]
        })
      }
      res.writeHead(404, { "content-type": "application/json" })
      res.end(JSON.stringify({ error: { type: "invalid_request_error", message: `unexpected ${req.method} ${path}` } }))
    })
    stripeServer.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(stripeServer.address() as { port: number }).port}`))
  })

beforeAll(async () => {
  oidc = new OAuth2Server()
  await oidc.issuer.keys.generate("RS256")
  await oidc.start(0, "127.0.0.1")
  oidc.service.on("beforeTokenSigning", (token: { payload: Record<string, unknown> }) => Object.assign(token.payload, identity))
  github = await startGitHub()
  const stripeUrl = await startStripe()
  stack = await createStack({
    RATE_LIMIT_PER_MINUTE: "0",
    GOOGLE_CLIENT_ID: "mailstream-test",
    GOOGLE_CLIENT_SECRET: "google-secret",
    GOOGLE_ISSUER: oidc.issuer.url!,
    ...github.env,
    STRIPE_SECRET_KEY: "sk_test_local",
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    STRIPE_PRICE_ID: "price_test_1",
    STRIPE_API_URL: stripeUrl,
    REQUIRE_EMAIL_VERIFICATION: "true",
    UPLOAD_MAX_BYTES: "20000"
  })
  api = await stack.start("api")
})
afterAll(async () => {
  await stack?.stop()
  await oidc?.stop()
  await github?.server.stop()
  await new Promise((resolve) => stripeServer?.close(resolve))
})

const signInWith = (provider: "google" | "github", browser: Browser) =>
  signInThrough(provider, browser, (provider === "google" ? oidc : github.server).issuer.url!)
const signInWithGoogle = (browser: Browser) => signInWith("google", browser)

describe("OAuth sign-in (OpenID Connect)", () => {
  it("lists the configured providers", async () => {
    const config = await new Browser(api.url).get("/auth/oauth-config")
    expect(config.json.providers).toEqual([
      { id: "github", name: "GitHub", url: expect.stringMatching(/\/auth\/oauth\/github$/) },
      { id: "google", name: "Google", url: expect.stringMatching(/\/auth\/oauth\/google$/) }
    ])
    expect((await new Browser(api.url).get("/auth/oauth/gitlab")).status).toBe(422)
    expect((await new Browser(api.url).get("/config")).json.oauthProviders).toEqual(["github", "google"])
  })

  it("creates a user from a verified Google account and signs them in", async () => {
    identity = { sub: "google-111", email: "Oauth.User@Example.com", email_verified: true }
    const browser = new Browser(api.url)
    const done = await signInWithGoogle(browser)
    expect(done.status).toBe(302)
    expect(browser.cookies.has("mailstream_session")).toBe(true)
    const me = await browser.get("/users/@me")
    expect(me.json).toMatchObject({ email: "oauth.user@example.com", emailVerified: true, hasPassword: false })
    // The same provider account later: the same user.
    const again = new Browser(api.url)
    await signInWithGoogle(again)
    expect((await again.get("/users/@me")).json.id).toBe(me.json.id)
  })

  it("links to an existing user by verified email, and refuses an unverified one", async () => {
    const { user } = await signUp(api.url, "has-password@example.com")
    // Verified, as the link mailed at signup does once opened signed in (an unverified one is not linked: takeover.test.ts).
    await stack.query("UPDATE users SET email_verified_at = now() WHERE id = $1", [user.id])
    identity = { sub: "google-222", email: "has-password@example.com", email_verified: true }
    const browser = new Browser(api.url)
    await signInWithGoogle(browser)
    expect((await browser.get("/users/@me")).json).toMatchObject({ id: user.id, emailVerified: true })

    identity = { sub: "google-333", email: "unverified@example.com", email_verified: false }
    const refused = await signInWithGoogle(new Browser(api.url))
    expect(refused.status).toBe(400)
    expect(refused.json.error.code).toBe("OAUTH_FAILED")
    expect((await stack.query("SELECT 1 FROM users WHERE email = 'unverified@example.com'")).length).toBe(0)
  })

  it("signs in through GitHub with the account's primary verified email", async () => {
    setGitHubAccount({
      id: 4242,
      emails: [{ email: "old@example.com", primary: false, verified: true }, { email: "Octo@Example.com", primary: true, verified: true }]
    })
    const browser = new Browser(api.url)
    expect((await signInWith("github", browser)).status).toBe(302)
    const me = await browser.get("/users/@me")
    expect(me.json).toMatchObject({ email: "octo@example.com", emailVerified: true })
    const [link] = await stack.query<{ subject: string }>("SELECT subject FROM user_identities WHERE provider = 'github'")
    expect(link!.subject).toBe("4242")

    setGitHubAccount({ id: 5151, emails: [{ email: "unverified-gh@example.com", primary: true, verified: false }] })
    const refused = await signInWith("github", new Browser(api.url))
    expect(refused.status).toBe(400)
    expect(refused.json.error.code).toBe("OAUTH_FAILED")
  })

  it("refuses a callback whose state does not match the browser's", async () => {
    identity = { sub: "google-111", email: "oauth.user@example.com", email_verified: true }
    const browser = new Browser(api.url)
    await browser.get("/auth/oauth/google")
    const forged = await browser.get("/auth/oauth/google/callback?code=abc&state=not-the-one")
    expect(forged.status).toBe(400)
    expect(forged.json.error.code).toBe("OAUTH_FAILED")
    expect(browser.cookies.has("mailstream_session")).toBe(false)
  })
})

describe("Stripe billing", () => {
  let owner: Browser
  let projectId: string

  beforeAll(async () => {
    owner = (await signUp(api.url, "payer@example.com")).browser
    projectId = (await owner.post("/users/@me/projects", { name: "Paying" })).json.id
  })

  it("starts a checkout for the project (creating its customer once) and opens the portal", async () => {
    expect((await owner.post(`/users/@me/projects/${projectId}/billing-portal`)).json.error.code).toBe("NO_SUBSCRIPTION")
    const checkout = await owner.post(`/users/@me/projects/${projectId}/checkout`)
    expect(checkout.status).toBe(200)
    expect(checkout.json).toEqual({ url: "https://checkout.stripe.test/c/cs_test_1" })
    const session = stripeCalls.find((call) => call.path === "/v1/checkout/sessions")!
    expect(session.authorization).toBe("Bearer sk_test_local")
    const form = new URLSearchParams(session.body)
    expect(form.get("client_reference_id")).toBe(projectId)
    expect(form.get("customer")).toBe("cus_test_1")
    expect(form.get("line_items[0][price]")).toBe("price_test_1")
    // Stripe sends the user back to the dashboard's billing page of the project (under PUBLIC_URL), not to a JSON 404.
    const returnsTo = (url: string | null) => {
      const parsed = new URL(url!)
      return `${parsed.pathname}${parsed.search}`
    }
    const billingPage = billingPagePath(projectId)
    expect(returnsTo(form.get("success_url"))).toBe(`${billingPage}?checkout=success`)
    expect(returnsTo(form.get("cancel_url"))).toBe(`${billingPage}?checkout=cancelled`)
    await owner.post(`/users/@me/projects/${projectId}/checkout`)
    expect(stripeCalls.filter((call) => call.path === "/v1/customers")).toHaveLength(1)

    expect((await owner.post(`/users/@me/projects/${projectId}/billing-portal`)).json).toEqual({
      url: "https://billing.stripe.test/p/bps_test_1"
    })
    const portal = new URLSearchParams(stripeCalls.findLast((call) => call.path === "/v1/billing_portal/sessions")!.body)
    expect(returnsTo(portal.get("return_url"))).toBe(billingPage)
    for (const url of [form.get("success_url"), form.get("cancel_url"), portal.get("return_url")]) {
      const page = await fetch(`${api.url}${returnsTo(url)}`)
      expect(page.status, url!).toBe(200)
      expect(page.headers.get("content-type"), url!).toContain("text/html")
      expect(await page.text(), url!).toContain('<div id="root">')
    }
    const invoices = await owner.get(`/users/@me/projects/${projectId}/billing-invoices`)
    expect(invoices.json.data).toEqual([expect.objectContaining({ id: "in_test_1", number: "MS-0001", amountPaid: 2900, currency: "eur" })])
    const stranger = (await signUp(api.url, "not-a-payer@example.com")).browser
    expect((await stranger.post(`/users/@me/projects/${projectId}/checkout`)).status).toBe(404)
    expect((await request(api.url, "GET", "/config")).json.billing).toBe(true)
  })

  it("applies webhook events signed with the secret and refuses forged ones", async () => {
    const signer = new Stripe("sk_test_local")
    const payload = JSON.stringify({
      id: "evt_1",
      object: "event",
      type: "checkout.session.completed",
      data: {
        object: {
          id: "cs_test_1",
          object: "checkout.session",
          client_reference_id: projectId,
          customer: "cus_test_1",
          subscription: "sub_1"
        }
      }
    })
    const post = (body: string, signature: string) =>
      request(api.url, "POST", "/webhooks/incoming/stripe", { rawBody: body, headers: { "stripe-signature": signature } })
    const good = await post(payload, signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }))
    expect(good.status, good.text).toBe(200)
    expect(good.json).toEqual({ received: true })
    const [row] = await stack.query<{ stripe_subscription_id: string; subscription_status: string }>(
      "SELECT stripe_subscription_id, subscription_status FROM projects WHERE id = $1",
      [projectId]
    )
    expect(row).toEqual({ stripe_subscription_id: "sub_1", subscription_status: "active" })

    const forged = await post(payload, signer.webhooks.generateTestHeaderString({ payload, secret: "whsec_someone_else" }))
    expect(forged.status).toBe(400)
    expect(forged.json.error.code).toBe("INVALID_SIGNATURE")
    const tampered = payload.replace("sub_1", "sub_2")
    expect((await post(tampered, signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }))).status).toBe(400)

    const cancelled = JSON.stringify({
      id: "evt_2",
      object: "event",
      type: "customer.subscription.deleted",
      data: { object: { id: "sub_1", object: "subscription", customer: "cus_test_1", status: "canceled" } }
    })
    expect((await post(cancelled, signer.webhooks.generateTestHeaderString({ payload: cancelled, secret: WEBHOOK_SECRET }))).status).toBe(
      200
    )
    const [after] = await stack.query<{ subscription_status: string }>("SELECT subscription_status FROM projects WHERE id = $1", [
      projectId
    ])
    expect(after!.subscription_status).toBe("canceled")
  })
})

describe("REQUIRE_EMAIL_VERIFICATION", () => {
  it("lets an unverified user sign in and manage content, but not send", async () => {
    const { browser } = await signUp(api.url, "unverified-sender@example.com")
    const projectId = (await browser.post("/users/@me/projects", { name: "Mine" })).json.id
    const headers = { "x-project-id": projectId }
    expect((await browser.call("POST", "/contacts", { email: "x@example.org" }, headers)).status).toBe(201)
    const sent = await browser.call("POST", "/v1/send", { from: "a@b.test", to: "x@example.org", subject: "s", body: "b" }, headers)
    expect(sent.status).toBe(403)
    expect(sent.json.error.code).toBe("EMAIL_VERIFICATION_REQUIRED")
    const campaign = await browser.call("POST", "/campaigns/00000000-0000-7000-8000-000000000000/send", {}, headers)
    expect(campaign.json.error.code).toBe("EMAIL_VERIFICATION_REQUIRED")
  })
})

describe("image uploads", () => {
  const PNG = Buffer.from(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
    "base64"
  )
  let project: { id: string; secretKey: string }
  beforeAll(async () => {
    project = await stack.createProject("Uploads")
  })
  const upload = (bytes: Uint8Array, name: string, type: string, key = project.secretKey) => {
    const form = new FormData()
    form.append("file", new Blob([new Uint8Array(bytes)], { type }), name)
    return fetch(`${api.url}/uploads/image`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form })
  }

  it("stores an image by content and serves it with long cache headers and nosniff", async () => {
    const reply = await upload(PNG, "pixel.gif", "image/gif")
    expect(reply.status).toBe(201)
    const { url } = await reply.json() as { url: string }
    expect(url).toMatch(/\/uploads\/[0-9a-f]{64}\.png$/)
    const served = await fetch(`${api.url}${new URL(url).pathname}`)
    expect(served.status).toBe(200)
    expect(served.headers.get("content-type")).toBe("image/png")
    expect(served.headers.get("x-content-type-options")).toBe("nosniff")
    expect(served.headers.get("cache-control")).toContain("max-age=31536000")
    expect(Buffer.from(await served.arrayBuffer())).toEqual(PNG)
    // The same bytes again: the same address, stored once.
    expect(((await (await upload(PNG, "again.png", "image/png")).json()) as { url: string }).url).toBe(url)
    expect((await stack.query("SELECT 1 FROM uploads")).length).toBe(1)
  })

  it("refuses SVG, a forged type, an oversized file, no file and a missing key", async () => {
    const svg = await upload(
      Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
      "x.svg",
      "image/svg+xml"
    )
    expect(svg.status).toBe(422)
    expect(((await svg.json()) as any).error.code).toBe("UNSUPPORTED_IMAGE")
    const forged = await upload(Buffer.from("<html><script>alert(1)</script></html>"), "x.png", "image/png")
    expect(forged.status).toBe(422)
    const big = Buffer.concat([PNG, Buffer.alloc(30_000)])
    const oversized = await upload(big, "big.png", "image/png")
    expect(oversized.status).toBe(413)
    expect(((await oversized.json()) as any).error.code).toBe("PAYLOAD_TOO_LARGE")
    const none = await fetch(`${api.url}/uploads/image`, {
      method: "POST",
      headers: { authorization: `Bearer ${project.secretKey}` },
      body: new FormData()
    })
    expect(none.status).toBe(422)
    expect((await upload(PNG, "p.png", "image/png", "sk_nope")).status).toBe(401)
    expect((await fetch(`${api.url}/uploads/${"0".repeat(64)}.png`)).status).toBe(404)
    expect((await fetch(`${api.url}/uploads/whatever.svg`)).status).toBe(404)
  })
})

describe("the OpenAPI document", () => {
  it("describes the session cookie scheme, the dashboard endpoints and the multipart upload", async () => {
    const document = (await new Browser(api.url).get("/openapi.json")).json
    expect(document.components.securitySchemes.session).toMatchObject({ type: "apiKey", in: "cookie", name: "mailstream_session" })
    expect(document.paths["/contacts"].get.security).toEqual(expect.arrayContaining([{ secretKey: [] }, { session: [] }]))
    expect(document.paths["/users/@me/projects"].get.security).toEqual([{ session: [] }])
    expect(document.paths["/auth/login"].post.security ?? []).toEqual([])
    for (
      const path of [
        "/auth/signup",
        "/auth/login",
        "/auth/logout",
        "/auth/oauth-config",
        "/auth/verify-email",
        "/auth/request-verification",
        "/auth/request-password-reset",
        "/auth/reset-password",
        "/users/@me",
        "/users/@me/projects",
        "/users/@me/projects/{id}",
        "/users/@me/projects/{id}/regenerate-keys",
        "/users/@me/projects/{id}/reset",
        "/users/@me/projects/{id}/security",
        "/projects/{id}/security",
        "/projects/{id}/setup-state",
        "/projects/{id}/members",
        "/projects/{id}/members/{userId}",
        "/users/@me/projects/{id}/billing-limits",
        "/users/@me/projects/{id}/billing-consumption",
        "/users/@me/projects/{id}/checkout",
        "/users/@me/projects/{id}/billing-portal",
        "/users/@me/projects/{id}/billing-invoices",
        "/webhooks/incoming/stripe",
        "/uploads/image",
        "/config",
        "/auth/change-password",
        "/projects/{id}/invitations",
        "/projects/{id}/invitations/{invitationId}",
        "/projects/{id}/invitations/{invitationId}/resend"
      ]
    ) expect(document.paths, path).toHaveProperty([path])
    // Logout is a POST; the GET that answers 405 is not part of the API.
    expect(Object.keys(document.paths["/auth/logout"])).toEqual(["post"])
    expect(document.paths["/uploads/image"].post.requestBody.content).toHaveProperty(["multipart/form-data"])
  })
})
