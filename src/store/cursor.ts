/**
 * Keyset cursors: the sort key of a page's last row, as base64url JSON. A cursor comes back from the
 * client, so it is decoded as untrusted input: an array of `arity` strings Postgres can store (a
 * forged `["\u0000"]` would otherwise reach SQL), else undefined (the caller's 400 INVALID_CURSOR).
 */
import { isStorableText } from "../domain/storable.ts"

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
