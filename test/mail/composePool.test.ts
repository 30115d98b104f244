/**
 * The compose pool (src/mail/composePool.ts): mail composed and DKIM-signed in worker threads verifies
 * with mailauth like mail signed on the event loop, concurrent messages come back to their own callers,
 * the threads start on the first message, closing the pool stops them, and the text/plain alternative is
 * made from the HTML in the thread when asked.
 */
import { Effect, Exit, Scope } from "effect"
import type { KeyObject } from "node:crypto"
import type Mail from "nodemailer/lib/mailer"
import { describe, expect, it } from "vitest"
import { makeComposePool } from "../../src/mail/composePool.ts"
import { DKIM_SIGNED_HEADERS } from "../../src/mail/Transport.ts"
import { dkimResults, privateKey } from "../support/dkim.ts"

const message = (n: number, key: KeyObject | undefined): Mail.Options => ({
  from: { name: "Acme", address: "news@acme.test" },
  to: { name: `User ${n}`, address: `u${n}@example.org` },
  subject: `Hello ${n} — ünïcode`,
  text: `Hi ${n}`,
  html: `<p>Hi ${n}</p>`,
  messageId: `<m${n}@acme.test>`,
  headers: { "List-Unsubscribe": "<https://acme.test/u>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" },
  attachments: [{ filename: "a.txt", content: Buffer.from(`attachment ${n}`).toString("base64"), encoding: "base64" }],
  ...(key === undefined ? {} : {
    dkim: { domainName: "acme.test", keySelector: "s1", privateKey: key as unknown as string, headerFieldNames: DKIM_SIGNED_HEADERS }
  })
})

const withPool = <A>(threads: number, use: (pool: Effect.Success<ReturnType<typeof makeComposePool>>) => Promise<A>, idleMs?: number) =>
  Effect.runPromise(Effect.gen(function*() {
    const scope = yield* Scope.make()
    const pool = yield* makeComposePool(threads, idleMs).pipe(Scope.provide(scope))
    return yield* Effect.promise(() => use(pool)).pipe(Effect.ensuring(Scope.close(scope, Exit.void)))
  }))

describe("the compose pool", () => {
  it("signs in worker threads what mailauth verifies, each reply to its own message", async () => {
    const closed = await withPool(2, async (pool) => {
      expect(pool.threads()).toBe(0)
      const composed = await Promise.all(Array.from({ length: 24 }, (_, n) => pool.compose(message(n, privateKey))))
      expect(pool.threads()).toBe(2)
      for (const [n, { raw, envelope }] of composed.entries()) {
        expect(envelope).toEqual({ from: "news@acme.test", to: [`u${n}@example.org`] })
        const text = raw.toString("utf8")
        expect(text.startsWith("DKIM-Signature: ")).toBe(true)
        expect(text).toContain(`Message-ID: <m${n}@acme.test>`)
        expect(text).toContain("\r\n")
        expect(await dkimResults(raw)).toEqual(["pass"])
      }
      return pool
    })
    // The scope closed: the threads are gone and nothing more is composed.
    expect(closed.threads()).toBe(0)
    await expect(closed.compose(message(0, privateKey))).rejects.toThrow(/closed/)
  })

  it("stops its threads when idle and starts them again for the next message", async () => {
    await withPool(2, async (pool) => {
      await pool.compose(message(5, privateKey))
      expect(pool.threads()).toBe(1)
      await new Promise((resolve) => setTimeout(resolve, 600))
      expect(pool.threads()).toBe(0)
      const again = await pool.compose(message(6, privateKey))
      expect(pool.threads()).toBe(1)
      expect(await dkimResults(again.raw)).toEqual(["pass"])
    }, 200)
  })

  it("composes on the event loop the same way without threads, and unsigned without a key", async () => {
    await withPool(0, async (pool) => {
      const signed = await pool.compose(message(1, privateKey))
      expect(pool.threads()).toBe(0)
      expect(await dkimResults(signed.raw)).toEqual(["pass"])
      const unsigned = await pool.compose(message(2, undefined))
      expect(unsigned.raw.toString("utf8")).not.toContain("DKIM-Signature")
    })
  })

  it("fails a message that cannot be composed, and goes on with the next", async () => {
    await withPool(1, async (pool) => {
      await expect(pool.compose({ ...message(3, privateKey), attachments: [{ path: "/nonexistent/file" }] })).rejects.toThrow()
      expect(await dkimResults((await pool.compose(message(4, privateKey))).raw)).toEqual(["pass"])
    })
  })

  it("makes the text/plain alternative from the HTML when asked, in a thread and on the event loop alike", async () => {
    for (const threads of [1, 0]) {
      await withPool(threads, async (pool) => {
        // No text part, and no attachment (a .txt one is text/plain too).
        const { text: _, attachments: __, ...htmlOnly } = message(7, privateKey)
        const html = { ...htmlOnly, html: '<p>Please <a href="https://acme.test/r">reset</a>.</p>' }
        const made = (await pool.compose(html, { textFromHtml: true })).raw.toString("utf8")
        expect(made).toMatch(/text\/plain[\s\S]*Please reset \[https:\/\/acme\.test\/r\]\.[\s\S]*text\/html/)
        expect(await dkimResults(Buffer.from(made))).toEqual(["pass"])
        // Not asked: HTML only. Asked, with no text in the HTML, or with a text of the caller's: no other.
        expect((await pool.compose(html)).raw.toString("utf8")).not.toContain("text/plain")
        const image = { ...htmlOnly, html: '<img src="https://acme.test/p.png">' }
        expect((await pool.compose(image, { textFromHtml: true })).raw.toString("utf8")).not.toContain("text/plain")
        const own = (await pool.compose({ ...html, text: "Mine" }, { textFromHtml: true })).raw.toString("utf8")
        expect(own).toContain("Mine")
        expect(own).not.toContain("Please reset")
      })
    }
  })
})
