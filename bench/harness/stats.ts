/** Percentiles, ratios and rounding for the figures the benchmarks write. */

/** Percentile of a sorted list. */
export const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

/** `a / b` to two decimals. */
export const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100

/** Rounded to `digits` decimals. */
export const round = (value: number, digits = 0) => {
  const scale = 10 ** digits
  return Math.round(value * scale) / scale
}
