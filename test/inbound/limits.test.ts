import { describe, expect, it } from "vitest"
import { makeMinuteCounter } from "../../src/inbound/SmtpReceiver.ts"
import { parseInbound } from "../../src/inbound/message.ts"

describe("the inbound receiver's per-minute limits", () => {
  it("admits `limit` per key in a minute, each key on its own, and again once the minute is over", () => {
    let now = 1_000_000
    const admit = makeMinuteCounter(3, () => now)
    expect([admit("a"), admit("a"), admit("a"), admit("a")]).toEqual([true, true, true, false])
    expect(admit("b")).toBe(true)
    now += 59_999
    expect(admit("a")).toBe(false)
    now += 1
    expect(admit("a")).toBe(true)
  })

  it("never refuses with limit 0", () => {
    const admit = makeMinuteCounter(0)
    expect(Array.from({ length: 1000 }, () => admit("a")).every(Boolean)).toBe(true)
  })
})

describe("a received message as recorded", () => {
  it("reads the sender, reply links (In-Reply-To first, then References newest first) and a text body as HTML", async () => {
    const message = await parseInbound(Buffer.from([
      'From: "Ada L." <Ada@Example.ORG>',
      "To: support@acme.test",
      "Subject: Re: <b>news</b>",
      "Message-ID: <m3@example.org>",
      "In-Reply-To: <m2@acme.test>",
      "References: <m0@acme.test> <m1@acme.test>",
      "",
      "a < b & c",
      ""
    ].join("\r\n")))
    expect(message).toMatchObject({
      from: "ada@example.org",
      fromName: "Ada L.",
      subject: "Re: <b>news</b>",
      messageId: "m3@example.org",
      answers: ["m2@acme.test", "m1@acme.test", "m0@acme.test"],
      attachments: []
    })
    expect(message.html).toContain("a &lt; b &amp; c")
  })

  it("has no sender when From holds no valid address", async () => {
    const message = await parseInbound(Buffer.from("From: nobody\r\nSubject: x\r\n\r\nbody\r\n"))
    expect(message.from).toBeUndefined()
  })
})
