/** Ranges, local buckets and rollup pieces (src/analytics/range.ts), without a database. */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  addDays,
  analyticsRange,
  DAY,
  dayStart,
  GRAIN_MS,
  HOUR,
  isTimeZone,
  localBuckets,
  localDay,
  piecesOf
} from "../../src/domain/analytics/range.ts"

const QUARTER = GRAIN_MS[15]
const iso = (time: number) => new Date(time).toISOString()

describe("piecesOf", () => {
  it("tiles any quarter-hour range exactly, each piece on its grain, largest grains in the middle", () => {
    const base = Date.UTC(2024, 0, 1)
    fc.assert(fc.property(fc.integer({ min: 0, max: 4 * 24 * 500 }), fc.integer({ min: 1, max: 4 * 24 * 500 }), (a, length) => {
      const from = base + a * QUARTER
      const to = from + length * QUARTER
      const pieces = piecesOf(from, to).sort((x, y) => x.from! - y.from!)
      let at = from
      for (const piece of pieces) {
        expect(piece.from).toBe(at)
        expect(piece.from! % GRAIN_MS[piece.grain]).toBe(0)
        expect(piece.to! % GRAIN_MS[piece.grain]).toBe(0)
        at = piece.to!
      }
      expect(at).toBe(to)
      // At most 3 quarters and 23 hours at each end: a year is ~365 day rows per key.
      const rows = pieces.reduce((sum, piece) => sum + (piece.to! - piece.from!) / GRAIN_MS[piece.grain], 0)
      expect(rows).toBeLessThanOrEqual(Math.ceil(length / 96) + 2 * (3 + 23) + 1)
    }))
  })

  it("reads open ends as whole days from (or to) the unbounded side", () => {
    const at = Date.UTC(2024, 5, 3, 10, 45)
    expect(piecesOf(null, at)).toEqual([
      { grain: 15, from: Date.UTC(2024, 5, 3, 10), to: at },
      { grain: 60, from: Date.UTC(2024, 5, 3), to: Date.UTC(2024, 5, 3, 10) },
      { grain: 1440, from: null, to: Date.UTC(2024, 5, 3) }
    ])
    expect(piecesOf(at, null).map((piece) => piece.grain)).toEqual([15, 60, 1440])
  })
})

describe("local buckets", () => {
  it("gives New York's spring-forward day 23 hours and its fall-back day 25", () => {
    const days = localBuckets("America/New_York", Date.UTC(2024, 2, 9, 12), Date.UTC(2024, 2, 11, 12), "day")
    expect(days.map((day) => day.local)).toEqual(["2024-03-09", "2024-03-10", "2024-03-11"])
    expect(days.map((day) => (day.end - day.start) / HOUR)).toEqual([24, 23, 24])
    expect(iso(days[1]!.start)).toBe("2024-03-10T05:00:00.000Z")
    const autumn = localBuckets("America/New_York", Date.UTC(2024, 10, 3, 12), Date.UTC(2024, 10, 3, 13), "day")
    expect((autumn[0]!.end - autumn[0]!.start) / HOUR).toBe(25)
  })

  it("shows the repeated autumn hour twice and skips the missing spring hour", () => {
    const autumn = localBuckets("America/New_York", Date.UTC(2024, 10, 3, 4), Date.UTC(2024, 10, 3, 8), "hour")
    expect(autumn.map((hour) => hour.local)).toEqual(["2024-11-03T00:00", "2024-11-03T01:00", "2024-11-03T01:00", "2024-11-03T02:00"])
    const spring = localBuckets("America/New_York", Date.UTC(2024, 2, 10, 5), Date.UTC(2024, 2, 10, 9), "hour")
    expect(spring.map((hour) => hour.local)).toEqual(["2024-03-10T00:00", "2024-03-10T01:00", "2024-03-10T03:00", "2024-03-10T04:00"])
  })

  it("starts Kolkata's days and hours at half past the UTC hour, Kathmandu's at a quarter past", () => {
    const kolkata = localBuckets("Asia/Kolkata", Date.UTC(2024, 0, 10, 12), Date.UTC(2024, 0, 11, 12), "day")
    expect(kolkata.map((day) => iso(day.start))).toEqual(["2024-01-09T18:30:00.000Z", "2024-01-10T18:30:00.000Z"])
    const hours = localBuckets("Asia/Kolkata", Date.UTC(2024, 0, 10, 12, 10), Date.UTC(2024, 0, 10, 13), "hour")
    expect(hours.map((hour) => iso(hour.start))).toEqual(["2024-01-10T11:30:00.000Z", "2024-01-10T12:30:00.000Z"])
    const kathmandu = localBuckets("Asia/Kathmandu", Date.UTC(2024, 0, 10, 12), Date.UTC(2024, 0, 10, 13), "day")
    expect(iso(kathmandu[0]!.start)).toBe("2024-01-09T18:15:00.000Z")
  })

  it("covers the range with whole, contiguous buckets in any zone", () => {
    const zones = ["UTC", "America/New_York", "Europe/London", "Asia/Kolkata", "Australia/Adelaide", "Asia/Kathmandu", "Pacific/Chatham"]
    fc.assert(
      fc.property(
        fc.constantFrom(...zones),
        fc.integer({ min: Date.UTC(2023, 0, 1), max: Date.UTC(2025, 0, 1) }),
        fc.integer({ min: 1, max: 60 * DAY }),
        fc.constantFrom("hour" as const, "day" as const),
        (zone, from, length, granularity) => {
          const to = from + (granularity === "hour" ? length % (3 * DAY) + 1 : length)
          const buckets = localBuckets(zone, from, to, granularity)
          expect(buckets[0]!.start).toBeLessThanOrEqual(from)
          expect(buckets.at(-1)!.end).toBeGreaterThanOrEqual(to)
          buckets.forEach((bucket, index) => {
            if (index > 0) expect(bucket.start).toBe(buckets[index - 1]!.end)
            expect(bucket.start % QUARTER).toBe(0)
          })
        }
      ),
      { numRuns: 200 }
    )
  })
})

