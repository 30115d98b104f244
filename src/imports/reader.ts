/**
 * An import's file read as data rows from a position (the job's cursor), kept open by the owner lane
 * between chunks (reopening one skips, by parsing, the rows before the cursor).
 */
import { csvRecords } from "./csv.ts"
import type { ImportPlan } from "./plan.ts"

/** The file's parts in order, each fetched when the parser needs more bytes. */
export type PartSource = () => AsyncIterable<Uint8Array>

export interface DataRow {
  /** Row number in the file, the header being row 1. */
  readonly row: number
  readonly record: ReadonlyArray<string>
}

export class ImportReader {
  /** Data rows consumed so far: equal to the job's cursor while the reader is in step with it. */
  position: number
  private readonly records: ReturnType<typeof csvRecords>
  private done = false

  private constructor(records: ReturnType<typeof csvRecords>) {
    this.records = records
    this.position = 0
  }

  static async open(parts: PartSource, plan: ImportPlan, cursor: number): Promise<ImportReader> {
    const reader = new ImportReader(csvRecords(parts(), plan.delimiter))
    await reader.records.next() // the header
    while (reader.position < cursor && (await reader.take(cursor - reader.position, Infinity)).length > 0) {
      // skipping what earlier chunks applied
    }
    return reader
  }

  /** Up to `limit` data rows, stopping early after about `maxChars` of cell text. */
  async take(limit: number, maxChars: number): Promise<Array<DataRow>> {
    const rows: Array<DataRow> = []
    let chars = 0
    while (!this.done && rows.length < limit && chars < maxChars) {
      const next = await this.records.next()
      if (next.done) {
        this.done = true
        break
      }
      this.position++
      rows.push({ row: this.position + 1, record: next.value })
      for (const cell of next.value) chars += cell.length
    }
    return rows
  }

  close(): Promise<void> {
    this.done = true
    return this.records.cancel()
  }
}
