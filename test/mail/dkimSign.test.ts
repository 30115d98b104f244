/**
 * In-memory DKIM signing (src/mail/dkimSign.ts) writes the bytes nodemailer's streaming signer writes for
 * the same message and key, including the body edge cases of relaxed canonicalization, a key that cannot
 * sign, and a message nodemailer composed; and what it signs verifies with mailauth.
 */
import { generateKeyPairSync, type KeyObject } from "node:crypto"
import nodemailer from "nodemailer"
import DKIM from "nodemailer/lib/dkim"
import { describe, expect, it } from "vitest"
import { composeRaw } from "../../src/mail/composeRaw.ts"
import { dkimSignRaw, signsInMemory } from "../../src/mail/dkimSign.ts"
import { DKIM_SIGNED_HEADERS } from "../../src/mail/Transport.ts"
import { dkimResults, privateKey } from "../support/dkim.ts"

const options = (key: KeyObject) => ({
  domainName: "acme.test",
  keySelector: "s1",
  privateKey: key as unknown as string,
  headerFieldNames: DKIM_SIGNED_HEADERS
})

/** nodemailer's own signer over the same bytes. */
const streamed = (raw: Buffer, key: KeyObject) =>
  new Promise<Buffer>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    const output = new DKIM(options(key)).sign(raw)
    output.on("data", (chunk: Buffer) => chunks.push(chunk))
    output.on("end", () => resolve(Buffer.concat(chunks)))
    output.on("error", reject)
  })

const head = [
  "From: Acme <news@acme.test>",
  "To: =?UTF-8?Q?J=C3=BCrgen?= <u1@example.org>",
  "Subject: Hello\r\n  folded   over lines",
  "Message-ID: <m1@acme.test>",
  "Date: Sat, 28 Nov 2026 21:00:00 +0000",
  "List-Unsubscribe: <https://acme.test/u>",
  "List-Unsubscribe-Post: List-Unsubscribe=One-Click",
  "MIME-Version: 1.0",
  "Content-Type: text/plain; charset=utf-8",
  "X-Not-Signed: yes"
].join("\r\n")

const bodies: Record<string, string> = {
  plain: "Hi there\r\n",
  "whitespace runs and trailing whitespace": "Hi  \t there \t\r\n\tindented\r\n",
  "trailing empty lines": "Hi\r\n\r\n\r\n\r\n",
  "no final line break": "Hi",
  empty: "",
  "bare LF and lone CR": "one\ntwo\rthree\r\n",
  "non-ASCII bytes": "Grüße, 日本\r\n"
}

describe("in-memory DKIM signing", () => {
  for (const [name, body] of Object.entries(bodies)) {
    it(`writes nodemailer's signed bytes: ${name}`, async () => {
      const raw = Buffer.from(`${head}\r\n\r\n${body}`)
      const signed = dkimSignRaw(raw, options(privateKey))!
      expect(signed.toString("latin1")).toBe((await streamed(raw, privateKey)).toString("latin1"))
      expect(signed.subarray(signed.length - raw.length).equals(raw)).toBe(true)
      expect(await dkimResults(signed)).toEqual(["pass"])
    })
  }

  it("leaves the message unsigned, as nodemailer does, with a key RSA cannot sign with", async () => {
    const { privateKey: ed25519 } = generateKeyPairSync("ed25519")
    const raw = Buffer.from(`${head}\r\n\r\nHi\r\n`)
    expect(dkimSignRaw(raw, options(ed25519))!.equals(raw)).toBe(true)
    expect((await streamed(raw, ed25519)).equals(raw)).toBe(true)
  })

  it("answers undefined for a message without a header block, and signs one key only", () => {
    expect(dkimSignRaw(Buffer.from("From: a@acme.test\r\nSubject: x"), options(privateKey))).toBeUndefined()
    expect(signsInMemory(options(privateKey))).toBe(true)
    expect(signsInMemory({ keys: [{ domainName: "acme.test", keySelector: "s1", privateKey: "k" }] })).toBe(false)
  })

  it("signs what nodemailer composes (text, HTML, an attachment, a non-ASCII subject) as its own signer would", async () => {
    const transport = nodemailer.createTransport({ streamTransport: true, buffer: true })
    const message = {
      from: { name: "Acme", address: "news@acme.test" },
      to: { name: "Jürgen", address: "u1@example.org" },
      subject: "Hello — ünïcode",
      text: "Hi  there \r\n\r\n",
      html: "<p>Hi there</p>",
      messageId: "<m2@acme.test>",
      headers: { "List-Unsubscribe": "<https://acme.test/u>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" },
      attachments: [{ filename: "a.txt", content: Buffer.from("attachment").toString("base64"), encoding: "base64" }],
      dkim: options(privateKey)
    }
    const { raw } = await composeRaw(transport, message)
    expect(raw.toString("utf8").startsWith("DKIM-Signature: ")).toBe(true)
    expect(await dkimResults(raw)).toEqual(["pass"])
    // The same signature nodemailer's signer makes over the message as composed (boundaries and date differ per compose).
    const unsigned = raw.subarray(raw.toString("latin1").search(/\r\n[^ \t]/) + 2)
    expect(raw.equals(await streamed(unsigned, privateKey))).toBe(true)
  })
})
