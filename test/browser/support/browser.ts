/// <reference lib="dom" />
/**
 * Browser tests: one Chromium per test file (Debian's, found or installed by scripts/ensure-browser.sh,
 * driven by playwright-core) against a real stack (`all`: api and worker, Postgres, NATS) serving the
 * built dashboard. After each test, no page of the test may have thrown or logged a console error,
 * except the failed responses a test says it provokes.
 *
 * Until sessions exist (#15) the tests authenticate as the app will not: the browser adds the project's
 * sk_ key to every request it sends (`extraHTTPHeaders`); the app itself never sends a key.
 */
import { execFile } from "node:child_process"
import { mkdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import { afterAll, afterEach, beforeAll, expect } from "vitest"
import { startDnsServer, type TestDnsServer } from "../../support/dns.ts"
import { createStack, type Service, type Stack, type TestProject } from "../../support/stack.ts"

const ROOT = new URL("../../../", import.meta.url).pathname
const run = promisify(execFile)

export const DESKTOP = { width: 1280, height: 800 } as const
export const PHONE = { width: 390, height: 844 } as const

export interface BrowserEnv {
  readonly stack: Stack
  readonly api: Service
  readonly project: TestProject
  readonly dns: TestDnsServer
  /** A page in a fresh context; `key: null` sends no API key (a visitor who is not signed in). */
  page(options?: { readonly viewport?: { width: number; height: number }; readonly key?: string | null }): Promise<Page>
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
export const useBrowser = (): BrowserEnv => {
  let browser: Browser
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
    stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0", DNS_SERVERS: dns.address })
    ;[api, project] = await Promise.all([stack.start("all"), stack.createProject("Browser test project")])
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
  }, 60_000)

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
    async page({ viewport = DESKTOP, key } = {}) {
      const apiKey = key === undefined ? project.secretKey : key
      const context = await browser.newContext({
        viewport,
        baseURL: api.url,
        extraHTTPHeaders: apiKey === null ? {} : { authorization: `Bearer ${apiKey}` }
      })
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
