/**
 * What an import's columns mean (its plan, decided once from the header and the optional mapping),
 * and what one data row asks for under it. Pure: the api checks a file with it, the owner lane reads
 * rows with it.
 */
import { DATA_LIMITS, jsonBytes, MAX_CONTACT_DATA_BYTES, RESERVED_DATA_KEYS } from "../customData.ts"
import { isValidEmail, normalizeEmail } from "../email.ts"
import { cellValue, columnName, type Delimiter, escapeFormula, subscriptionValue, unescapeFormula } from "./cells.ts"

/** At most this many bytes of CSV per import (checked as the upload streams in, and by the dashboard first). */
export const MAX_IMPORT_BYTES = 5 * 1024 * 1024

/**
 * One range of an import's file (src/imports/reader.ts reads it): cut at record boundaries at upload, so
 * each range can be read on its own, by any lane.
 */
export interface ImportRange {
  /** Where the range's first record starts in the file. */
  readonly offset: number
  /** Where it ends (its last record's line break included). */
  readonly end: number
  readonly rows: number
  /** Row number of its first record (the header is row 1). */
  readonly firstRow: number
}

export interface ImportPlan {
  readonly delimiter: Delimiter
  /** Column index of the email. */
  readonly email: number
  readonly subscribed: number | null
  /** Custom data columns: [column index, data key]. */
  readonly data: ReadonlyArray<readonly [number, string]>
  /** The form's `subscribed`: the value of rows without one (null: new contacts subscribed, others kept). */
  readonly defaultSubscribed: boolean | null
  /**
   * Rows whose email a later row of the file names again, each with that last row (which wins):
   * found when the file is checked at upload, so every chunk decides alike, after a crash too.
   */
  readonly duplicates: Readonly<Record<string, number>>
  /** The file cut at record boundaries into ranges of RANGE_ROWS rows (each read on its own). */
  readonly ranges: ReadonlyArray<ImportRange>
}

export interface PlanProblem {
  readonly message: string
}

/** Columns read as standard fields, not data: an export's read-only columns are ignored on import. */
const EMAIL_HEADERS = new Set(["email", "email address", "e-mail", "e-mail address"])
const READ_ONLY_HEADERS = new Set(["createdat", "updatedat"])

/** Whether a plain header name (not a JSON literal) means a standard column rather than a data key. */
const isStandardHeader = (name: string) => {
  const lower = name.toLowerCase()
  return EMAIL_HEADERS.has(lower) || lower === "subscribed" || READ_ONLY_HEADERS.has(lower)
}

/**
 * The data key a plain header names (the spec's custom fields, rule 6): lower-case, its words one space
 * apart, so the two-word title `First Name` is the key `first name` (`{{first name}}` in a template). A
 * header written as a JSON string literal, or a key given in the mapping, is taken exactly as written.
 */
export const headerDataKey = (name: string): string => name.trim().toLowerCase().replace(/\s+/g, " ")

/**
 * The header cell an export writes for a data key, so that `planColumns` reads it back as that key: the
 * key itself where it reads so, otherwise as a JSON string literal (a key with capitals or runs of spaces,
 * which a plain header would lower-case, one named like a standard column, `subscribed` or `Email`, with
 * spaces around it, or itself quoted); formula-escaped either way.
 */
export const dataColumnHeader = (key: string): string => {
  const read = columnName(key)
  return escapeFormula(!read.literal && headerDataKey(read.name) === key && !isStandardHeader(key) ? key : JSON.stringify(key))
}

/** A column's data key: as written when named exactly (mapped, or a JSON literal), else by the header rule. */
const dataKey = (target: string, exact: boolean) => (exact ? target : headerDataKey(target))

/**
 * The plan for a header row: `mapping` (column → key or `ignore`, columns named as `columnName` reads
 * them) overrides what a column's name implies; a column named by a JSON string literal is a data key
 * named exactly so; any other column's key is `headerDataKey` of its name.
 * Columns naming a reserved key are dropped, as `POST /contacts` drops such keys, and listed.
 */
