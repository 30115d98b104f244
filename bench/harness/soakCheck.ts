/**
 * The soak's regression check (bench/soak.ts), on series sampled over the run: a run is split in thirds,
 * the first is the warm-up, and the last third is held against the middle one.
 *
 * - `level`: a quantity that must stay flat (memory, lag, latency): the last third's mean (or median)
 *   may exceed the middle third's by `relative` of it plus `absolute`.
 * - `growth`: a quantity that may grow with the data it keeps (a table): its growth over the last third
 *   may exceed its growth over the middle third by `relative` plus `absolute`, so growth that
 *   accelerates (bloat, a queue that is never emptied faster than it fills) fails, and linear growth
 *   with the rows written passes.
 * - `bounded`: storage with a retention: at most its limit; without one, growth beyond `absolute` over
 *   the last two thirds fails (nothing bounds it).
 */

export interface Point {
  /** Seconds since the run started. */
  readonly t: number
  readonly value: number
}

export interface Tolerance {
  readonly relative: number
  readonly absolute: number
}

export interface Check {
  readonly name: string
  readonly kind: "level" | "growth" | "bounded"
  readonly ok: boolean
  /** The middle third's figure (mean, median or growth) and the last third's. */
  readonly middle: number
  readonly last: number
  /** The most the last third's figure may be. */
  readonly limit: number
  readonly unit: string
}

/** The points of the middle and last thirds of [start, end] (the first third is the warm-up). */
export const thirds = (points: ReadonlyArray<Point>, start: number, end: number) => {
  const third = (end - start) / 3
  const a = start + third
  const b = start + 2 * third
  return {
    middle: points.filter((p) => p.t >= a && p.t < b),
    last: points.filter((p) => p.t >= b && p.t <= end)
  }
}

export const mean = (values: ReadonlyArray<number>) => values.length === 0 ? NaN : values.reduce((a, b) => a + b, 0) / values.length

export const median = (values: ReadonlyArray<number>) => {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

const span = (points: ReadonlyArray<Point>) => points.length < 2 ? NaN : points.at(-1)!.value - points[0]!.value

const verdict = (name: string, kind: Check["kind"], middle: number, last: number, limit: number, unit: string): Check => // Too few samples in a third to judge: not a regression (the report shows NaN).
({ name, kind, ok: !(last > limit), middle, last, limit, unit })

/** A series that must stay flat: the last third's mean (or median: latencies, whose spikes are noise) within tolerance. */
export const levelCheck = (
  name: string,
  points: ReadonlyArray<Point>,
  run: { readonly start: number; readonly end: number },
  tolerance: Tolerance,
  options: { readonly unit?: string; readonly statistic?: "mean" | "median" } = {}
): Check => {
  const { middle, last } = thirds(points.filter((p) => Number.isFinite(p.value)), run.start, run.end)
  const statistic = options.statistic === "median" ? median : mean
  const before = statistic(middle.map((p) => p.value))
  return verdict(
    name,
    "level",
    before,
    statistic(last.map((p) => p.value)),
    before * (1 + tolerance.relative) + tolerance.absolute,
    options.unit ?? ""
  )
}

/** A series that may grow linearly: the last third's growth within tolerance of the middle third's. */
export const growthCheck = (
  name: string,
  points: ReadonlyArray<Point>,
  run: { readonly start: number; readonly end: number },
  tolerance: Tolerance,
  unit = ""
): Check => {
  const { middle, last } = thirds(points, run.start, run.end)
  const before = Math.max(0, span(middle))
  return verdict(name, "growth", before, span(last), before * (1 + tolerance.relative) + tolerance.absolute, unit)
}

/** Storage under a retention limit (`limit`, e.g. a stream's max_bytes), or, without one, no more than `slack` of growth after the warm-up. */
export const boundedCheck = (
  name: string,
  points: ReadonlyArray<Point>,
  run: { readonly start: number; readonly end: number },
  limit: number | undefined,
  slack: number,
  unit = ""
): Check => {
  const { middle, last } = thirds(points, run.start, run.end)
  if (limit !== undefined)
    return verdict(
      name,
      "bounded",
      mean(middle.map((p) => p.value)),
      Math.max(...last.map((p) => p.value)),
      limit,
      unit
    )
  const afterWarmup = [...middle, ...last]
  const first = afterWarmup[0]?.value ?? NaN
  return verdict(name, "bounded", first, afterWarmup.at(-1)?.value ?? NaN, first + slack, unit)
}

/** One line per failed check, ready to print; empty when the run passed. */
export const failures = (checks: ReadonlyArray<Check>): Array<string> =>
  checks.filter((check) => !check.ok).map((check) => {
    const figure = (value: number) => `${Math.round(value * 100) / 100}${check.unit}`
    const what = check.kind === "growth" ? "grew" : check.kind === "bounded" ? "reached" : "averaged"
    return `${check.name}: ${what} ${figure(check.last)} in the last third (middle third ${figure(check.middle)}, limit ${
      figure(check.limit)
    })`
  })
