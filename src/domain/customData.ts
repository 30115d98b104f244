/**
 * The custom-data rules of the spec, written once for every writer of contact data
 * (`POST/PATCH /contacts`, `/v1/track`, `/v1/send`, workflow UPDATE_CONTACT steps, imports).
 *
 * - primitives and objects are stored (a patch: only the keys sent change);
 * - `null` deletes the key;
 * - `""` is ignored;
 * - `{ value, persistent: false }` is for this event/send only and never stored;
 * - reserved keys are silently dropped.
 */
import { formatPath, storableProblem } from "./storable.ts"

export const RESERVED_DATA_KEYS: ReadonlySet<string> = new Set([
  "id",
  "plunk_id",
  "plunk_email",
  "email",
  "unsubscribeUrl",
  "subscribeUrl",
  "manageUrl"
])

export type FieldType = "string" | "number" | "boolean" | "date" | "object"

export interface DataPatch {
  /** Values to store on the contact (merged over the existing data). */
  readonly set: Readonly<Record<string, unknown>>
  /** Keys to delete from the contact. */
  readonly remove: ReadonlyArray<string>
  /** Values for this event or send only. */
  readonly transient: Readonly<Record<string, unknown>>
}

export const emptyPatch: DataPatch = { set: {}, remove: [], transient: {} }

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const isTransient = (value: unknown): value is { value: unknown; persistent: false } =>
  isPlainObject(value) && value.persistent === false && "value" in value

/** Splits a `data` payload into what is stored, deleted and only passed along. */
export const toDataPatch = (data: Readonly<Record<string, unknown>> | undefined): DataPatch => {
  if (data === undefined) return emptyPatch
  const set: Record<string, unknown> = {}
  const remove: Array<string> = []
  const transient: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(data)) {
    if (RESERVED_DATA_KEYS.has(key) || value === "" || value === undefined) continue
    if (value === null) remove.push(key)
    else if (isTransient(value)) transient[key] = value.value
    else if (isPlainObject(value) && value.persistent === true && "value" in value) set[key] = value.value
    else set[key] = value
  }
  return { set, remove, transient }
}

export const applyDataPatch = (
  existing: Readonly<Record<string, unknown>>,
  patch: DataPatch
): Record<string, unknown> => {
  const next: Record<string, unknown> = { ...existing, ...patch.set }
  for (const key of patch.remove) delete next[key]
  return next
}

/** The values an event or a send sees: everything stored by this call plus the transient values. */
export const eventVariables = (patch: DataPatch): Record<string, unknown> => ({ ...patch.set, ...patch.transient })

const DAY = /^\d{4}-\d{2}-\d{2}$/
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/

export const isDateString = (value: string): boolean => (DAY.test(value) || ISO_TIMESTAMP.test(value)) && !Number.isNaN(Date.parse(value))

export const inferFieldType = (value: unknown): FieldType => {
  if (typeof value === "number") return "number"
  if (typeof value === "boolean") return "boolean"
  if (typeof value === "string") return isDateString(value) ? "date" : "string"
  if (typeof value === "object" && value !== null) return "object"
  return "string"
}

/**
 * The field types a set of stored values implies: one per top-level key, and one per nested leaf
 * as a dotted path (`profile.tier`), so conditions on nested data can compare by type too.
 */
export const inferFieldTypes = (values: Readonly<Record<string, unknown>>): Array<readonly [string, FieldType]> => {
  const out: Array<readonly [string, FieldType]> = []
  const visit = (prefix: string, value: unknown, depth: number) => {
    out.push([prefix, inferFieldType(value)])
    if (isPlainObject(value) && depth < 5) {
      for (const [key, nested] of Object.entries(value)) {
        if (nested !== null && nested !== undefined) visit(`${prefix}.${key}`, nested, depth + 1)
      }
    }
  }
  for (const [key, value] of Object.entries(values)) visit(key, value, 0)
  return out
}

export const DATA_LIMITS = {
  maxKeys: 500,
  maxKeyLength: 255,
  maxSerializedBytes: 256 * 1024
} as const

/**
 * How much custom data one contact may hold in all (its `data` as JSON text). Writes that would grow a
 * contact past it are refused (422 `data_too_large`); a contact already over it (from before the
 * limit) can still shrink. It bounds every row and message that carries a contact's data.
 */
export const MAX_CONTACT_DATA_BYTES = 256 * 1024

/** Whether replacing `before` with `after` breaks the contact data limit (only growth past it does). */
export const exceedsContactDataLimit = (beforeBytes: number, afterBytes: number): boolean =>
  afterBytes > MAX_CONTACT_DATA_BYTES && afterBytes > beforeBytes

export const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value))

/**
 * Problems with a data payload, as `[path, message]`; empty when it is acceptable. `storableChecked`:
 * the caller's schema already ran `storableProblem` over it (the walk is not repeated).
 */
export const dataPayloadProblems = (
  data: Readonly<Record<string, unknown>>,
  options?: { readonly storableChecked?: boolean | undefined }
): Array<readonly [string, string]> => {
  const problems: Array<readonly [string, string]> = []
  const keys = Object.keys(data)
  if (keys.length > DATA_LIMITS.maxKeys) problems.push(["data", `at most ${DATA_LIMITS.maxKeys} keys per request`])
  for (const key of keys) {
    if (key.length === 0 || key.length > DATA_LIMITS.maxKeyLength) {
      problems.push([`data`, `keys must be 1 to ${DATA_LIMITS.maxKeyLength} characters`])
      break
    }
  }
  // What Postgres would refuse later, in the worker (request schemas check it first; this covers every other writer).
  const unstorable = options?.storableChecked === true ? undefined : storableProblem(data)
  if (unstorable) {
    problems.push(["data", `${formatPath(["data", ...unstorable.path])}: ${unstorable.message}`])
    return problems // the size below is measured by JSON.stringify, which needs a bounded depth
  }
  if (Buffer.byteLength(JSON.stringify(data)) > DATA_LIMITS.maxSerializedBytes) {
    problems.push(["data", `at most ${DATA_LIMITS.maxSerializedBytes / 1024} KiB of data per request`])
  }
  return problems
}
