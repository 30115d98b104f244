/**
 * Date values in conditions. Both evaluators accept exactly the same strings: `YYYY-MM-DD` (that UTC
 * day) or an ISO timestamp with at most millisecond precision and an explicit zone, with every
 * component in range and a real calendar day. The SQL evaluator gates with DATE_PATTERN and casts
 * with ms_try_timestamptz, which returns NULL where Postgres rejects the date, as parseDate does.
 */

export const DATE_PATTERN =
  "^([1-9]\\d{3})-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])(?:T([01]\\d|2[0-3]):([0-5]\\d)(?::([0-5]\\d)(?:\\.(\\d{1,3}))?)?(Z|[+-](?:0\\d|1[0-4]):?[0-5]\\d))?$"

const DATE_REGEX = new RegExp(DATE_PATTERN)

export const DAY_MS = 86_400_000

export interface ParsedDate {
  /** The instant (for a day: its start, 00:00 UTC). */
  readonly at: number
  /** True for a bare `YYYY-MM-DD`. */
  readonly isDay: boolean
}

export const parseDate = (value: unknown): ParsedDate | undefined => {
  if (typeof value !== "string") return undefined
  const match = DATE_REGEX.exec(value)
  if (!match) return undefined
  const [, y, m, d] = match
  const year = Number(y)
  const month = Number(m)
  const day = Number(d)
  const probe = new Date(0)
  probe.setUTCFullYear(year, month - 1, day)
  if (probe.getUTCFullYear() !== year || probe.getUTCMonth() !== month - 1 || probe.getUTCDate() !== day) return undefined
  if (match[4] === undefined) return { at: probe.getTime(), isDay: true }
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : { at, isDay: false }
}
