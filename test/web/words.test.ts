/**
 * How the dashboard words numbers and data (web/src/components/words.ts, jobCounts.ts): nouns agree with their
 * numbers, custom data reads as values rather than JSON, the service's ids stay out of event lines, and a
 * contact job counts in its own terms.
 */
import { describe, expect, it } from "vitest"
import { countsOf } from "../../web/src/components/jobCounts.ts"
import { countOf, displayValue, nounFor, readableEventData } from "../../web/src/components/words.ts"

describe("words", () => {
  it("make a noun agree with its number", () => {
    expect(countOf(1, "contact")).toBe("1 contact")
    expect(countOf(0, "contact")).toBe("0 contacts")
    expect(countOf(1204, "event")).toBe("1,204 events")
    expect(nounFor(1, "recipient")).toBe("recipient")
    expect(nounFor(2, "recipient")).toBe("recipients")
  })

  it("show custom data as values: text unquoted, plain lists joined, the rest as compact JSON", () => {
    expect(displayValue("pro")).toBe("pro")
    expect(displayValue("007")).toBe("007")
    expect(displayValue("")).toBe("(empty text)")
    expect(displayValue(3)).toBe("3")
    expect(displayValue(true)).toBe("true")
    expect(displayValue(["early", "vip", 2])).toBe("early, vip, 2")
    expect(displayValue({ news: true, topics: ["a"] })).toBe('{"news":true,"topics":["a"]}')
    expect(displayValue([{ a: 1 }])).toBe('[{"a":1}]')
  })

  it("keep the service's ids out of its own events, and an application's event data whole", () => {
    const sent = { emailId: "01a2-…", campaignId: "01a3-…", subject: "What is new" }
    expect(readableEventData("email.sent", sent)).toEqual({ subject: "What is new" })
    expect(readableEventData("order-placed", { orderId: "A-1", total: 12 })).toEqual({ orderId: "A-1", total: 12 })
  })
})

describe("a contact job's counts", () => {
  const job = (type: "import" | "subscribe" | "unsubscribe" | "delete", progress: Partial<Record<string, number>>) => ({
    id: "j",
    type,
    status: "COMPLETED" as const,
    errors: [],
    createdAt: "",
    startedAt: null,
    finishedAt: null,
    progress: { processed: 0, total: 0, created: 0, updated: 0, skipped: 0, failed: 0, ...progress }
  })

  it("are an import's rows created, updated, skipped and failed", () => {
    expect(countsOf(job("import", { processed: 4, total: 4, created: 3, skipped: 1 }))).toBe(
      "4 of 4 rows · 3 created · 0 updated · 1 skipped · 0 failed"
    )
    expect(countsOf(job("import", { processed: 1, total: 1, created: 1 }))).toBe(
      "1 of 1 row · 1 created · 0 updated · 0 skipped · 0 failed"
    )
  })

  it("are a bulk action's contacts in the action's words, naming those not found or failed only when there are some", () => {
    expect(countsOf(job("unsubscribe", { processed: 2, total: 2, updated: 2 }))).toBe("2 of 2 contacts · 2 now unsubscribed")
    expect(countsOf(job("subscribe", { processed: 1, total: 1, updated: 1 }))).toBe("1 of 1 contact · 1 now subscribed")
    expect(countsOf(job("delete", { processed: 3, total: 3, updated: 1, skipped: 1, failed: 1 }))).toBe(
      "3 of 3 contacts · 1 deleted · 1 not found · 1 failed"
    )
  })
})
