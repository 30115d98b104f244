/**
 * One range of an import's file read as data rows. At upload the file is cut at record boundaries
 * (byte offsets found while checking it) into ranges of at most RANGE_ROWS rows and RANGE_BYTES, so
 * each range can be read on its own, by any lane, in parallel with the others, from its stored parts.
 */
import type { ImportPlan, ImportRange } from "../domain/imports/plan.ts"
import { csvRecords } from "./csv.ts"

/** Rows per range: one step of the import, one transaction. */
export const RANGE_ROWS = 5_000
/** A range ends after the record that reaches this many bytes (so a step holds about this much of the file). */
export const RANGE_BYTES = 1024 * 1024

export interface DataRow {
  /** Row number in the file, the header being row 1. */
  readonly row: number
  readonly record: ReadonlyArray<string>
}

/** The rows of a range, from its bytes. */
export const readRange = async (bytes: ReadonlyArray<Uint8Array>, plan: ImportPlan, range: ImportRange): Promise<Array<DataRow>> => {
  const records = csvRecords(
    (async function*() {
      yield* bytes
    })(),
    plan.delimiter
  )
  const first = range.firstRow
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
