/**
 * The analytics page's ranges (web/src/pages/analytics/range.ts): local days of a zone turned into
 * instants, across clock changes and in zones far from UTC; the presets' first and last days.
 */
import { describe, expect, it } from "vitest"
import { addDays, daysOf, isKnownZone, localDay, localMidnight, rangeOf } from "../../web/src/pages/analytics/range.ts"

describe("analytics ranges", () => {
  it("finds a local day's first instant in zones ahead of and behind UTC, with odd offsets", () => {
    expect(localMidnight("2026-11-26", "UTC").toISOString()).toBe("2026-11-26T00:00:00.000Z")
    expect(localMidnight("2026-11-26", "Asia/Kolkata").toISOString()).toBe("2026-11-25T18:30:00.000Z")
    expect(localMidnight("2026-11-26", "Pacific/Kiritimati").toISOString()).toBe("2026-11-25T10:00:00.000Z")
    expect(localMidnight("2026-11-26", "Asia/Kathmandu").toISOString()).toBe("2026-11-25T18:15:00.000Z")
    expect(localMidnight("2026-11-26", "America/New_York").toISOString()).toBe("2026-11-26T05:00:00.000Z")
  })

  it("counts the days of a clock change as 23 and 25 hours", () => {
    const hours = (day: string, tz: string) => (localMidnight(addDays(day, 1), tz).getTime() - localMidnight(day, tz).getTime()) / 3_600_000
    expect(hours("2026-03-08", "America/New_York")).toBe(23)
    expect(hours("2026-11-01", "America/New_York")).toBe(25)
    expect(hours("2026-03-29", "Europe/Berlin")).toBe(23)
    expect(hours("2026-03-07", "America/New_York")).toBe(24)
  })

  it("starts a day whose midnight a clock change skips at its first instant (America/Santiago, 00:00 → 01:00)", () => {
    const start = localMidnight("2026-09-06", "America/Santiago")
    expect(localDay(start, "America/Santiago")).toBe("2026-09-06")
    expect(localDay(new Date(start.getTime() - 1), "America/Santiago")).toBe("2026-09-05")
  })

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

  it("tells a zone the runtime knows from one it does not", () => {
    expect(isKnownZone("Asia/Kolkata")).toBe(true)
    expect(isKnownZone("Mars/Olympus_Mons")).toBe(false)
  })
})
