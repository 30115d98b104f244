/**
 * The CSV dialect of contact files (the delimiter) and what a cell means (the type inference of
 * `POST /contacts` for text cells). Pure, without Node imports: the server's import and the dashboard's
 * import preview decide alike.
 */
export const DELIMITERS = [",", ";", "\t"] as const
export type Delimiter = (typeof DELIMITERS)[number]

/**
 * The delimiter of a file from its first record: the candidate seen most often outside quotes
 * (`,` on a tie or when none is seen: a one-column file).
 */
export const detectDelimiter = (head: string): Delimiter => {
  const counts = new Map<Delimiter, number>(DELIMITERS.map((d) => [d, 0]))
  let quoted = false
  for (const char of head.replace(/^\uFEFF/, "")) {
    if (char === "\"") quoted = !quoted
    else if (!quoted && (char === "\n" || char === "\r")) break
    else if (!quoted && counts.has(char as Delimiter)) counts.set(char as Delimiter, counts.get(char as Delimiter)! + 1)
  }
  let best: Delimiter = ","
  for (const d of DELIMITERS) if (counts.get(d)! > counts.get(best)!) best = d
  return best
}

/** Cells a spreadsheet would run as a formula, as csv-stringify's `escape_formulas` writes them: `'=…`. */
const ESCAPED_FORMULA = /^'[=+\-@\t\r]/
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/

/**
 * A non-empty cell as a custom-data value: `true`/`false` are booleans, plain decimal numbers are
 * numbers (not `007`, nor integers too large to keep exactly), JSON objects and arrays are
 * themselves, everything else a string (dates stay strings, typed `date`). A formula escape written
 * by an export (`'=…`) is undone, so an export imports back to the same data.
 */
export const cellValue = (cell: string): unknown => {
  const text = ESCAPED_FORMULA.test(cell) ? cell.slice(1) : cell
  const lower = text.toLowerCase()
  if (lower === "true") return true
  if (lower === "false") return false
  if (NUMBER.test(text)) {
    const n = Number(text)
    if (Number.isFinite(n) && (!Number.isInteger(n) || Number.isSafeInteger(n))) return n
  }
  if ((text.startsWith("{") && text.endsWith("}")) || (text.startsWith("[") && text.endsWith("]"))) {
    try {
      return JSON.parse(text)
    } catch {
      // not JSON: a string
    }
  }
  return text
}

/** A custom-data value as an export cell (the inverse of `cellValue` for what it infers). */
export const valueCell = (value: unknown): string => {
  if (value === undefined || value === null) return ""
  if (typeof value === "string") return value
  if (typeof value === "number" || typeof value === "boolean") return String(value)
  return JSON.stringify(value)
}

/** A subscription cell: true/false, yes/no, 1/0 (any case); undefined when it is none of them. */
export const subscriptionValue = (cell: string): boolean | undefined => {
  switch (cell.trim().toLowerCase()) {
    case "true":
    case "yes":
    case "1":
      return true
    case "false":
    case "no":
    case "0":
      return false
    default:
      return undefined
  }
}
