/**
 * The analytics page's ranges (web/src/pages/analytics/range.ts): the presets' first and last local
 * days, turned into the instants the endpoints take. The zone arithmetic under them is the API's
 * (src/domain/analytics/range.ts), tested in test/analytics/range.test.ts.
 */
import { describe, expect, it } from "vitest"
import { daysOf, rangeOf } from "../../web/src/pages/analytics/range.ts"

describe("analytics ranges", () => {
  it("turns presets into whole local days ending today, and orders custom dates", () => {
    const now = new Date("2026-11-25T22:00:00Z")
    // 22:00 UTC is already the 26th in Kiritimati (UTC+14).
    expect(daysOf("today", "Pacific/Kiritimati", now, { from: "", to: "" })).toEqual({ first: "2026-11-26", last: "2026-11-26" })
    expect(daysOf("7d", "UTC", now, { from: "", to: "" })).toEqual({ first: "2026-11-19", last: "2026-11-25" })
    expect(daysOf("custom", "UTC", now, { from: "2026-11-20", to: "2026-11-02" })).toEqual({ first: "2026-11-02", last: "2026-11-20" })
    expect(rangeOf({ first: "2026-11-26", last: "2026-11-26" }, "Asia/Kolkata")).toEqual({
      from: "2026-11-25T18:30:00.000Z",
      to: "2026-11-26T18:30:00.000Z"
    })
  })
})
