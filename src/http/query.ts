/** Lenient query-string parsing: the spec says unrecognised values fall back to the defaults. */

/** Cursor page size: default 20, clamped to 1..100. */
export const parseLimit = (raw: string | undefined): number => {
  const value = raw === undefined ? NaN : Number.parseInt(raw, 10)
  return Number.isFinite(value) ? Math.min(100, Math.max(1, value)) : 20
}

/** A positive whole number (page, pageSize), or the fallback; capped at `max`. */
export const parsePositive = (raw: string | undefined, fallback: number, max = Number.MAX_SAFE_INTEGER): number => {
  const value = raw === undefined ? NaN : Number.parseInt(raw, 10)
  return Number.isFinite(value) && value >= 1 ? Math.min(max, value) : fallback
}

export const parseBoolean = (raw: string | undefined): boolean | undefined => raw === "true" ? true : raw === "false" ? false : undefined

export const nonEmpty = (raw: string | undefined): string | undefined => (raw === undefined || raw === "" ? undefined : raw)
