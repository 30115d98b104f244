/**
 * Keyset cursors: the sort key of a page's last row, as base64url JSON. A cursor comes back from the
 * client, so it is decoded as untrusted input: an array of `arity` strings Postgres can store (a
 * forged `["\u0000"]` would otherwise reach SQL), else undefined (the caller's 400 INVALID_CURSOR).
 */
import { isStorableText } from "../domain/storable.ts"
import { isUuid } from "../domain/uuid.ts"

export const encodeCursor = (values: ReadonlyArray<string>): string => Buffer.from(JSON.stringify(values)).toString("base64url")

export const decodeCursor = (cursor: string, arity: number): Array<string> | undefined => {
  try {
    const values: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
    return Array.isArray(values) && values.length === arity && values.every((value) => typeof value === "string" && isStorableText(value))
      ? values as Array<string>
      : undefined
  } catch {
    return undefined
  }
}

/** What our own cursors carry: `Date#toISOString()` output. */
export const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** Microsecond UTC text of a timestamp column: sorts like the timestamps, and cursors keep Postgres' precision. */
export const timeKeySql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
const TIME_KEY = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

/** A (time key, uuid) cursor of a list read newest first, or undefined when it is not one. */
export const decodeTimeCursor = (cursor: string): readonly [string, string] | undefined => {
  const values = decodeCursor(cursor, 2)
  return values && TIME_KEY.test(values[0]!) && isUuid(values[1]!) ? [values[0]!, values[1]!] : undefined
}
