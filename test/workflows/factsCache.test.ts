/**
 * What a batch of workflow steps loads of a contact's facts: windowed counts read occurrence times only
 * as far back as their window reaches, and what was loaded serves later steps unless they need more.
 */
import { describe, expect, it } from "vitest"
import { factsToLoad, type StepReads } from "../../src/workflows/factsCache.ts"

const NOW = Date.parse("2026-11-26T12:00:00Z")
const HOUR = 3_600_000
const reads = (events: ReadonlyArray<string>, windows: ReadonlyArray<[string, number]> = []): StepReads => ({
  events: new Set(events),
  windows: new Map(windows)
})

describe("workflow steps' fact reads", () => {
  it("read a windowed count's occurrences from the window's start, the others' aggregates only", () => {
    expect(factsToLoad(undefined, reads(["visit", "login"], [["visit", 2 * HOUR]]), NOW)).toEqual({
      events: new Set(["visit", "login"]),
      windowed: new Set(["visit"]),
      since: NOW - 2 * HOUR
    })
    expect(factsToLoad(undefined, reads(["login"]), NOW)).toEqual({ events: new Set(["login"]), windowed: new Set(), since: undefined })
  })

  it("serve a later step from what was loaded when it reaches far enough back", () => {
    const loaded = { events: new Set(["visit", "login"]), windowed: new Set(["visit"]), since: NOW - 2 * HOUR }
    expect(factsToLoad(loaded, reads(["visit"], [["visit", HOUR]]), NOW)).toBe("loaded")
    expect(factsToLoad(loaded, reads(["login"]), NOW)).toBe("loaded")
    // A step a little later in the same batch reaches less far back.
    expect(factsToLoad(loaded, reads(["visit"], [["visit", 2 * HOUR]]), NOW + 5)).toBe("loaded")
  })

  it("load again, covering both, when a step reads more events or further back", () => {
    const loaded = { events: new Set(["visit"]), windowed: new Set(["visit"]), since: NOW - HOUR }
    expect(factsToLoad(loaded, reads(["visit"], [["visit", 3 * HOUR]]), NOW)).toEqual({
      events: new Set(["visit"]),
      windowed: new Set(["visit"]),
      since: NOW - 3 * HOUR
    })
    expect(factsToLoad(loaded, reads(["click"], [["click", HOUR / 2]]), NOW)).toEqual({
      events: new Set(["visit", "click"]),
      windowed: new Set(["visit", "click"]),
      since: NOW - HOUR
    })
    expect(factsToLoad(loaded, reads(["login"]), NOW)).toEqual({
      events: new Set(["visit", "login"]),
      windowed: new Set(["visit"]),
      since: NOW - HOUR
    })
  })
})
