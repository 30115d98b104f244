/// <reference lib="dom" />
/**
 * Browser tests: one Chromium per test file (Debian's, found or installed by scripts/ensure-browser.sh,
 * driven by playwright-core) against a real stack (`all`: api and worker, Postgres, NATS) serving the
 * built dashboard. After each test, no page of the test may have thrown or logged a console error,
 * except the failed responses a test says it provokes.
 *
 * The app authenticates by its session cookie. The file's first user signs up through the API before
 * any test (the first user of an installation owns the project made by the CLI) and pages open signed in
 * as them by default (their cookie put in the browser: the fast path); tests of the sign-in pages
 * themselves open pages with `user: null`. Platform mail (verification, reset, invitations) goes to a
 * file outbox, `env.outbox`. Test data is set up with the project's sk_ key (`env.call`).
 */
import { execFile } from "node:child_process"
import { mkdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import { afterAll, afterEach, beforeAll, expect } from "vitest"
import { mkdtemp, rm } from "node:fs/promises"
import { mailedToken, signUp } from "../../accounts/support.ts"
import { startDnsServer, type TestDnsServer } from "../../support/dns.ts"
import { createStack, type Service, type Stack, type TestProject } from "../../support/stack.ts"

const ROOT = new URL("../../../", import.meta.url).pathname
const run = promisify(execFile)

export const DESKTOP = { width: 1280, height: 800 } as const
export const PHONE = { width: 390, height: 844 } as const

/** A signed-in user: their credentials and their session cookie's value. */
export interface Session {
  readonly id: string
  readonly email: string
  readonly password: string
  readonly cookie: string
}

export const PASSWORD = "correct horse battery"

export interface BrowserEnv {
  readonly stack: Stack
  readonly api: Service
  readonly project: TestProject
  readonly dns: TestDnsServer
  /** The first user, OWNER of `project`. */
  readonly owner: Session
  /** Where the platform's own mail is written (see mailedToken in test/accounts/support.ts). */
  readonly outbox: string
  /** A page in a fresh context, signed in as `user` (default: the owner); `user: null` is a visitor. */
  page(options?: { readonly viewport?: { width: number; height: number }; readonly user?: Session | null }): Promise<Page>
  /** A new user, signed up through the API (the fast path for tests that need one, not for the sign-up page's). */
  signUp(email: string): Promise<Session>
  /** Console errors this page may log: the failed responses the test provokes on purpose. */
  allowConsoleErrors(page: Page, pattern: RegExp): void
  /** JSON call to the API with the project's secret key (to set up data). */
  call(method: string, path: string, body?: unknown, key?: string): Promise<any>
}

/** Where screenshots go: docs/screenshots with UPDATE_SCREENSHOTS=1, else a temporary directory. */
export const screenshotDir = process.env.UPDATE_SCREENSHOTS === "1"
  ? join(ROOT, "docs/screenshots")
  : join(tmpdir(), "mailstream-screenshots")
mkdirSync(screenshotDir, { recursive: true })

export const screenshot = (page: Page, name: string) => page.screenshot({ path: join(screenshotDir, `${name}.png`) })

const browserPath = async () => (await run("bash", [join(ROOT, "scripts/ensure-browser.sh")])).stdout.trim()

/** Sets up the browser and stack for the calling test file; the returned object is filled in beforeAll. */
export const useBrowser = (options: { readonly env?: Record<string, string> } = {}): BrowserEnv => {
  let browser: Browser
  let owner: Session
  let outbox: string
  let stack: Stack
  let api: Service
  let project: TestProject
  let dns: TestDnsServer
  let contexts: Array<BrowserContext> = []
  const problems = new Map<Page, Array<string>>()
  const allowed = new Map<Page, Array<RegExp>>()

  beforeAll(async () => {
    const [executablePath] = await Promise.all([
      browserPath(),
      run(process.execPath, ["scripts/build-web.ts"], { cwd: ROOT })
    ])
    dns = await startDnsServer()
    outbox = await mkdtemp(join(tmpdir(), "mailstream-browser-outbox-"))
    stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0", DNS_SERVERS: dns.address, OUTBOX_DIR: outbox, ...options.env })
    ;[api, project] = await Promise.all([stack.start("all"), stack.createProject("Browser test project")])
    owner = await signUpSession("owner@example.com")
    // The owner has verified their email, as a real one would have (no reminder in their screenshots).
    const verified = await fetch(`${api.url}/auth/verify-email`, {
      method: "POST",
      // Signed in as them: the link verifies the account whose session opens it.
      headers: { "content-type": "application/json", cookie: `mailstream_session=${owner.cookie}`, origin: api.url },
      body: JSON.stringify({ token: await mailedToken(outbox, owner.email, "/verify-email") })
    })
    if (!verified.ok) throw new Error(`verifying the owner's email answered ${verified.status}`)
    // --no-sandbox: the tests may run as root (CI containers), where Chromium's sandbox refuses to start.
    browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] })
  }, 180_000)

  afterEach(async () => {
    const found: Array<string> = []
    for (const [page, messages] of problems) {
      const patterns = allowed.get(page) ?? []
      found.push(...messages.filter((message) => !patterns.some((pattern) => pattern.test(message))))
    }
    problems.clear()
    allowed.clear()
    await Promise.all(contexts.map((context) => context.close()))
    contexts = []
    expect(found, "page errors and console errors").toEqual([])
  })

  afterAll(async () => {
    await browser?.close()
    await stack?.stop()
    await dns?.close()
    if (outbox) await rm(outbox, { recursive: true, force: true })
  }, 60_000)

  const signUpSession = async (email: string): Promise<Session> => {
    const { browser: client, user } = await signUp(api.url, email, PASSWORD)
    return { id: user.id, email, password: PASSWORD, cookie: client.cookies.get("mailstream_session")! }
  }

  const env: BrowserEnv = {
    get stack() {
      return stack
    },
    get api() {
      return api
    },
    get project() {
      return project
    },
    get dns() {
      return dns
    },
    get owner() {
      return owner
    },
    get outbox() {
      return outbox
    },
    signUp: (email) => signUpSession(email),
    async page({ viewport = DESKTOP, user } = {}) {
      const session = user === undefined ? owner : user
      const context = await browser.newContext({ viewport, baseURL: api.url })
      if (session !== null) await context.addCookies([{ name: "mailstream_session", value: session.cookie, url: api.url }])
      await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: api.url })
      contexts.push(context)
      const page = await context.newPage()
      const messages: Array<string> = []
      problems.set(page, messages)
      page.on("pageerror", (error) => messages.push(`page error: ${error.message}`))
      page.on("console", (message) => {
        if (message.type() === "error") messages.push(`console error: ${message.text()}`)
      })
      return page
    },
    allowConsoleErrors(page, pattern) {
      allowed.set(page, [...(allowed.get(page) ?? []), pattern])
    },
    async call(method, path, body, key = project.secretKey) {
      const response = await fetch(`${api.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body)
      })
      const json = await response.json().catch(() => undefined)
      if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${JSON.stringify(json)}`)
      return json
    }
  }
  return env
}

/** True when the page is wider than its viewport (a horizontal scroll bar). */
export const scrollsSideways = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth)

/** The page's h1 once it shows (pages render their heading before their data). */
export const heading = async (page: Page, name: string | RegExp) => {
  const locator = page.getByRole("heading", { level: 1, name })
  await locator.waitFor()
  return locator
}
