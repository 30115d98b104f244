/**
 * Projects and members through the dashboard: the role matrix (OWNER, ADMIN, MEMBER) on the account
 * endpoints and on existing project resources reached with the session cookie plus X-Project-Id,
 * non-members answered 404, the last owner kept, invitations (the only way in, even for an email with an
 * account), CSRF, key rotation across two api
 * processes, project reset, setup state, and automatic protection.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createStack, request, type Service, type Stack } from "../support/stack.ts"
import { Browser, invitationToken, joinProject, mailedToken, signUp } from "./support.ts"

let stack: Stack
let api: Service
let api2: Service
const outbox = mkdtempSync(join(tmpdir(), "ms-projects-outbox-"))

let owner: Browser
let admin: Browser
let member: Browser
let stranger: Browser
let project: { id: string; publicKey: string; secretKey: string }
let ids: Record<"owner" | "admin" | "member", string>

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0", OUTBOX_DIR: outbox })
  ;[api, api2] = await Promise.all([stack.start("api"), stack.start("api")])
  // One after the other: the first user of the installation also gets a first project of their own.
  const signed: Array<Awaited<ReturnType<typeof signUp>>> = []
  for (const email of ["owner@example.com", "admin@example.com", "member@example.com", "stranger@example.com"]) {
    signed.push(await signUp(api.url, email))
  }
  const [o, a, m, s] = signed
  owner = o!.browser
  admin = a!.browser
  member = m!.browser
  stranger = s!.browser
  const created = await owner.post("/users/@me/projects", { name: "Team project" })
  expect(created.status).toBe(201)
  project = created.json
  ids = { owner: o!.user.id, admin: a!.user.id, member: m!.user.id }
  expect((await joinProject(owner, project.id, admin, "admin@example.com", "ADMIN")).role).toBe("ADMIN")
  expect((await joinProject(owner, project.id, member, "member@example.com")).role).toBe("MEMBER")
})
afterAll(async () => {
  await stack?.stop()
})

const asProject = (browser: Browser, method: string, path: string, body?: unknown, projectId = project.id) =>
  browser.call(method, path, body, { "x-project-id": projectId })

describe("projects", () => {
  it("lists the user's projects with their role", async () => {
    const listed = await member.get("/users/@me/projects")
    expect(listed.json).toEqual([expect.objectContaining({ id: project.id, name: "Team project", role: "MEMBER", disabled: false })])
    expect((await stranger.get("/users/@me/projects")).json.map((p: { id: string }) => p.id)).not.toContain(project.id)
  })

  it("lets an ADMIN rename but only an OWNER delete; a non-member gets 404", async () => {
    const renamed = await admin.call("PATCH", `/users/@me/projects/${project.id}`, { name: "Renamed" })
    expect(renamed.status).toBe(200)
    expect(renamed.json).toMatchObject({ name: "Renamed", role: "ADMIN" })
    expect((await member.call("PATCH", `/users/@me/projects/${project.id}`, { name: "No" })).status).toBe(403)
    const byAdmin = await admin.call("DELETE", `/users/@me/projects/${project.id}`)
    expect(byAdmin.status).toBe(403)
    expect(byAdmin.json.error.code).toBe("FORBIDDEN")
    for (const path of ["", "/security", "/billing-limits"]) {
      const reply = await stranger.call(
        path === "" ? "PATCH" : "GET",
        `/users/@me/projects/${project.id}${path}`,
        path === "" ? { name: "x" } : undefined
      )
      expect(reply.status, path).toBe(404)
    }
    expect((await stranger.get(`/projects/${project.id}/setup-state`)).status).toBe(404)
    expect((await stranger.get(`/users/@me/projects/not-a-uuid/security`)).status).toBe(404)

    const doomed = (await owner.post("/users/@me/projects", { name: "Doomed" })).json
    expect((await owner.call("DELETE", `/users/@me/projects/${doomed.id}`)).json).toEqual({ success: true })
    expect((await request(api.url, "GET", "/contacts", { key: doomed.secretKey })).status).toBe(401)
    expect((await owner.get(`/projects/${doomed.id}/setup-state`)).status).toBe(404)
  })

  it("shows setup state and security to every member", async () => {
    const state = await member.get(`/projects/${project.id}/setup-state`)
    expect(state.json).toEqual({
      hasVerifiedDomain: false,
      hasTemplate: false,
      hasContact: false,
      hasTrackedEvent: false,
      hasSentEmail: false,
      complete: false
    })
    await request(api.url, "POST", "/contacts", { key: project.secretKey, body: { email: "someone@example.com" } })
    expect((await member.get(`/projects/${project.id}/setup-state`)).json.hasContact).toBe(true)
    for (const path of [`/projects/${project.id}/security`, `/users/@me/projects/${project.id}/security`]) {
      const security = await member.get(path)
      expect(security.status).toBe(200)
      expect(security.json).toMatchObject({ sends: 0, bounceRate: 0, complaintRate: 0, disabled: false, suspensions: [] })
      expect(security.json.thresholds).toEqual({ maxBounceRate: 5, maxComplaintRate: 0.1, minSends: 100 })
    }
  })
})

describe("project resources with the session cookie", () => {
  it("accepts cookie + X-Project-Id for members, by role", async () => {
    const created = await asProject(member, "POST", "/contacts", { email: "via-dashboard@example.com" })
    expect(created.status).toBe(201)
    expect((await asProject(member, "GET", "/contacts")).json.data.map((c: { email: string }) => c.email)).toContain(
      "via-dashboard@example.com"
    )
    // MEMBER manages content, not domains or secrets.
    const domains = await asProject(member, "GET", `/domains/project/${project.id}`)
    expect(domains.status).toBe(403)
    expect(domains.json.error).toMatchObject({ code: "FORBIDDEN", details: { role: "MEMBER", required: "manage" } })
    expect((await asProject(member, "GET", "/workflows/webhook-secret")).status).toBe(403)
    expect((await asProject(admin, "GET", `/domains/project/${project.id}`)).status).toBe(200)
  })

  it("answers 404 to a non-member, as for another project's id, and 401 without a session", async () => {
    const reply = await asProject(stranger, "GET", "/contacts")
    expect(reply.status).toBe(404)
    expect(reply.json.error.code).toBe("NOT_FOUND")
    expect((await asProject(stranger, "GET", "/contacts", undefined, "00000000-0000-7000-8000-000000000000")).status).toBe(404)
    const missingHeader = await member.get("/contacts")
    expect(missingHeader.status).toBe(400)
    expect(missingHeader.json.error.code).toBe("PROJECT_ID_REQUIRED")
    const anonymous = await new Browser(api.url).get("/contacts", { "x-project-id": project.id })
    expect(anonymous.status).toBe(401)
  })

  it("refuses a cross-site state change made with the cookie, but not a cross-site read", async () => {
    const evil = await member.call("POST", "/contacts", { email: "csrf@example.com" }, {
      "x-project-id": project.id,
      origin: "https://evil.example"
    })
    expect(evil.status).toBe(403)
    expect(evil.json.error.code).toBe("CSRF_REJECTED")
    const noOrigin = await member.call("POST", "/contacts", { email: "csrf@example.com" }, { "x-project-id": project.id, origin: "" })
    expect(noOrigin.status).toBe(403)
    const keys = await member.call("POST", `/users/@me/projects/${project.id}/regenerate-keys`, {}, { origin: "https://evil.example" })
    expect(keys.json.error.code).toBe("CSRF_REJECTED")
    expect((await stack.query("SELECT 1 FROM contacts WHERE email = 'csrf@example.com'")).length).toBe(0)
    expect((await asProject(member, "GET", "/contacts")).status).toBe(200)
    // An API key needs no Origin: it is not a browser credential.
    expect((await request(api.url, "POST", "/contacts", { key: project.secretKey, body: { email: "server@example.com" } })).status).toBe(
      201
    )
  })
})

describe("members", () => {
  it("lists members and pending invitations; invites an email without an account with a single-use link", async () => {
    const invited = await admin.post(`/projects/${project.id}/members`, { email: "Newcomer@Example.com", role: "MEMBER" })
    expect(invited.status).toBe(202)
    expect(invited.json).toMatchObject({ status: "invited", invitation: { email: "newcomer@example.com", role: "MEMBER" } })
    // The link mailed is the one answered (for the inviter to pass on if the mail does not arrive).
    expect(invitationToken(invited)).toBe(await mailedToken(outbox, "newcomer@example.com", "/accept-invitation"))
    const listed = await member.get(`/projects/${project.id}/members`)
    expect(listed.json.members.map((m: { email: string; role: string }) => `${m.email}:${m.role}`)).toEqual([
      "owner@example.com:OWNER",
      "admin@example.com:ADMIN",
      "member@example.com:MEMBER"
    ])
    expect(listed.json.invitations).toEqual([expect.objectContaining({ email: "newcomer@example.com" })])

    const token = await mailedToken(outbox, "newcomer@example.com", "/accept-invitation")
    const joined = new Browser(api.url)
    const signup = await joined.post("/auth/signup", { email: "newcomer@example.com", password: "newcomer's password", inviteToken: token })
    expect(signup.status).toBe(201)
    // The inviter could have passed the link on: it lets them in, but does not vouch for the address.
    expect(signup.json.user.emailVerified).toBe(false)
    expect((await joined.get("/users/@me/projects")).json).toEqual([expect.objectContaining({ id: project.id, role: "MEMBER" })])
    expect((await member.get(`/projects/${project.id}/members`)).json.invitations).toEqual([])
    // Used once: a second signup with it is refused.
    const again = await new Browser(api.url).post("/auth/signup", {
      email: "newcomer@example.com",
      password: "whatever it is",
      inviteToken: token
    })
    expect(again.status).toBe(400)
  })

  it("invites an email that has an account rather than adding it: only that account, signed in, joins with the link", async () => {
    // Anyone can register any address without owning it: an account's existence proves nothing.
    const registered = await signUp(api.url, "registered-first@example.com")
    const invited = await owner.post(`/projects/${project.id}/members`, { email: "registered-first@example.com", role: "ADMIN" })
    expect(invited.status).toBe(202)
    expect(invited.json).toMatchObject({ status: "invited", invitation: { email: "registered-first@example.com", role: "ADMIN" } })
    expect((await registered.browser.get("/users/@me/projects")).json.map((p: { id: string }) => p.id)).not.toContain(project.id)
    expect((await asProject(registered.browser, "GET", "/contacts")).status).toBe(404)
    expect((await registered.browser.get(`/projects/${project.id}/members`)).status).toBe(404)
    const guessed = await registered.browser.post("/auth/accept-invitation", { token: "x".repeat(43) })
    expect(guessed.status).toBe(400)
    expect(guessed.json.error.code).toBe("INVALID_TOKEN")
    // The link in another account's hands does nothing either.
    const token = await mailedToken(outbox, "registered-first@example.com", "/accept-invitation")
    const elsewhere = await stranger.post("/auth/accept-invitation", { token })
    expect(elsewhere.status).toBe(403)
    expect(elsewhere.json.error.code).toBe("INVITATION_FOR_ANOTHER_EMAIL")
    const accepted = await registered.browser.post("/auth/accept-invitation", { token })
    expect(accepted.json).toEqual({ projectId: project.id, role: "ADMIN" })
    expect((await asProject(registered.browser, "GET", "/contacts")).status).toBe(200)
    expect((await registered.browser.get("/users/@me")).json.emailVerified).toBe(false)
    expect((await owner.call("DELETE", `/projects/${project.id}/members/${registered.user.id}`)).status).toBe(200)
  })

  it("refuses role changes a role cannot make", async () => {
    expect((await member.post(`/projects/${project.id}/members`, { email: "stranger@example.com" })).status).toBe(403)
    const makeOwner = await admin.post(`/projects/${project.id}/members`, { email: "stranger@example.com", role: "OWNER" })
    expect(makeOwner.status).toBe(403)
    expect((await admin.call("PATCH", `/projects/${project.id}/members/${ids.owner}`, { role: "MEMBER" })).status).toBe(403)
    expect((await admin.call("PATCH", `/projects/${project.id}/members/${ids.member}`, { role: "OWNER" })).status).toBe(403)
    expect((await admin.call("DELETE", `/projects/${project.id}/members/${ids.owner}`)).status).toBe(403)
    expect((await member.call("PATCH", `/projects/${project.id}/members/${ids.member}`, { role: "ADMIN" })).status).toBe(403)
    expect((await owner.call("PATCH", `/projects/${project.id}/members/00000000-0000-7000-8000-000000000000`, { role: "ADMIN" })).status)
      .toBe(404)
    expect((await owner.post(`/projects/${project.id}/members`, { email: "member@example.com" })).status).toBe(409)
  })

  it("keeps the last owner: they can neither leave nor be demoted (409)", async () => {
    const leave = await owner.call("DELETE", `/projects/${project.id}/members/${ids.owner}`)
    expect(leave.status).toBe(409)
    expect(leave.json.error.code).toBe("LAST_OWNER")
    expect((await owner.call("PATCH", `/projects/${project.id}/members/${ids.owner}`, { role: "ADMIN" })).status).toBe(409)
    // With a second owner, the first may step down.
    expect((await owner.call("PATCH", `/projects/${project.id}/members/${ids.admin}`, { role: "OWNER" })).json.role).toBe("OWNER")
    expect((await owner.call("PATCH", `/projects/${project.id}/members/${ids.owner}`, { role: "ADMIN" })).json.role).toBe("ADMIN")
    expect((await admin.call("PATCH", `/projects/${project.id}/members/${ids.owner}`, { role: "OWNER" })).json.role).toBe("OWNER")
    expect((await owner.call("PATCH", `/projects/${project.id}/members/${ids.admin}`, { role: "ADMIN" })).json.role).toBe("ADMIN")
  })

  it("lets a member leave and an ADMIN remove a member", async () => {
    const extra = await signUp(api.url, "leaver@example.com")
    await joinProject(owner, project.id, extra.browser, "leaver@example.com")
    expect((await extra.browser.call("DELETE", `/projects/${project.id}/members/${extra.user.id}`)).json).toEqual({ success: true })
    expect((await asProject(extra.browser, "GET", "/contacts")).status).toBe(404)
    await joinProject(owner, project.id, extra.browser, "leaver@example.com")
    expect((await admin.call("DELETE", `/projects/${project.id}/members/${extra.user.id}`)).status).toBe(200)
  })
})

describe("keys", () => {
  it("rotates both keys; the old ones answer 401 on every api process within 2 seconds", async () => {
    const old = project.secretKey
    // Both processes have the old key cached.
    for (const base of [api.url, api2.url]) expect((await request(base, "GET", "/contacts", { key: old })).status).toBe(200)
    expect((await member.post(`/users/@me/projects/${project.id}/regenerate-keys`)).status).toBe(403)
    const rotated = await admin.post(`/users/@me/projects/${project.id}/regenerate-keys`)
    expect(rotated.status).toBe(200)
    expect(rotated.json.secretKey).toMatch(/^sk_/)
    expect(rotated.json.publicKey).toMatch(/^pk_/)
    expect(rotated.json.secretKey).not.toBe(old)
    const deadline = Date.now() + 2_000
    for (const base of [api.url, api2.url]) {
      let status = 0
      while (Date.now() < deadline) {
        status = (await request(base, "GET", "/contacts", { key: old })).status
        if (status === 401) break
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      expect(status, base).toBe(401)
      expect((await request(base, "GET", "/contacts", { key: rotated.json.secretKey })).status).toBe(200)
      expect((await request(base, "POST", "/v1/track", { key: project.publicKey, body: { email: "a@b.co", event: "x" } })).status).toBe(401)
    }
    project = { ...project, ...rotated.json }
  })
})

describe("one key at a time", () => {
  it("rotates the public or the secret key alone (ADMIN), the other one keeps working; the public key stays visible to members", async () => {
    const path = (kind: string) => `/users/@me/projects/${project.id}/keys/${kind}/rotate`
    // The public key made by regenerate-keys above is kept in clear.
    expect((await member.get(`/users/@me/projects/${project.id}/public-key`)).json).toEqual({ publicKey: project.publicKey })
    expect((await stranger.get(`/users/@me/projects/${project.id}/public-key`)).status).toBe(404)
    expect((await member.post(path("public"))).status).toBe(403)
    const neither = await admin.post(path("both"))
    expect(neither.status).toBe(422)
    expect(neither.json.error.errors[0].field).toBe("kind")

    const publicRotated = await admin.post(path("public"))
    expect(publicRotated.status).toBe(200)
    expect(publicRotated.json).toEqual({ id: project.id, kind: "public", key: expect.stringMatching(/^pk_/) })
    const track = (base: string, key: string) =>
      request(base, "POST", "/v1/track", { key, body: { email: "keys@example.com", event: "rotated" } })
    for (const base of [api.url, api2.url]) {
      await expectSoon(async () => expect((await track(base, project.publicKey)).status).toBe(401))
      expect((await track(base, publicRotated.json.key)).status).toBe(200)
      // The secret key did not change.
      expect((await request(base, "GET", "/contacts", { key: project.secretKey })).status).toBe(200)
    }
    expect((await member.get(`/users/@me/projects/${project.id}/public-key`)).json).toEqual({ publicKey: publicRotated.json.key })

    const secretRotated = await admin.post(path("secret"))
    expect(secretRotated.json).toEqual({ id: project.id, kind: "secret", key: expect.stringMatching(/^sk_/) })
    for (const base of [api.url, api2.url]) {
      await expectSoon(async () => expect((await request(base, "GET", "/contacts", { key: project.secretKey })).status).toBe(401))
      expect((await request(base, "GET", "/contacts", { key: secretRotated.json.key })).status).toBe(200)
      expect((await track(base, publicRotated.json.key)).status).toBe(200)
    }
    // Only the public key is kept in clear.
    const [row] = await stack.query<{ public_key: string }>("SELECT public_key FROM projects WHERE id = $1", [project.id])
    expect(row!.public_key).toBe(publicRotated.json.key)
    project = { ...project, publicKey: publicRotated.json.key, secretKey: secretRotated.json.key }
  })
})

/** Within the 2 s the other api processes have to drop a rotated key. */
const expectSoon = async (check: () => Promise<void>) => {
  const deadline = Date.now() + 2_000
  for (;;) {
    try {
      return await check()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}

describe("reset", () => {
  it("wipes the project's data but keeps keys, members and domains (ADMIN)", async () => {
    const key = project.secretKey
    await request(api.url, "POST", "/contacts", { key, body: { email: "before-reset@example.com" } })
    await request(api.url, "POST", "/templates", {
      key,
      body: { name: "T", subject: "S", body: "<p>hi</p>", from: "hello@example.com" }
    })
    await stack.query(
      `INSERT INTO domains (id, project_id, domain, dkim_selector, dkim_private_key, dkim_public_key, records)
       VALUES (gen_random_uuid(), $1, 'kept.example', 's', 'k', 'k', '[]')`,
      [project.id]
    )
    expect((await member.post(`/users/@me/projects/${project.id}/reset`)).status).toBe(403)
    const reset = await admin.post(`/users/@me/projects/${project.id}/reset`)
    expect(reset.status).toBe(200)
    expect(reset.json.success).toBe(true)
    for (const table of ["contacts", "templates", "events", "emails", "segments", "campaigns", "workflows"]) {
      expect((await stack.query(`SELECT 1 FROM ${table} WHERE project_id = $1`, [project.id])).length, table).toBe(0)
    }
    expect((await stack.query("SELECT 1 FROM domains WHERE project_id = $1", [project.id])).length).toBe(1)
    expect((await member.get(`/projects/${project.id}/members`)).json.members.length).toBeGreaterThanOrEqual(3)
    expect((await request(api.url, "GET", "/contacts", { key })).json.data).toEqual([])
    const [row] = await stack.query<{ data_reset_seq: string }>("SELECT data_reset_seq::text FROM projects WHERE id = $1", [project.id])
    expect(Number(row!.data_reset_seq)).toBeGreaterThan(0)
  })
})
