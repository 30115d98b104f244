/** Subscription patterns of event destinations, and the Standard Webhooks signer they share with WEBHOOK steps. */
import { Webhook } from "standardwebhooks"
import { describe, expect, it } from "vitest"
import { matchesAny, matchesPattern, patternProblem, urlProblem } from "../../src/domain/destinations.ts"
import { newWebhookSecret, signatureHeader, verifyWebhook } from "../../src/lib/standardWebhooks.ts"
import { deliveryId } from "../../src/store/Destinations.ts"

describe("destination patterns", () => {
  it("matches one token per inner *, one or more for a final *, everything for * alone", () => {
    const cases: Array<[string, string, boolean]> = [
      ["*", "anything.at.all", true],
      ["*", "signed_up", true],
      ["email.*", "email.open", true],
      ["email.*", "email.sent.extra", true],
      ["email.*", "email", false],
      ["email.*", "emails.open", false],
      ["segment.*.entry", "segment.vip.entry", true],
      ["segment.*.entry", "segment.vip.exit", false],
      ["segment.*.entry", "segment.a.b.entry", false],
      ["segment.vip.exit", "segment.vip.exit", true],
      ["segment.vip.exit", "segment.vip.exit.x", false],
      ["contact.*", "contact.subscribed", true],
      ["signed_up", "signed_up", true],
      ["signed_up", "signed_up.twice", false],
      ["*.open", "email.open", true],
      ["*.open", "email.x.open", false]
    ]
    for (const [pattern, name, expected] of cases) expect(matchesPattern(pattern, name), `${pattern} ~ ${name}`).toBe(expected)
    expect(matchesAny(["segment.*.exit", "email.*"], "email.click")).toBe(true)
    expect(matchesAny([], "email.click")).toBe(false)
  })

  it("refuses empty tokens, ** and odd characters; URLs must be http(s) without credentials", () => {
    for (const bad of ["", "a..b", "email.**", "email.", ".x", "a b", "a/b", "x".repeat(201)])
      expect(patternProblem(bad), bad).toBeDefined()
    for (const good of ["*", "email.*", "segment.*.entry", "order:paid", "a-b_c.$x@y"]) expect(patternProblem(good), good).toBeUndefined()
    expect(urlProblem("https://example.com/hook")).toBeUndefined()
    expect(urlProblem("http://127.0.0.2:8080/x")).toBeUndefined()
    expect(urlProblem("ftp://example.com")).toBeDefined()
    expect(urlProblem("not a url")).toBeDefined()
    expect(urlProblem("https://u:p@example.com")).toBeDefined()
  })
})

describe("Standard Webhooks signatures", () => {
  it("verify with the standardwebhooks package, one signature per secret during an overlap", () => {
    const [current, previous] = [newWebhookSecret(), newWebhookSecret()]
    const body = JSON.stringify({ type: "email.open" })
    const timestamp = Math.floor(Date.now() / 1000)
    const header = signatureHeader([current, previous], "msg_1", timestamp, body)
    expect(header.split(" ")).toHaveLength(2)
    const headers = { "webhook-id": "msg_1", "webhook-timestamp": String(timestamp), "webhook-signature": header }
    expect(new Webhook(current).verify(body, headers)).toEqual({ type: "email.open" })
    expect(new Webhook(previous).verify(body, headers)).toEqual({ type: "email.open" })
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow()
    expect(verifyWebhook(previous, "msg_1", timestamp, body, header)).toBe(true)
    expect(verifyWebhook(previous, "msg_2", timestamp, body, header)).toBe(false)
  })

  it("derives one webhook-id per (destination, event), a UUID", () => {
    const a = deliveryId("0190a000-0000-7000-8000-000000000001", "e1")
    expect(a).toBe(deliveryId("0190a000-0000-7000-8000-000000000001", "e1"))
    expect(a).not.toBe(deliveryId("0190a000-0000-7000-8000-000000000002", "e1"))
    expect(a).not.toBe(deliveryId("0190a000-0000-7000-8000-000000000001", "e2"))
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  })
})
