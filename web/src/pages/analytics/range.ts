/**
 * The analytics page's range: presets and custom dates, as local days of the chosen time zone turned
 * into the instants the endpoints take (`from` inclusive, `to` exclusive). The zone arithmetic is the
 * API's own (src/domain/analytics/range.ts).
 */
import { addDays, dayStart, localDay } from "../../../../src/domain/analytics/range.ts"

export const PRESETS = [
  ["today", "Today"],
  ["7d", "Last 7 days"],
  ["30d", "Last 30 days"],
  ["90d", "Last 90 days"],
  ["custom", "Custom dates"]
] as const
export type Preset = typeof PRESETS[number][0]

/** First and last local day of a preset (custom: the given days). */
export const daysOf = (preset: Preset, tz: string, now: Date, custom: { from: string; to: string }): { first: string; last: string } => {
  const today = localDay(tz, now.getTime())
  switch (preset) {
    case "today":
      return { first: today, last: today }
    case "7d":
      return { first: addDays(today, -6), last: today }
    case "30d":
      return { first: addDays(today, -29), last: today }
    case "90d":
      return { first: addDays(today, -89), last: today }
    case "custom":
      return custom.from <= custom.to ? { first: custom.from, last: custom.to } : { first: custom.to, last: custom.from }
  }
}

/** The instants of whole local days first..last. */
export const rangeOf = (days: { first: string; last: string }, tz: string) => ({
  from: new Date(dayStart(tz, days.first)).toISOString(),
  to: new Date(dayStart(tz, addDays(days.last, 1))).toISOString()
})

export const browserZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC"

/** Every zone the browser knows, the chosen one included. */
export const zones = (chosen: string): ReadonlyArray<string> => {
  const known = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : []
  return [...new Set(["UTC", chosen, ...known])]
}
