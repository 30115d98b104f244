/**
 * Every route of the HttpApi contract × every kind of caller (a signed-in MEMBER, ADMIN and OWNER of the
 * project, a signed-in user who is not a member, and nobody), through real HTTP with session cookies,
 * checked against the permissions table of docs/api-notes.md: its rows are read from there, each route here names
 * the row that grants it. The routes come from the Api definition itself, so a route added without a rule
 * here fails the test. One stack, one session per caller.
 */
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { HttpApi } from "effect/http-api"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Api } from "../../src/http/api/Api.ts"
import { createStack, readResponse, type Service, type Stack } from "../support/stack.ts"
import { type Reply, signUp } from "./support.ts"

const ROLES = ["MEMBER", "ADMIN", "OWNER"] as const
type Role = typeof ROLES[number]

/** The permission rows (docs/api-notes.md) this test refers to, by the start of their first cell. */
const ROW = {
  view: "see the project",
  content: "contacts",
  settings: "rename, tracking",
  delivery: "domains, dead letters",
  members: "invite, re-role and remove",
  owners: "make, demote or remove"
} as const

/**
 * Who may call a route with a session cookie:
 * - `open`: nobody needs to be signed in, and the answer does not depend on who is;
 * - `key`: an API key only (the public key): a session cookie opens nothing;
 * - `signedIn`: any signed-in user (their own account, no project);
 * - a row of that table: a member of the project whose role that row grants; a non-member is answered 404.
 */
type Rule = "open" | "key" | "signedIn" | keyof typeof ROW

const rules = (rule: Rule, group: string, endpoints: ReadonlyArray<string>) =>
  Object.fromEntries(endpoints.map((endpoint) => [`${group}.${endpoint}`, rule]))

const RULES: Record<string, Rule> = {
  ...rules("open", "system", ["config", "healthz", "readyz", "metrics"]),
  ...rules("key", "track", ["track", "trackAlias", "trackBatch"]),
  ...rules("content", "contacts", [
    "upsert",
    "list",
    "lookup",
    "fields",
    "fieldValues",
    "fieldUsage",
    "deleteField",
    "get",
    "memberships",
    "update",
    "delete"
  ]),
  ...rules("content", "contactJobs", ["import", "importStatus", "export", "bulkSubscribe", "bulkUnsubscribe", "bulkDelete", "bulkStatus"]),
  ...rules("content", "events", ["list", "stats", "names", "forContact", "usage", "delete"]),
  ...rules("content", "segments", [
    "create",
    "preview",
    "list",
    "get",
    "update",
    "delete",
    "contacts",
    "addMembers",
    "removeMembers",
    "compute",
    "refresh"
  ]),
  ...rules("content", "verify", ["verify"]),
  ...rules("content", "send", ["send"]),
  ...rules("content", "emails", ["list", "get", "raw"]),
  ...rules("content", "templates", ["preview", "create", "list", "get", "update", "delete", "duplicate", "usage"]),
  ...rules("content", "campaigns", [
    "create",
    "list",
    "get",
    "replace",
    "delete",
    "duplicate",
    "test",
    "stats",
    "recipients",
    "send",
    "cancel"
  ]),
  ...rules("content", "workflows", [
    "list",
    "fields",
    "create",
    "get",
    "update",
    "delete",
    "addStep",
    "updateStep",
    "deleteStep",
    "addTransition",
    "deleteTransition",
    "startExecution",
    "listExecutions",
    "cancelAll",
    "getExecution",
    "cancelExecution"
  ]),
  ...rules("delivery", "workflows", ["webhookSecret"]),
  ...rules("delivery", "domains", ["create", "list", "get", "verify", "delete"]),
  ...rules("open", "links", ["open", "click", "unsubscribePage", "unsubscribe", "subscribePage", "subscribe", "manage"]),
  ...rules("delivery", "webhooks", ["generic"]),
  ...rules("delivery", "deadLetters", ["list", "get", "replay", "delete"]),
  ...rules("delivery", "destinations", [
    "create",
    "list",
    "get",
    "update",
    "delete",
    "rotateSecret",
    "test",
    "deliveries",
    "replayDelivery",
    "replayRange"
  ]),
  ...rules("open", "auth", [
    "signup",
    "login",
    "logout",
    "logoutByGet",
    "oauthConfig",
    "oauthStart",
    "oauthCallback",
    "requestPasswordReset",
    "resetPassword"
  ]),
  ...rules("signedIn", "auth", ["requestVerification", "verifyEmail", "changePassword", "acceptInvitation", "me"]),
  ...rules("signedIn", "accounts", ["listProjects", "createProject"]),
  ...rules("view", "accounts", [
    "userProjectSecurity",
    "projectSecurity",
    "setupState",
    "listMembers",
    "listInvitations",
    "getBillingLimits",
    "billingConsumption",
    "publicKey"
  ]),
  ...rules("settings", "accounts", [
    "updateProject",
    "regenerateKeys",
    "rotateKey",
    "resetProject",
    "putBillingLimits",
    "checkout",
    "billingPortal",
    "billingInvoices"
  ]),
  ...rules("members", "accounts", ["addMember", "withdrawInvitation", "resendInvitation", "updateMember", "removeMember"]),
  ...rules("owners", "accounts", ["deleteProject"]),
  ...rules("open", "billingWebhook", ["stripe"]),
  ...rules("content", "uploads", ["image"]),
  ...rules("open", "uploadedFiles", ["file"]),
  ...rules("content", "activity", ["feed", "types", "stats", "recentCount", "upcoming"]),
  ...rules("content", "live", ["stream"]),
  ...rules("content", "analytics", [
    "timeseries",
    "overview",
    "topCampaigns",
    "campaignStats",
    "topEvents",
    "deliverability",
    "links",
    "heatmap",
    "audience"
  ])
}

