/**
 * Reading contact CSV files as a stream (csv-parse over web streams, so a file is pulled part by part
 * and never held whole). The dialect and what a cell means live in src/domain/imports/cells.ts (pure:
 * the dashboard's import preview uses them too).
 */
import { parse } from "csv-parse/stream"
import type { Delimiter } from "../domain/imports/cells.ts"

export { cellValue, DELIMITERS, type Delimiter, detectDelimiter, subscriptionValue, valueCell } from "../domain/imports/cells.ts"

export interface CsvRecord {
  readonly cells: Array<string>
  /** Bytes of the stream read up to the end of this record (its line break included): where the next one starts. */
  readonly end: number
}

/** Records of a CSV byte stream (the header is the first when reading from the start). */
export const csvRecords = (
  source: AsyncIterable<Uint8Array>,
  delimiter: Delimiter
): AsyncIterator<CsvRecord> & { readonly cancel: () => Promise<void> } => {
  const chunks = source[Symbol.asyncIterator]()
  const bytes = new ReadableStream<Uint8Array>({
    pull: async (controller) => {
      const next = await chunks.next()
      if (next.done) controller.close()
      else controller.enqueue(next.value)
    },
    cancel: async () => void (await chunks.return?.())
  }, { highWaterMark: 0 })
  const reader = bytes
    .pipeThrough(parse({ bom: true, delimiter, relax_column_count: true, skip_empty_lines: true, info: true }))
    .getReader() as ReadableStreamDefaultReader<{ record: Array<string>; info: { bytes: number } }>
  return {
    next: async () => {
      const { done, value } = await reader.read()
      return done ? { done: true, value: undefined } : { done: false, value: { cells: value.record, end: value.info.bytes } }
    },
    cancel: () => reader.cancel().catch(() => undefined)
  }
}
