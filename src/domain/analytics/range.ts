/**
 * Time ranges of the analytics endpoints, pure: parsing and checking `from`, `to`, `tz` and `stream`,
 * cutting the range into local hours or days of the zone (DST days are 23 or 25 hours long), and
 * splitting any quarter-hour-aligned UTC range into the rollup grains that cover it exactly.
 */

export const STREAMS = ["ALL", "TRANSACTIONAL", "CAMPAIGN", "WORKFLOW"] as const
export type Stream = (typeof STREAMS)[number]

export const MINUTE = 60_000
export const HOUR = 60 * MINUTE
export const DAY = 24 * HOUR
export const MAX_RANGE_DAYS = 400
/** Ranges up to this long are bucketed by the hour, longer ones by the day. */
export const HOURLY_UP_TO = 2 * DAY

/** Rollup grains in minutes (migrations/0013_analytics.sql). */
export type Grain = 15 | 60 | 1440
export const GRAIN_MS: Record<Grain, number> = { 15: 15 * MINUTE, 60: HOUR, 1440: DAY }

export interface FieldProblem {
  readonly field: string
  readonly message: string
  readonly code: string
  readonly received?: unknown
}

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/

/** An ISO 8601 date or date-time, or undefined when it is not one. A bare day is that UTC day's start. */
export const parseInstant = (raw: string): number | undefined => {
  if (!ISO_DATE_TIME.test(raw)) return undefined
  const time = Date.parse(raw.length === 10 ? `${raw}T00:00:00Z` : raw)
  return Number.isFinite(time) && time >= Date.UTC(1970, 0, 1) && time < Date.UTC(10000, 0, 1) ? time : undefined
}

// ---------------------------------------------------------------------------------------- time zones

const formatters = new Map<string, Intl.DateTimeFormat>()

const formatterFor = (zone: string): Intl.DateTimeFormat | undefined => {
  let formatter = formatters.get(zone)
  if (formatter) return formatter
  try {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric"
    })
  } catch {
    return undefined
  }
  formatters.set(zone, formatter)
  return formatter
}

/** True for an IANA zone name this runtime knows (Asia/Kolkata, America/New_York, UTC). */
export const isTimeZone = (zone: string): boolean =>
  zone.length <= 64 && /^[A-Za-z0-9_+\-/]+$/.test(zone) && formatterFor(zone) !== undefined

/** The zone's wall clock at `instant`, as if it were UTC (so `wall - instant` is the offset). */
const wallClock = (zone: string, instant: number): number => {
  const parts = Object.fromEntries(formatterFor(zone)!.formatToParts(new Date(instant)).map((part) => [part.type, part.value]))
  return Date.UTC(
    Number(parts.year),
    Number(parts.month) - 1,
    Number(parts.day),
    Number(parts.hour),
    Number(parts.minute),
    Number(parts.second)
  ) +
    (instant % 1000 + 1000) % 1000
}

export const offsetAt = (zone: string, instant: number): number => wallClock(zone, instant) - instant

/**
 * The instant a local wall-clock time occurs (the earlier one when it occurs twice); a time skipped by
 * a DST change maps to the first instant after the gap, as clocks show it.
 */
export const instantOfWallClock = (zone: string, wall: number): number => {
  const candidates = [offsetAt(zone, wall - DAY), offsetAt(zone, wall + DAY), offsetAt(zone, wall)]
    .map((offset) => wall - offset)
    .filter((instant) => wallClock(zone, instant) === wall)
    .sort((a, b) => a - b)
  if (candidates.length > 0) return candidates[0]!
  // In a gap: the wall time never shows; the gap ends at the instant the later offset starts.
  return wall - offsetAt(zone, wall - DAY)
}

/** The local day (YYYY-MM-DD) of `instant` in `zone`. */
export const localDay = (zone: string, instant: number): string => new Date(wallClock(zone, instant)).toISOString().slice(0, 10)

/**
 * The instant a local day (YYYY-MM-DD) of `zone` starts: its midnight, or where a clock change skips
 * midnight (America/Santiago springs from 00:00 to 01:00), the first instant of the day.
 */
export const dayStart = (zone: string, day: string): number => instantOfWallClock(zone, Date.parse(`${day}T00:00:00Z`))

/** The day `days` after a local day (calendar arithmetic, no zone involved). */
export const addDays = (day: string, days: number): string =>
  new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY).toISOString().slice(0, 10)

