/**
 * The analytics page's range: presets and custom dates, as local days of the chosen time zone turned
 * into the instants the endpoints take (`from` inclusive, `to` exclusive).
 */
const DAY = 86_400_000

/** The zone's offset from UTC at `instant`, in ms (positive east of Greenwich). */
const offsetAt = (instant: number, tz: string): number => {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone: tz,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit"
    })
      .formatToParts(new Date(instant))
      .map((part) => [part.type, part.value])
  )
  const local = Date.UTC(
    Number(parts.year),
    Number(parts.month) - 1,
    Number(parts.day),
    Number(parts.hour),
    Number(parts.minute),
    Number(parts.second)
  )
  return local - Math.floor(instant / 1000) * 1000
}

/**
 * The instant a local day (YYYY-MM-DD) starts in `tz`: its midnight, or where a clock change skips
 * midnight (America/Santiago springs from 00:00 to 01:00), the first instant of the day.
 */
export const localMidnight = (day: string, tz: string): Date => {
  const [year, month, date] = day.split("-").map(Number) as [number, number, number]
  const wall = Date.UTC(year, month - 1, date)
  const guess = wall - offsetAt(wall, tz)
  const candidates = [wall - offsetAt(guess, tz), guess].filter((instant) => localDay(new Date(instant), tz) === day)
  return new Date(candidates.length > 0 ? Math.min(...candidates) : wall - offsetAt(guess, tz))
}

/** The local day (YYYY-MM-DD) of an instant in `tz`. */
export const localDay = (instant: Date, tz: string): string =>
  new Intl.DateTimeFormat("en-CA", { timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit" }).format(instant)

/** The day `days` after a local day (calendar arithmetic, no zone involved). */
export const addDays = (day: string, days: number): string =>
  new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY).toISOString().slice(0, 10)

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
  const today = localDay(now, tz)
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
  from: localMidnight(days.first, tz).toISOString(),
  to: localMidnight(addDays(days.last, 1), tz).toISOString()
})

/** Whether the browser knows the zone (the API judges it too, and says what is wrong). */
export const isKnownZone = (tz: string): boolean => {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz })
    return true
  } catch {
    return false
  }
}

export const browserZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC"

/** Every zone the browser knows, the chosen one included. */
export const zones = (chosen: string): ReadonlyArray<string> => {
  const known = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : []
  return [...new Set(["UTC", chosen, ...known])]
}