/**
 * Bodies for the routes that check the caller's role after reading the body (the account endpoints):
 * valid ones, so the answer is about the role. Every other route is checked before its body is read.
 */
const BODIES: Record<string, (caller: string) => unknown> = {
  "accounts.createProject": (caller) => ({ name: `Made by ${caller}` }),
  "accounts.updateProject": (caller) => ({ name: `Renamed by ${caller}` }),
  "accounts.addMember": (caller) => ({ email: `invited-by-${caller.toLowerCase()}@example.com`, role: "MEMBER" }),
  "accounts.updateMember": () => ({ role: "MEMBER" }),
  "accounts.putBillingLimits": () => ({ transactional: null, campaigns: null, workflows: null, inbound: null }),
  "auth.acceptInvitation": () => ({ token: "not-an-invitation" })
}

/** Walked last, in this order: they end the project or the sessions the walk uses. */
const LAST = ["accounts.deleteProject", "auth.logout"]

interface Route {
  readonly key: string
  readonly method: string
  readonly path: string
}

const contractRoutes = (): Array<Route> => {
  const routes: Array<Route> = []
  HttpApi.reflect(Api, {
    onGroup() {},
    onEndpoint({ group, endpoint }) {
      routes.push({ key: `${group.identifier}.${endpoint.identifier}`, method: endpoint.method, path: endpoint.path })
    }
  })
  return routes
}

/** docs/api-notes.md's permissions table: each row's first cell and whether MEMBER, ADMIN and OWNER have a ✓. */
const documentedPermissions = (): Array<{ readonly label: string; readonly grants: Record<Role, boolean> }> => {
  const doc = readFileSync(new URL("../../docs/api-notes.md", import.meta.url), "utf8").split("\n")
  const after = doc.slice(doc.findIndex((line) => line.startsWith("**Permissions**")))
  const first = after.findIndex((line) => line.startsWith("|"))
  const rows = after.slice(first, after.findIndex((line, index) => index > first && !line.startsWith("|")))
  const cells = (line: string) => line.split("|").slice(1, -1).map((cell) => cell.trim())
  expect(cells(rows[0]!)).toEqual(["", ...ROLES])
  return rows.slice(2).map((line) => {
    const [label, ...marks] = cells(line)
    for (const mark of marks) expect(mark, line).toMatch(/^(✓|–)/)
    return {
      label: label!,
      grants: Object.fromEntries(ROLES.map((role, index) => [role, marks[index]!.startsWith("✓")])) as Record<Role, boolean>
    }
  })
}

let stack: Stack
let api: Service
let projectId: string
/** Each caller's session cookie ("" for nobody). */
const cookies: Record<string, string> = {}
const CALLERS = ["nobody", "stranger", ...ROLES] as const
type Caller = typeof CALLERS[number]

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0", OUTBOX_DIR: mkdtempSync(join(tmpdir(), "ms-roles-outbox-")) })
  api = await stack.start("api")
  const sessions: Record<string, Awaited<ReturnType<typeof signUp>>> = {}
  // One after the other: the first user of an installation gets a first project of their own.
  for (const caller of ["OWNER", "ADMIN", "MEMBER", "stranger"])
    sessions[caller] = await signUp(api.url, `${caller.toLowerCase()}@example.com`)
  for (const [caller, session] of Object.entries(sessions)) cookies[caller] = session.browser.cookieHeader()
  cookies.nobody = ""
  const owner = sessions.OWNER!.browser
  projectId = (await owner.post("/users/@me/projects", { name: "Walked project" })).json.id
  // Memberships straight in the table: how a member joins is not what this test is about.
  for (const role of ["ADMIN", "MEMBER"] as const) {
    await stack.query("INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, $3)", [
      projectId,
      sessions[role]!.user.id,
      role
    ])
  }
})
afterAll(async () => {
  await stack?.stop()
})

