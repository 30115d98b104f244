/**
 * The Users and Members repositories at the layer level, against a real migrated Postgres of their own
 * (no service processes): one account per address (EmailTaken), identities and sessions (revoked or
 * expired ones find no user), and members of a project that always
 * keep an owner (LastOwner).
 */
import { assert, describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../../src/domain/ids.ts"
import { LastOwner, Members } from "../../src/store/Members.ts"
import { EmailTaken, Users } from "../../src/store/Users.ts"
import { insertProject, TestDatabase } from "../support/database.ts"

const Repositories = Layer.mergeAll(Users.layer, Members.layer).pipe(Layer.provideMerge(TestDatabase))

const newUser = (verified = false) =>
  Effect.gen(function*() {
    const users = yield* Users
    return yield* users.create({ email: `${uuidv7()}@example.org`, passwordHash: "hash", emailVerified: verified })
  })

layer(Repositories, { timeout: 60_000, excludeTestServices: true })("accounts", (it) => {
  describe("Users", () => {
    it.effect("creates one account per address (EmailTaken after), found by email, id and identity", () =>
      Effect.gen(function*() {
        const users = yield* Users
        const email = `${uuidv7()}@example.org`
        const before = yield* users.count
        const user = yield* users.create({ email, passwordHash: null, emailVerified: false })
        expect(user).toMatchObject({ email, emailVerified: false, hasPassword: false, passwordHash: null })
        assert.instanceOf(user.createdAt, Date)
        expect(yield* users.count).toBe(before + 1)
        assert.instanceOf(yield* Effect.flip(users.create({ email, passwordHash: "x", emailVerified: true })), EmailTaken)

        expect(yield* users.byEmail(email)).toEqual(user)
        expect(yield* users.byId(user.id)).toEqual(user)
        expect(yield* users.byId(uuidv7())).toBeUndefined()

        yield* users.setPassword(user.id, "new-hash")
        yield* users.markVerified(user.id)
        expect(yield* users.byId(user.id)).toMatchObject({ hasPassword: true, passwordHash: "new-hash", emailVerified: true })

        expect(yield* users.byIdentity("github", "42")).toBeUndefined()
        yield* users.linkIdentity(user.id, "github", "42")
        yield* users.linkIdentity((yield* newUser()).id, "github", "42") // taken: nothing changes
        expect((yield* users.byIdentity("github", "42"))?.id).toBe(user.id)
      }))

    it.effect("a session finds its user until it is revoked or expires", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const users = yield* Users
        const user = yield* newUser(true)
        const session = yield* users.createSession(user.id, 24)
        expect(session.expiresAt.getTime()).toBeGreaterThan(Date.now() + 23 * 3_600_000)
        expect((yield* users.sessionUser(session.id))?.id).toBe(user.id)
        yield* users.revokeSession(session.id)
        expect(yield* users.sessionUser(session.id)).toBeUndefined()

        const [a, b] = [yield* users.createSession(user.id, 1), yield* users.createSession(user.id, 1)]
        yield* sql`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE id = ${a.id}`
        expect(yield* users.sessionUser(a.id)).toBeUndefined()
        expect((yield* users.sessionUser(b.id))?.id).toBe(user.id)
        yield* users.revokeAllSessions(user.id)
        expect(yield* users.sessionUser(b.id)).toBeUndefined()
      }))
  })

  describe("Members", () => {
    it.effect("adds members once, lists them and their projects; a project always keeps an owner (LastOwner)", () =>
      Effect.gen(function*() {
        const members = yield* Members
        const project = yield* insertProject
        const [owner, editor] = [yield* newUser(), yield* newUser()]
        yield* members.add(project, owner.id, "OWNER")
        yield* members.add(project, editor.id, "MEMBER")
        yield* members.add(project, editor.id, "OWNER") // already a member: nothing changes
        expect(yield* members.roleOf(project, editor.id)).toBe("MEMBER")
        expect(yield* members.roleOf(project, uuidv7())).toBeUndefined()
        expect((yield* members.list(project)).map((m) => [m.email, m.role])).toEqual([[owner.email, "OWNER"], [editor.email, "MEMBER"]])
        expect((yield* members.projectsOf(editor.id)).map((p) => [p.projectId, p.role, p.disabled])).toEqual([[project, "MEMBER", false]])

        assert.instanceOf(yield* Effect.flip(members.changeRole(project, owner.id, "MEMBER")), LastOwner)
        assert.instanceOf(yield* Effect.flip(members.remove(project, owner.id)), LastOwner)
        expect(yield* members.changeRole(project, editor.id, "OWNER")).toBe(true)
        expect(yield* members.changeRole(project, owner.id, "MEMBER")).toBe(true)
        expect(yield* members.remove(project, owner.id)).toBe(true)
        expect(yield* members.remove(project, owner.id)).toBe(false)
        expect(yield* members.changeRole(project, uuidv7(), "OWNER")).toBe(false)
      }))

    it.effect("the first user adopts every project nobody belongs to", () =>
      Effect.gen(function*() {
        const members = yield* Members
        const orphan = yield* insertProject
        const user = yield* newUser()
        expect(yield* members.adoptOrphans(user.id)).toBeGreaterThanOrEqual(1)
        expect(yield* members.roleOf(orphan, user.id)).toBe("OWNER")
        expect(yield* members.adoptOrphans((yield* newUser()).id)).toBe(0)
      }))
  })
})