export interface Bucket {
  /** UTC instant the bucket starts. */
  readonly start: number
  readonly end: number
  /** Local wall-clock label: `YYYY-MM-DD` (days) or `YYYY-MM-DDTHH:mm` (hours). */
  readonly local: string
}

const label = (wall: number, granularity: "hour" | "day") => new Date(wall).toISOString().slice(0, granularity === "day" ? 10 : 16)

/**
 * The local days (or hours) of `zone` that cover [from, to): from the start of the one holding `from`
 * to the end of the one holding the last instant before `to`.
 */
export const localBuckets = (zone: string, from: number, to: number, granularity: "hour" | "day"): Array<Bucket> => {
  const buckets: Array<Bucket> = []
  if (granularity === "hour") {
    // Local hours are whole UTC hours shifted by the offset's minutes; stepping by real hours shows a
    // repeated hour twice (autumn) and skips a missing one (spring), as the zone's clocks do.
    const wall = wallClock(zone, from)
    let start = from - (wall % HOUR + HOUR) % HOUR
    while (start < to) {
      const end = start + HOUR
      buckets.push({ start, end, local: label(wallClock(zone, start), "hour") })
      start = end
    }
    return buckets
  }
  let day = Math.floor(wallClock(zone, from) / DAY) * DAY
  let start = instantOfWallClock(zone, day)
  if (start > from) {
    day -= DAY
    start = instantOfWallClock(zone, day)
  }
  // Most days are 24 hours long: the next midnight is 24 hours on while the offset stays the same. Zone
  // lookups are slow (Intl), so the offset is probed a week ahead: the same there means the same all week
  // (no zone changes its offset twice within a week); only a week with a change is looked at day by day.
  let offset = day - start
  let sameUntil = start
  while (start < to) {
    const guess = start + DAY
    if (guess > sameUntil) sameUntil = offsetAt(zone, start + 7 * DAY) === offset ? start + 7 * DAY : start
    const end = guess <= sameUntil || offsetAt(zone, guess) === offset ? guess : instantOfWallClock(zone, day + DAY)
    buckets.push({ start, end, local: label(day, "day") })
    day += DAY
    offset = day - end
    start = end
  }
  return buckets
}

// ------------------------------------------------------------------------------------------ pieces

export interface Piece {
  readonly grain: Grain
  /** Inclusive start; null is unbounded. */
  readonly from: number | null
  /** Exclusive end; null is unbounded. */
  readonly to: number | null
}

const floorTo = (time: number, step: number) => Math.floor(time / step) * step
const ceilTo = (time: number, step: number) => Math.ceil(time / step) * step

/**
 * The rollup rows that add up to [from, to) exactly (both ends on quarter hours, or unbounded): whole
 * UTC days in the middle, whole hours and quarter hours at the ends. A year is read as ~365 day rows
 * per key, not 35,040 quarters.
 */
export const piecesOf = (from: number | null, to: number | null): Array<Piece> => {
  if (from !== null && from % GRAIN_MS[15] !== 0) throw new Error(`range start ${from} is not on a quarter hour`)
  if (to !== null && to % GRAIN_MS[15] !== 0) throw new Error(`range end ${to} is not on a quarter hour`)
  if (from !== null && to !== null && from >= to) return []
  const pieces: Array<Piece> = []
  const push = (grain: Grain, a: number | null, b: number | null) => {
    if (a === null || b === null || a < b) pieces.push({ grain, from: a, to: b })
  }
  const hourA = from === null ? null : ceilTo(from, HOUR)
  const hourB = to === null ? null : floorTo(to, HOUR)
  if (hourA !== null && hourB !== null && hourA >= hourB) {
    push(15, from, to)
    return pieces
  }
  if (from !== null) push(15, from, hourA)
  if (to !== null) push(15, hourB, to)
  const dayA = hourA === null ? null : ceilTo(hourA, DAY)
  const dayB = hourB === null ? null : floorTo(hourB, DAY)
  if (dayA !== null && dayB !== null && dayA >= dayB) {
    push(60, hourA, hourB)
    return pieces
  }
  if (hourA !== null) push(60, hourA, dayA)
  if (hourB !== null) push(60, dayB, hourB)
  push(1440, dayA, dayB)
  return pieces
}

/** The largest grain every boundary sits on, so one grain's rows fall wholly into buckets. */
export const grainFor = (boundaries: ReadonlyArray<number>): Grain | undefined =>
  boundaries.every((time) => time % DAY === 0) ?
    1440
    : boundaries.every((time) => time % HOUR === 0) ?
    60
    : boundaries.every((time) => time % GRAIN_MS[15] === 0) ?
    15
    : undefined