export const planColumns = (
  header: ReadonlyArray<string>,
  delimiter: Delimiter,
  mapping: Readonly<Record<string, string>>,
  defaultSubscribed: boolean | null
): { readonly plan: ImportPlan; readonly reserved: ReadonlyArray<string> } | PlanProblem => {
  const columns = header.map(columnName)
  const names = columns.map((column) => column.name)
  for (const column of Object.keys(mapping)) {
    if (!names.includes(column)) return { message: `mapping names the column "${column}", which the file's header does not have` }
  }
  let email: number | null = null
  let subscribed: number | null = null
  const data: Array<readonly [number, string]> = []
  const reserved: Array<string> = []
  const keys = new Set<string>()
  for (const [index, { name, literal }] of columns.entries()) {
    const mapped = Object.hasOwn(mapping, name) ? mapping[name]!.trim() : undefined
    // A literal name is a data key: only a mapping makes it a standard column.
    const standard = mapped !== undefined || !literal
    if (mapped === "ignore" || (mapped === undefined && (name === "" || (standard && READ_ONLY_HEADERS.has(name.toLowerCase()))))) continue
    const target = mapped ?? name
    const lower = target.toLowerCase()
    if (standard && EMAIL_HEADERS.has(lower)) {
      if (email !== null) return { message: `more than one column is the email ("${names[email]}" and "${name}")` }
      email = index
    } else if (standard && lower === "subscribed") {
      if (subscribed !== null) return { message: `more than one column is subscribed ("${names[subscribed]}" and "${name}")` }
      subscribed = index
    } else {
      const key = dataKey(target, mapped !== undefined || literal)
      if (RESERVED_DATA_KEYS.has(target) || RESERVED_DATA_KEYS.has(key)) {
        reserved.push(target)
        continue
      }
      if (key.length === 0 || key.length > DATA_LIMITS.maxKeyLength) {
        return { message: `column "${name}": data keys must be 1 to ${DATA_LIMITS.maxKeyLength} characters` }
      }
      if (keys.has(key)) return { message: `more than one column is the data key "${key}"` }
      keys.add(key)
      data.push([index, key])
    }
  }
  if (email === null) return { message: "the header has no email column (`email` or `Email Address`, or map one with `mapping`)" }
  if (data.length > DATA_LIMITS.maxKeys) return { message: `at most ${DATA_LIMITS.maxKeys} data columns` }
  return { plan: { delimiter, email, subscribed, data, defaultSubscribed, duplicates: {}, ranges: [] }, reserved }
}

export type RowOutcome =
  | { readonly _tag: "row"; readonly email: string; readonly subscribed: boolean | null; readonly set: Record<string, unknown> }
  | { readonly _tag: "bad"; readonly email: string | undefined; readonly reason: string }

/** The email a record names, normalized, its formula escape undone (undefined when the cell is missing). */
export const emailOf = (plan: ImportPlan, record: ReadonlyArray<string>): string | undefined => {
  const cell = record[plan.email]
  return cell === undefined ? undefined : normalizeEmail(unescapeFormula(cell))
}

/** One data row under the plan: the contact it writes, or why it is skipped. Empty cells change nothing. */
export const readRow = (plan: ImportPlan, record: ReadonlyArray<string>): RowOutcome => {
  const email = emailOf(plan, record)
  if (email === undefined || email === "") return { _tag: "bad", email: undefined, reason: "missing email" }
  if (!isValidEmail(email)) return { _tag: "bad", email, reason: "invalid email" }
  let subscribed = plan.defaultSubscribed
  const cell = plan.subscribed === null ? undefined : record[plan.subscribed]
  if (cell !== undefined && cell.trim() !== "") {
    const value = subscriptionValue(cell)
    if (value === undefined)
      return { _tag: "bad", email, reason: `subscribed must be true/false, yes/no or 1/0 (got "${cell.slice(0, 40)}")` }
    subscribed = value
  }
  const set: Record<string, unknown> = {}
  for (const [index, key] of plan.data) {
    const text = record[index]
    if (text === undefined || text === "") continue
    const value = cellValue(text)
    // `""` changes nothing, as in every other write of contact data.
    if (value !== "") set[key] = value
  }
  if (jsonBytes(set) > MAX_CONTACT_DATA_BYTES) {
    return { _tag: "bad", email, reason: `the row's data is over the contact data limit (${MAX_CONTACT_DATA_BYTES / 1024} KiB)` }
  }
  return { _tag: "row", email, subscribed, set }
}