describe("local days", () => {
  const start = (day: string, tz: string) => iso(dayStart(tz, day))

  it("finds a local day's first instant in zones ahead of and behind UTC, with odd offsets", () => {
    expect(start("2026-11-26", "UTC")).toBe("2026-11-26T00:00:00.000Z")
    expect(start("2026-11-26", "Asia/Kolkata")).toBe("2026-11-25T18:30:00.000Z")
    expect(start("2026-11-26", "Pacific/Kiritimati")).toBe("2026-11-25T10:00:00.000Z")
    expect(start("2026-11-26", "Asia/Kathmandu")).toBe("2026-11-25T18:15:00.000Z")
    expect(start("2026-11-26", "America/New_York")).toBe("2026-11-26T05:00:00.000Z")
  })

  it("counts the days of a clock change as 23 and 25 hours", () => {
    const hours = (day: string, tz: string) => (dayStart(tz, addDays(day, 1)) - dayStart(tz, day)) / HOUR
    expect(hours("2026-03-08", "America/New_York")).toBe(23)
    expect(hours("2026-11-01", "America/New_York")).toBe(25)
    expect(hours("2026-03-29", "Europe/Berlin")).toBe(23)
    expect(hours("2026-03-07", "America/New_York")).toBe(24)
  })

  it("starts a day whose midnight a clock change skips at its first instant (America/Santiago, 00:00 → 01:00)", () => {
    const first = dayStart("America/Santiago", "2026-09-06")
    expect(localDay("America/Santiago", first)).toBe("2026-09-06")
    expect(localDay("America/Santiago", first - 1)).toBe("2026-09-05")
  })

  it("tells a zone the runtime knows from one it does not", () => {
    expect(isTimeZone("Asia/Kolkata")).toBe(true)
    expect(isTimeZone("Mars/Olympus_Mons")).toBe(false)
  })
})

describe("analyticsRange", () => {
  const now = Date.UTC(2024, 6, 15, 13, 7)

  it("defaults to the last 30 UTC days of ALL mail, with a previous period of as many days", () => {
    const range = analyticsRange({}, now)
    if (Array.isArray(range)) throw new Error(JSON.stringify(range))
    expect(range.tz).toBe("UTC")
    expect(range.stream).toBe("ALL")
    expect(range.granularity).toBe("day")
    expect(range.buckets.length).toBe(31)
    expect(range.previous.length).toBe(31)
    expect(range.previous.at(-1)!.end).toBe(range.buckets[0]!.start)
    expect(iso(range.to)).toBe("2024-07-16T00:00:00.000Z")
  })

  it("buckets by the hour up to two days", () => {
    const range = analyticsRange({ from: "2024-07-14T10:20:00Z", to: "2024-07-15T10:00:00Z", tz: "Asia/Kolkata" }, now)
    if (Array.isArray(range)) throw new Error(JSON.stringify(range))
    expect(range.granularity).toBe("hour")
    expect(iso(range.from)).toBe("2024-07-14T09:30:00.000Z")
    expect(iso(range.to)).toBe("2024-07-15T10:30:00.000Z")
  })

  it("names every bad field", () => {
    const problems = analyticsRange({ from: "yesterday", tz: "Mars/Olympus", stream: "SMS" }, now)
    expect(Array.isArray(problems) && problems.map((problem) => problem.field).sort()).toEqual(["from", "stream", "tz"])
    const tooLong = analyticsRange({ from: "2023-01-01T00:00:00Z", to: "2024-07-01T00:00:00Z" }, now)
    expect(Array.isArray(tooLong) && tooLong[0]!.field).toBe("to")
    const backwards = analyticsRange({ from: "2024-07-02T00:00:00Z", to: "2024-07-01T00:00:00Z" }, now)
    expect(Array.isArray(backwards) && backwards[0]!.code).toBe("invalid_range")
  })
})
