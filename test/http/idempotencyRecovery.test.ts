/**
 * Idempotency-Key leases across api processes: a request stuck mid-way holds its key (renewed past
 * the lease), and the key of an api SIGKILLed mid-request is taken over by a retry through another api
 * once the lease runs out, and the request is performed once.
 *
 * The request is held mid-way deterministically: the test takes a SHARE lock on `contacts`, so the
 * /v1/send transaction waits on its first contact upsert, after the key's claim committed.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createMailStack, type MailStack, verifyDomain } from "../support/mail.ts"
import { eventually } from "../support/nats.ts"
import { withSql } from "../support/pg.ts"
import { request, type Service, type TestProject } from "../support/stack.ts"

const LEASE_SECONDS = 2

let mail: MailStack
let main: Service
let project: TestProject
beforeAll(async () => {
  mail = await createMailStack()
  main = await mail.stack.start("all")
  project = await mail.stack.createProject()
  await verifyDomain({ api: main, dns: mail.dns }, project.secretKey, "acme.test")
})
afterAll(async () => {
  await mail?.stop()
})

const send = (base: string, to: ReadonlyArray<string>, key: string) =>
  request(base, "POST", "/v1/send", {
    key: project.secretKey,
    body: { to, from: "hello@acme.test", subject: "Receipt", body: "<p>Thanks</p>" },
    headers: { "idempotency-key": key }
  })

/** Holds a SHARE lock on contacts (no contact can be written) until `release` is called. */
const lockContacts = async () => {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let locked!: () => void
  const isLocked = new Promise<void>((resolve) => (locked = resolve))
  const holding = withSql(
    mail.stack.databaseUrl,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`LOCK TABLE contacts IN SHARE MODE`
        locked()
        yield* Effect.promise(() => released)
      }))
    })
  )
  await isLocked
  return async () => {
    release()
    await holding
  }
}

/** Waits until the key is claimed and a statement is blocked on the contacts lock: the request is mid-way. */
const heldMidway = (key: string) =>
  eventually(async () => {
    const [claim] = await mail.stack.query<{ in_progress: boolean }>(
      "SELECT status_code IS NULL AS in_progress FROM idempotency_keys WHERE key = $1",
      [key]
    )
    expect(claim?.in_progress).toBe(true)
    const [waiting] = await mail.stack.query<{ count: number }>(
      "SELECT count(*)::int AS count FROM pg_locks WHERE NOT granted AND relation = 'contacts'::regclass"
    )
    expect(waiting!.count).toBeGreaterThan(0)
  })

const emailsTo = async (addresses: ReadonlyArray<string>) =>
  (await mail.stack.query<{ count: number }>("SELECT count(*)::int AS count FROM emails WHERE to_email = ANY($1)", [addresses]))[0]!.count

describe("Idempotency-Key leases", () => {
  it("a duplicate of a request still running gets 409 inProgress, past the lease (renewed), then the outcome", async () => {
    const slow = await mail.stack.start("api", { PORT: "0", IDEMPOTENCY_LEASE_SECONDS: String(LEASE_SECONDS) })
    const unlock = await lockContacts()
    const recipients = ["slow-1@example.org", "slow-2@example.org"]
    const first = send(slow.url, recipients, "slow-1")
    await heldMidway("slow-1")
    // Wait past two leases: the running request keeps renewing its claim.
    await new Promise((resolve) => setTimeout(resolve, LEASE_SECONDS * 2_000 + 500))
    const duplicate = await send(main.url, recipients, "slow-1")
    expect(duplicate.status).toBe(409)
    expect(duplicate.json.error).toMatchObject({
      code: "IDEMPOTENCY_KEY_REUSED",
      details: { key: "slow-1", inProgress: true, originalStatusCode: null }
    })
    expect(Number(duplicate.headers.get("retry-after"))).toBeGreaterThan(0)
    await unlock()
    const done = await first
    expect(done.status).toBe(200)
    const repeat = await send(main.url, recipients, "slow-1")
    expect(repeat.status).toBe(409)
    expect(repeat.json.error.details).toMatchObject({ inProgress: false, originalStatusCode: 200, originalResponse: done.json })
    expect(await emailsTo(recipients)).toBe(2)
    await slow.stop()
  })

  it("the key of an api SIGKILLed mid-request is taken over after its lease: the retry through another api sends once", async () => {
    const victim = await mail.stack.start("api", { PORT: "0", IDEMPOTENCY_LEASE_SECONDS: String(LEASE_SECONDS) })
    const unlock = await lockContacts()
    const recipients = ["crash-1@example.org", "crash-2@example.org", "crash-3@example.org"]
    const doomed = send(victim.url, recipients, "crash-1").catch((error: unknown) => error)
    await heldMidway("crash-1")
    // While the first attempt runs, a duplicate is refused.
    const duplicate = await send(main.url, recipients, "crash-1")
    expect(duplicate.status).toBe(409)
    expect(duplicate.json.error.details.inProgress).toBe(true)

    await victim.stop("SIGKILL")
    expect(await doomed).toBeInstanceOf(Error)
    await unlock()
    // Its claim stays in progress, unrenewed, until the lease runs out; then a retry performs it.
    const started = Date.now()
    const retried = await eventually(async () => {
      const response = await send(main.url, recipients, "crash-1")
      expect(response.status, JSON.stringify(response.json)).toBe(200)
      return response
    }, 20_000)
    console.info(`retry performed ${Date.now() - started} ms after the kill (lease ${LEASE_SECONDS} s)`)
    expect(retried.json.data.emails.map((item: { contact: { email: string } }) => item.contact.email)).toEqual(recipients)
    expect(await emailsTo(recipients)).toBe(3)
    await eventually(async () => {
      for (const address of recipients) {
        expect(mail.smtp.messages.filter((message) => message.envelopeTo.includes(address)), address).toHaveLength(1)
      }
    })
    const repeat = await send(main.url, recipients, "crash-1")
    expect(repeat.json.error.details).toMatchObject({ inProgress: false, originalResponse: retried.json })
  })
})