const SOME_ID = "00000000-0000-7000-8000-000000000001"

/** The route's path with its parameters filled: the project's id where one is asked for, placeholders elsewhere. */
const pathOf = (route: Route) =>
  route.path.replace(/:(\w+)/g, (_, name: string) => {
    if (name === "projectId" || (name === "id" && /^\/(users\/@me\/)?projects\//.test(route.path))) return projectId
    if (name === "field") return "plan"
    if (name === "eventName") return "signed_up"
    if (name === "provider") return "github"
    if (name === "kind") return "public"
    if (name === "file") return `${"0".repeat(64)}.png`
    if (name === "token" || name === "signature") return "not-a-token"
    return SOME_ID
  })

const call = async (route: Route, caller: Caller): Promise<Reply> => {
  const headers: Record<string, string> = { "x-project-id": projectId }
  if (cookies[caller]) headers.cookie = cookies[caller]
  let body: string | undefined
  if (route.method !== "GET") headers.origin = api.url
  if (!["GET", "DELETE"].includes(route.method)) {
    headers["content-type"] = "application/json"
    body = JSON.stringify(BODIES[route.key]?.(caller) ?? {})
  }
  const response = await fetch(`${api.url}${pathOf(route)}`, { method: route.method, headers, body, redirect: "manual" })
  // A live-update stream never ends: its status and headers are the answer.
  if (response.headers.get("content-type")?.startsWith("text/event-stream")) {
    await response.body?.cancel()
    return { status: response.status, headers: response.headers, json: undefined, text: "" }
  }
  return readResponse(response)
}

const code = (reply: Reply) => reply.json?.error?.code as string | undefined
const isForbidden = (reply: Reply) => reply.status === 403 && code(reply) === "FORBIDDEN"
const isUnknownProject = (reply: Reply) => reply.status === 404 && reply.json?.error?.message === "Project not found"
const isUnauthenticated = (reply: Reply) => reply.status === 401
/** Let through: not unauthenticated, not refused (for the role, the project or anything else), no server error. */
const isAllowed = (reply: Reply) => !isUnauthenticated(reply) && reply.status !== 403 && !isUnknownProject(reply) && reply.status < 500

describe("permissions: every route × role", () => {
  it("has a rule for every route of the contract, and only for those", () => {
    const keys = contractRoutes().map((route) => route.key).sort()
    expect(Object.keys(RULES).sort()).toEqual(keys)
  })

  it("names only rows the documented permissions table has", () => {
    const labels = documentedPermissions().map((row) => row.label)
    for (const start of Object.values(ROW)) {
      expect(labels.filter((label) => label.startsWith(start)), start).toHaveLength(1)
    }
  })

  it("answers each caller as the documented table says, on every route", async () => {
    const table = documentedPermissions()
    const grants = (rule: keyof typeof ROW) => table.find((row) => row.label.startsWith(ROW[rule]))!.grants
    const routes = contractRoutes().sort((a, b) => LAST.indexOf(a.key) - LAST.indexOf(b.key))
    const wrong: Array<string> = []
    for (const route of routes) {
      const rule = RULES[route.key]!
      const replies = {} as Record<Caller, Reply>
      for (const caller of CALLERS) replies[caller] = await call(route, caller)
      const check = (caller: Caller, ok: boolean, what: string) => {
        const reply = replies[caller]
        if (!ok)
          wrong.push(
            `${route.method} ${route.path} (${route.key}) as ${caller}: expected ${what}, got ${reply.status} ${reply.text.slice(0, 160)}`
          )
      }
      if (rule === "open") {
        // Whoever asks, the same answer: the session plays no part.
        for (const caller of CALLERS)
          check(
            caller,
            replies[caller].status === replies.nobody.status && !isForbidden(replies[caller]),
            `${replies.nobody.status} as for nobody`
          )
        continue
      }
      check("nobody", isUnauthenticated(replies.nobody), "401")
      if (rule === "key") {
        for (const caller of CALLERS) check(caller, isUnauthenticated(replies[caller]), "401 (the cookie is no API key)")
      } else if (rule === "signedIn") {
        for (const caller of ["stranger", ...ROLES] as const) check(caller, isAllowed(replies[caller]), "allowed")
      } else {
        check("stranger", isUnknownProject(replies.stranger), "404 Project not found")
        for (const role of ROLES) {
          const granted = grants(rule)[role]
          check(role, granted ? isAllowed(replies[role]) : isForbidden(replies[role]), granted ? "allowed" : "403 FORBIDDEN")
        }
      }
    }
    expect(wrong).toEqual([])
  }, 60_000)
})
