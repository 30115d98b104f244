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
    if (char === '"') quoted = !quoted
    else if (!quoted && (char === "\n" || char === "\r")) break
    else if (!quoted && counts.has(char as Delimiter)) counts.set(char as Delimiter, counts.get(char as Delimiter)! + 1)
  }
  let best: Delimiter = ","
  for (const d of DELIMITERS) if (counts.get(d)! > counts.get(best)!) best = d
  return best
}

/**
 * Formula escaping (OWASP "CSV injection"): a cell a spreadsheet would run as a formula (one starting
 * with `=`, `+`, `-`, `@`, tab or CR) is written behind an apostrophe, `'=…`. So that the escape can always
 * be undone, a cell that starts with apostrophes before such a character gets one more: every text is
 * written one way and read back as itself.
 */
const FORMULA = /^'*[=+\-@\t\r]/
const ESCAPED_FORMULA = /^'+[=+\-@\t\r]/

export const escapeFormula = (text: string): string => (FORMULA.test(text) ? `'${text}` : text)

export const unescapeFormula = (cell: string): string => (ESCAPED_FORMULA.test(cell) ? cell.slice(1) : cell)

const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/

/** A JSON string literal (`"…"`, the quotes part of the text) as the string it stands for. */
const jsonString = (text: string): string | undefined => {
  if (text.length < 2 || !text.startsWith('"') || !text.endsWith('"')) return undefined
  try {
    const parsed: unknown = JSON.parse(text)
    return typeof parsed === "string" ? parsed : undefined
  } catch {
    return undefined
  }
}

/**
 * A non-empty cell as a custom-data value: `true`/`false` are booleans, plain decimal numbers are
 * numbers (not `007`, nor integers too large to keep exactly unless written with an exponent, `9.1e+15`),
 * JSON objects and arrays are themselves, a JSON string literal (`"-5"`, quotes included) is that string,
 * everything else a string (dates stay strings, typed `date`). A formula escape (`'=…`) is undone first.
 */
export const cellValue = (cell: string): unknown => {
  const text = unescapeFormula(cell)
  const quoted = jsonString(text)
  if (quoted !== undefined) return quoted
  const lower = text.toLowerCase()
  if (lower === "true") return true
  if (lower === "false") return false
  if (NUMBER.test(text)) {
    const n = Number(text)
    if (Number.isFinite(n) && (!Number.isInteger(n) || Number.isSafeInteger(n) || /[eE]/.test(text))) return n
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

/**
 * A custom-data value as an export cell, written so that `cellValue` reads it back as exactly that value:
 * as plain text where that reads back right (`pro`, `42`, `true`, `{"a":1}`), otherwise a string as a JSON
 * string literal (`"-5"`, `"true"`, `"{…}"`: what would read as another type) and a number with an
 * exponent (`9.007199254740994e+15`: what would read as a string); formula-escaped either way.
 */
export const valueCell = (value: unknown): string => {
  if (value === undefined || value === null) return ""
  if (typeof value === "boolean") return String(value)
  // Objects and arrays: their JSON, which reads back as them.
  if (typeof value !== "string" && typeof value !== "number") return JSON.stringify(value)
  const plain = String(value)
  if (plain !== "" && cellValue(plain) === value) return escapeFormula(plain)
  return escapeFormula(typeof value === "number" ? value.toExponential() : JSON.stringify(value))
}

/**
 * A header cell as a column name: the formula escape undone, then a JSON string literal is exactly the
 * name it stands for (`literal`: a data key, whatever its words), anything else trimmed.
 */
export const columnName = (cell: string): { readonly name: string; readonly literal: boolean } => {
  const text = unescapeFormula(cell)
  const quoted = jsonString(text)
  return quoted === undefined ? { name: text.trim(), literal: false } : { name: quoted, literal: true }
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
