/**
 * The api serves the web dashboard: its page at `/` and under each app root (never cached), its hashed
 * assets under /assets (cached for a year), and nothing else; every API route answers as before, and
 * no app root shadows an endpoint of the contract.
 */
import { execFile } from "node:child_process"
import { readFileSync, statSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { join } from "node:path"
import { promisify } from "node:util"
import { beforeAll, describe, expect, it } from "vitest"
import { DASHBOARD_ASSETS, DASHBOARD_ROOTS } from "../../src/http/api/dashboard.ts"
import { request, type Service, type TestProject, withStack } from "../support/stack.ts"

const ROOT = new URL("../../", import.meta.url).pathname
const run = promisify(execFile)
const buildWeb = () => run(process.execPath, ["scripts/build-web.ts"], { cwd: ROOT })

let api: Service
let project: TestProject
let firstBuild: { stderr: string }
beforeAll(async () => {
  firstBuild = await buildWeb()
}, 120_000)
withStack("api", (context) => ({ api, project } = context))

/** A GET with the path sent exactly as written (fetch would resolve `..` and `%2e%2e` before sending). */
const rawGet = (path: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const url = new URL(api.url)
    const req = httpRequest({ host: url.hostname, port: url.port, path, method: "GET" }, (response) => {
      let body = ""
      response.on("data", (chunk) => (body += chunk))
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }))
    })
    req.on("error", reject)
    req.end()
  })

const expectEnvelope404 = (json: any) => {
  expect(json.success).toBe(false)
  expect(json.error.code).toBe("NOT_FOUND")
  expect(json.error.requestId).toMatch(/^req_/)
}

describe("app roots", () => {
  it("are disjoint from every endpoint of the contract and the routes beside it", async () => {
    const document = await fetch(`${api.url}/openapi.json`).then((response) =>
      response.json() as Promise<{ paths: Record<string, unknown> }>
    )
    const apiPaths = [...Object.keys(document.paths), "/docs", "/openapi.json", "/webhooks/ses"]
    expect(apiPaths.length).toBeGreaterThan(50)
    for (const path of apiPaths) {
      // A path starting with a parameter would match under any root.
      expect(path.split("/")[1]).not.toMatch(/^[:{]/)
      for (const root of [...DASHBOARD_ROOTS, DASHBOARD_ASSETS]) {
        expect(path === root || path.startsWith(`${root}/`), `${path} is under ${root}`).toBe(false)
      }
    }
  })
})

describe("the page", () => {
  const paths = [
    "/",
    ...DASHBOARD_ROOTS,
    ...DASHBOARD_ROOTS.map((root) => `${root}/anything/below`),
    "/p/0190a5c4-7d2e-7b1a-9f3e-2c4d5e6f7a8b/contacts"
  ]

  it.each(paths)("is served at %s, never cached", async (path) => {
    const response = await fetch(`${api.url}${path}`)
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toMatch(/^text\/html/)
    expect(response.headers.get("cache-control")).toBe("no-cache")
    expect(response.headers.get("x-content-type-options")).toBe("nosniff")
    const html = await response.text()
    expect(html).toContain('<div id="root"></div>')
    expect(html).toBe(readFileSync(join(ROOT, "web/dist/index.html"), "utf8"))
  })

  it("is not served beside a root (/pages is not /p)", async () => {
    for (const path of ["/pages", "/signins", "/p-x"]) {
      const response = await request(api.url, "GET", path)
      expect(response.status).toBe(404)
      expectEnvelope404(response.json)
    }
  })
})

describe("assets", () => {
  const assetsOfPage = () =>
    [...readFileSync(join(ROOT, "web/dist/index.html"), "utf8").matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((match) => match[1]!)

  it("are served with a year-long immutable cache", async () => {
    const assets = assetsOfPage()
    expect(assets.some((asset) => asset.endsWith(".js"))).toBe(true)
    expect(assets.some((asset) => asset.endsWith(".css"))).toBe(true)
    for (const asset of assets) {
      const response = await fetch(`${api.url}${asset}`)
      expect(response.status).toBe(200)
      expect(response.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
      expect(response.headers.get("content-type")).toMatch(asset.endsWith(".js") ? /^text\/javascript/ : /^text\/css/)
      expect(Buffer.from(await response.arrayBuffer()).equals(readFileSync(join(ROOT, "web/dist", asset)))).toBe(true)
    }
  })

  it("are a production build within its size budget (React's development build would be a third larger)", () => {
    const scripts = assetsOfPage().filter((asset) => asset.endsWith(".js"))
    const bytes = scripts.reduce((sum, asset) => sum + statSync(join(ROOT, "web/dist", asset)).size, 0)
    expect(bytes).toBeGreaterThan(100_000)
    // 702,548 bytes on 2026-11-28 (the Analytics page and the email contract now share the API's domain
    // modules); a development build of React would put it past 900,000.
    expect(bytes).toBeLessThan(750_000)
  })

  it("answer the 404 envelope for a missing file", async () => {
    const response = await request(api.url, "GET", "/assets/missing-0000.js")
    expect(response.status).toBe(404)
    expectEnvelope404(response.json)
  })

  it("never reach outside web/dist/assets", async () => {
    for (
      const path of [
        "/assets/../../package.json",
        "/assets/..%2F..%2Fpackage.json",
        "/assets/%2e%2e/%2e%2e/package.json",
        "/assets/..%5C..%5Cpackage.json"
      ]
    ) {
      const response = await rawGet(path)
      expect(response.status, path).toBe(404)
      expect(response.body).not.toContain('"name": "mailstream"')
    }
    // Nor outside web/dist/assets: the page is never served with the assets' year-long cache.
    for (const path of ["/assets/../index.html", "/assets/%2e%2e/index.html", "/assets/..%2Findex.html", "/assets/%2e%2e/.build-hash"]) {
      const response = await rawGet(path)
      expect(response.status, path).toBe(404)
      expect(response.body).not.toContain('<div id="root">')
    }
  })
})

describe("API routes", () => {
  it("answer as before", async () => {
    expect((await request(api.url, "GET", "/healthz")).json).toEqual({ status: "ok" })
    const unauthorized = await request(api.url, "GET", "/contacts")
    expect(unauthorized.status).toBe(401)
    expect(unauthorized.json.error.code).toBe("INVALID_API_KEY")
    const contacts = await request(api.url, "GET", "/contacts", { key: project.secretKey })
    expect(contacts.status).toBe(200)
    expect(contacts.json.data).toEqual([])
    const unknown = await request(api.url, "GET", "/no-such-route")
    expect(unknown.status).toBe(404)
    expectEnvelope404(unknown.json)
    expect((await request(api.url, "GET", "/docs")).headers.get("content-type")).toMatch(/^text\/html/)
  })
})

describe("the build", () => {
  it("is skipped when nothing it depends on changed", async () => {
    expect(firstBuild.stderr).toMatch(/build skipped|built web\/dist/)
    const before = statSync(join(ROOT, "web/dist/index.html")).mtimeMs
    const second = await buildWeb()
    expect(second.stderr).toContain("up to date, build skipped")
    expect(statSync(join(ROOT, "web/dist/index.html")).mtimeMs).toBe(before)
  })
})
