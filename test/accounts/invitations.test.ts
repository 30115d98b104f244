/**
 * A project's pending invitations through the dashboard API: listed, withdrawn (the link stops working
 * at once) and resent (a new link, the old one dead, seven more days), role-checked as member
 * management is: MEMBERs see them, ADMINs manage them, OWNERs alone those that make an OWNER.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createStack, type Service, type Stack } from "../support/stack.ts"
import { Browser, invitationToken, joinProject, mailedToken, signUp } from "./support.ts"

let stack: Stack
let api: Service
const outbox = mkdtempSync(join(tmpdir(), "ms-invitations-outbox-"))
let owner: Browser
let admin: Browser
let member: Browser
let projectId: string

beforeAll(async () => {
  stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0", OUTBOX_DIR: outbox })
  api = await stack.start("api")
  owner = (await signUp(api.url, "owner@example.com")).browser
  admin = (await signUp(api.url, "admin@example.com")).browser
  member = (await signUp(api.url, "member@example.com")).browser
  projectId = (await owner.post("/users/@me/projects", { name: "Invitations" })).json.id
  await joinProject(owner, projectId, admin, "admin@example.com", "ADMIN")
  await joinProject(owner, projectId, member, "member@example.com")
})
afterAll(async () => {
  await stack?.stop()
})

const invite = (by: Browser, email: string, role = "MEMBER") => by.post(`/projects/${projectId}/members`, { email, role })
const invitations = async (by: Browser = member) => {
  const reply = await by.get(`/projects/${projectId}/invitations`)
  expect(reply.status).toBe(200)
  return reply.json.data as Array<{ id: string; email: string; role: string; createdAt: string; expiresAt: string }>
}
const withdraw = (by: Browser, id: string, project = projectId) => by.call("DELETE", `/projects/${project}/invitations/${id}`)
const resend = (by: Browser, id: string) => by.post(`/projects/${projectId}/invitations/${id}/resend`)
const signUpWith = (email: string, inviteToken: string) =>
  new Browser(api.url).post("/auth/signup", { email, password: "a good password", inviteToken })

describe("pending invitations", () => {
  it("lists them to every member and withdraws one: its link stops working at once", async () => {
    const sent = await invite(admin, "Wrong.Address@example.com")
    expect(sent.status).toBe(202)
    const { id } = sent.json.invitation
    expect(await invitations()).toEqual([
      { id, email: "wrong.address@example.com", role: "MEMBER", createdAt: expect.any(String), expiresAt: expect.any(String) }
    ])
    const refused = await withdraw(member, id)
    expect(refused.status).toBe(403)
    expect(refused.json.error.code).toBe("FORBIDDEN")
    expect((await withdraw(admin, id)).json).toEqual({ success: true })
    expect(await invitations()).toEqual([])
    const late = await signUpWith("wrong.address@example.com", invitationToken(sent))
    expect(late.status).toBe(400)
    expect(late.json.error.code).toBe("INVALID_TOKEN")
    // Gone already, not an id at all, or not pending in this project: 404.
    expect((await withdraw(admin, id)).status).toBe(404)
    expect((await withdraw(admin, "not-a-uuid")).status).toBe(404)
    const stranger = (await signUp(api.url, "stranger@example.com")).browser
    expect((await stranger.get(`/projects/${projectId}/invitations`)).status).toBe(404)
    const elsewhere = (await stranger.post("/users/@me/projects", { name: "Another" })).json.id
    const theirs = (await stranger.post(`/projects/${elsewhere}/members`, { email: "theirs@example.com" })).json.invitation.id
    expect((await withdraw(owner, theirs)).status).toBe(404)
    expect((await withdraw(stranger, theirs, elsewhere)).status).toBe(200)
  })

  it("resends one with a new link valid seven more days; the old link is dead", async () => {
    const sent = await invite(owner, "slow-reader@example.com")
    const { id } = sent.json.invitation
    const first = invitationToken(sent)
    expect(await mailedToken(outbox, "slow-reader@example.com", "/accept-invitation")).toBe(first)
    await stack.query("UPDATE account_tokens SET expires_at = now() + interval '1 hour' WHERE id = $1", [id])
    const again = await resend(admin, id)
    expect(again.status).toBe(200)
    expect(again.json.invitation).toMatchObject({ id, email: "slow-reader@example.com", role: "MEMBER" })
    expect(Date.parse(again.json.invitation.expiresAt) - Date.now()).toBeGreaterThan(6.9 * 24 * 3_600_000)
    const second = invitationToken(again)
    expect(second).not.toBe(first)
    expect(await mailedToken(outbox, "slow-reader@example.com", "/accept-invitation", 1)).toBe(second)
    expect((await signUpWith("slow-reader@example.com", first)).status).toBe(400)
    const joined = await signUpWith("slow-reader@example.com", second)
    expect(joined.status).toBe(201)
    expect(await invitations()).toEqual([])
    expect((await resend(owner, id)).status).toBe(404)
    expect((await resend(member, id)).status).toBe(403)
  })

  it("replaces an email's pending invitation when it is invited again", async () => {
    const first = await invite(owner, "twice@example.com")
    const second = await invite(owner, "twice@example.com", "ADMIN")
    expect((await invitations()).map((entry) => `${entry.email}:${entry.role}`)).toEqual(["twice@example.com:ADMIN"])
    expect((await signUpWith("twice@example.com", invitationToken(first))).status).toBe(400)
    expect((await signUpWith("twice@example.com", invitationToken(second))).status).toBe(201)
  })

  it("leaves an invitation as OWNER to OWNERs", async () => {
    const sent = await invite(owner, "co-owner@example.com", "OWNER")
    const { id } = sent.json.invitation
    for (const reply of [await withdraw(admin, id), await resend(admin, id), await invite(admin, "co-owner@example.com", "MEMBER")]) {
      expect(reply.status).toBe(403)
      expect(reply.json.error.code).toBe("FORBIDDEN")
    }
    expect((await invitations()).map((entry) => entry.role)).toEqual(["OWNER"])
    expect((await resend(owner, id)).status).toBe(200)
    expect((await withdraw(owner, id)).status).toBe(200)
  })
})
