/**
 * One range of an import's file read as data rows. At upload the file is cut into ranges of at most
 * RANGE_ROWS rows at record boundaries (byte offsets found while checking it), so each range can be
 * read on its own, by any lane, in parallel with the others, from the stored parts.
 */
import { csvRecords } from "./csv.ts"
import type { ImportPlan } from "./plan.ts"

/** Rows per range: one owner-lane step of the import, one transaction. */
export const RANGE_ROWS = 5_000

/** The file's parts from a byte offset on, each fetched when the parser needs more bytes. */
export type PartSource = (fromByte: number) => AsyncIterable<Uint8Array>

export interface ImportRange {
  /** Where the range's first record starts in the file. */
  readonly offset: number
  readonly rows: number
}

export interface DataRow {
  /** Row number in the file, the header being row 1. */
  readonly row: number
  readonly record: ReadonlyArray<string>
}

/** The rows of range `index` of the plan. */
export const readRange = async (parts: PartSource, plan: ImportPlan, index: number): Promise<Array<DataRow>> => {
  const range = plan.ranges[index]!
  const records = csvRecords(parts(range.offset), plan.delimiter)
  const first = 2 + index * RANGE_ROWS
  const rows: Array<DataRow> = []
  try {
    while (rows.length < range.rows) {
      const next = await records.next()
      if (next.done) break
      rows.push({ row: first + rows.length, record: next.value.cells })
    }
  } finally {
    await records.cancel()
  }
  return rows
}