// ------------------------------------------------------------------------------------------ queries

export interface AnalyticsRange {
  readonly from: number
  readonly to: number
  readonly tz: string
  readonly stream: Stream
  readonly granularity: "hour" | "day"
  /** Whole local buckets covering the requested range. */
  readonly buckets: ReadonlyArray<Bucket>
  /** The same number of buckets just before. */
  readonly previous: ReadonlyArray<Bucket>
}

export interface RangeQuery {
  readonly from?: string | undefined
  readonly to?: string | undefined
  readonly tz?: string | undefined
  readonly stream?: string | undefined
}

/**
 * `from`/`to` (default: the last 30 days, at most 400), `tz` (default UTC) and `stream` (default ALL),
 * widened to whole local buckets: hours when the range is at most 2 days, else days. Problems name the field.
 */
export const analyticsRange = (query: RangeQuery, now: number): AnalyticsRange | Array<FieldProblem> => {
  const problems: Array<FieldProblem> = []
  const instant = (field: "from" | "to", raw: string | undefined) => {
    if (raw === undefined || raw === "") return undefined
    const time = parseInstant(raw)
    if (time === undefined)
      problems.push({ field, message: "expected an ISO 8601 date-time (1970 to 9999)", code: "invalid_date", received: raw })
    return time
  }
  const toRaw = instant("to", query.to)
  const fromRaw = instant("from", query.from)
  const tz = query.tz === undefined || query.tz === "" ? "UTC" : query.tz
  if (!isTimeZone(tz))
    problems.push({ field: "tz", message: "expected an IANA time zone name such as Europe/Paris", code: "invalid_time_zone", received: tz })
  const stream = query.stream === undefined || query.stream === "" ? "ALL" : query.stream.toUpperCase()
  if (!(STREAMS as ReadonlyArray<string>).includes(stream)) {
    problems.push({ field: "stream", message: `expected one of ${STREAMS.join(", ")}`, code: "invalid_enum_value", received: query.stream })
  }
  if (problems.length > 0) return problems
  const to = toRaw ?? now
  const from = fromRaw ?? to - 30 * DAY
  if (from >= to) return [{ field: "from", message: "from must be before to", code: "invalid_range", received: query.from }]
  if (to - from > MAX_RANGE_DAYS * DAY) {
    return [{ field: "to", message: `a range spans at most ${MAX_RANGE_DAYS} days`, code: "range_too_long", received: query.to }]
  }
  const granularity = to - from <= HOURLY_UP_TO ? "hour" : "day"
  const buckets = localBuckets(tz, from, to, granularity)
  const first = buckets[0]!
  const previous = granularity === "hour"
    ? localBuckets(tz, first.start - buckets.length * HOUR, first.start, "hour")
    : localBuckets(
      tz,
      instantOfWallClock(tz, Math.floor(wallClock(tz, first.start) / DAY) * DAY - buckets.length * DAY),
      first.start,
      "day"
    )
  const edges = [...buckets, ...previous].flatMap((bucket) => [bucket.start, bucket.end])
  if (grainFor(edges) === undefined) {
    return [{
      field: "tz",
      message: "this zone's offset in the range is not a whole number of quarter hours",
      code: "unsupported_time_zone",
      received: tz
    }]
  }
  return { from: first.start, to: buckets.at(-1)!.end, tz, stream: stream as Stream, granularity, buckets, previous }
}

/**
 * The range widened to whole UTC hours: per-key rollups (campaigns, domains, links, event names) keep
 * no quarter hours, so in a zone whose offset is not whole hours their totals count from the hour
 * before `from` to the hour after `to`, and say so.
 */
export const wholeHours = (range: AnalyticsRange): AnalyticsRange => {
  const floor = (time: number) => Math.floor(time / HOUR) * HOUR
  const ceil = (time: number) => Math.ceil(time / HOUR) * HOUR
  const widen = (buckets: ReadonlyArray<Bucket>) =>
    buckets.map((bucket, index) => ({
      ...bucket,
      start: index === 0 ? floor(bucket.start) : bucket.start,
      end: index === buckets.length - 1 ? ceil(bucket.end) : bucket.end
    }))
  const buckets = widen(range.buckets)
  const previous = widen(range.previous)
  return { ...range, from: buckets[0]!.start, to: buckets.at(-1)!.end, buckets, previous }
}
