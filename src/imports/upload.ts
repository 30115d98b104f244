/**
 * Receiving an import: the multipart body is read as a stream, the file stored in Postgres part by part
 * (checked on the way: at most MAX_IMPORT_BYTES, UTF-8 text without NUL), then read back once with
 * csv-parse to check it is CSV with an email column and to count its rows. Only then is the job queued;
 * a refused upload leaves nothing behind.
 */
import { Effect, Stream } from "effect"
import type { Multipart } from "effect/http"
import { ContactJobs, type JobError, PART_BYTES } from "../store/ContactJobs.ts"
import { csvRecords, detectDelimiter, subscriptionValue } from "./csv.ts"
import { emailOf, type ImportPlan, type ImportRange, MAX_IMPORT_BYTES, planColumns } from "../domain/imports/plan.ts"
import { RANGE_BYTES, RANGE_ROWS } from "./reader.ts"

export type UploadProblem =
  | { readonly _tag: "TooLarge" }
  | { readonly _tag: "Unreadable"; readonly message: string }
  | { readonly _tag: "Invalid"; readonly field: string; readonly message: string }

const invalid = (field: string, message: string): UploadProblem => ({ _tag: "Invalid", field, message })

/** Bytes to look at for the delimiter: the header row must start within them. */
const HEAD_BYTES = 64 * 1024

export const receiveImport = Effect.fnUntraced(
  function*(projectId: string, parts: Stream.Stream<Multipart.Part, Multipart.MultipartError>) {
    const jobs = yield* ContactJobs
    const fields = new Map<string, string>()
    let jobId: string | undefined
    let size = 0
    let head = ""

    const storeFile = (file: Multipart.File) =>
      Effect.gen(function*() {
        if (jobId !== undefined) return yield* Effect.fail(invalid("file", "send one file"))
        const id = yield* jobs.beginUpload(projectId)
        jobId = id
        const decoder = new TextDecoder("utf-8", { fatal: true })
        let buffered: Array<Uint8Array> = []
        let bufferedBytes = 0
        let part = 0
        // Parts of exactly PART_BYTES (the last one shorter), so a byte offset names its part.
        const flush = (all: boolean) =>
          Effect.suspend(() => {
            if (bufferedBytes === 0 || (!all && bufferedBytes < PART_BYTES)) return Effect.void
            const bytes = Buffer.concat(buffered, bufferedBytes)
            const cut = all ? bytes.length : bytes.length - (bytes.length % PART_BYTES)
            buffered = cut < bytes.length ? [bytes.subarray(cut)] : []
            bufferedBytes = bytes.length - cut
            return Effect.forEach(
              Array.from(
                { length: Math.ceil(cut / PART_BYTES) },
                (_, i) => bytes.subarray(i * PART_BYTES, Math.min(cut, (i + 1) * PART_BYTES))
              ),
              (piece) => jobs.appendPart(id, part++, piece),
              { discard: true }
            )
          })
        yield* Stream.runForEach(file.content, (chunk) =>
          Effect.gen(function*() {
            size += chunk.length
            if (size > MAX_IMPORT_BYTES) return yield* Effect.fail<UploadProblem>({ _tag: "TooLarge" })
            let text: string
            try {
              text = decoder.decode(chunk, { stream: true })
            } catch {
              return yield* Effect.fail(invalid("file", "the file is not UTF-8 text (save it as CSV UTF-8)"))
            }
            if (text.includes("\0")) return yield* Effect.fail(invalid("file", "the file is not text (it contains NUL bytes)"))
            if (head.length < HEAD_BYTES) head += text.slice(0, HEAD_BYTES - head.length)
            buffered.push(chunk)
            bufferedBytes += chunk.length
            yield* flush(false)
          }))
        try {
          decoder.decode()
        } catch {
          return yield* Effect.fail(invalid("file", "the file is not UTF-8 text (it ends inside a character)"))
        }
        yield* flush(true)
      })

    const received = Stream.runForEach(parts, (part) => {
      if (part._tag === "Field") return Effect.sync(() => void fields.set(part.key, part.value))
      if (part.key === "file") return storeFile(part)
      return Stream.runDrain(part.content)
    }).pipe(
      Effect.catchTag("MultipartError", (error): Effect.Effect<never, UploadProblem> =>
        Effect.fail(
          error.reason._tag === "FileTooLarge" || error.reason._tag === "BodyTooLarge"
            ? { _tag: "TooLarge" }
            : { _tag: "Unreadable", message: "the body is not multipart/form-data with a `file` part" }
        ))
    )

    const checked = Effect.gen(function*() {
      yield* received
      if (jobId === undefined) return yield* Effect.fail(invalid("file", "a CSV file is required (multipart field `file`)"))
      const id = jobId
      const subscribedField = fields.get("subscribed")
      const defaultSubscribed = subscribedField === undefined || subscribedField === "" ? null : subscriptionValue(subscribedField)
      if (defaultSubscribed === undefined) return yield* Effect.fail(invalid("subscribed", "subscribed must be true/false, yes/no or 1/0"))
      const mapping = parseMapping(fields.get("mapping"))
      if (typeof mapping === "string") return yield* Effect.fail(invalid("mapping", mapping))

      const delimiter = detectDelimiter(head)
      const scanned = yield* Effect.tryPromise({
        try: async () => {
          const records = csvRecords(jobs.parts(id), delimiter)
          const header = await records.next()
          if (header.done) return "the file is empty: the first row must name the columns" as const
          const planned = planColumns(header.value.cells, delimiter, mapping, defaultSubscribed)
          if ("message" in planned) {
            await records.cancel()
            return planned.message
          }
          // Counted and cut into ranges, and each email's last row found: an earlier row naming it again is a duplicate.
          const lastRowOf = new Map<string, number>()
          const duplicates: Record<string, number> = {}
          const ranges: Array<ImportRange> = []
          let rows = 0
          let end = header.value.end
          let open: { offset: number; end: number; rows: number; firstRow: number } | undefined
          for (let next = await records.next(); !next.done; next = await records.next()) {
            if (!open || open.rows >= RANGE_ROWS || open.end - open.offset >= RANGE_BYTES) {
              open = { offset: end, end, rows: 0, firstRow: rows + 2 }
              ranges.push(open)
            }
            open.rows++
            open.end = end = next.value.end
            rows++
            const email = emailOf(planned.plan, next.value.cells)
            if (!email) continue
            const earlier = lastRowOf.get(email)
            if (earlier !== undefined) duplicates[earlier] = rows + 1
            lastRowOf.set(email, rows + 1)
          }
          // Point every superseded row at the last one.
          for (const [row, next] of Object.entries(duplicates)) {
            let last = next
            while (duplicates[last] !== undefined) last = duplicates[last]!
            duplicates[row] = last
          }
          return { plan: { ...planned.plan, duplicates, ranges }, reserved: planned.reserved, rows }
        },
        catch: (error) => invalid("file", `the file is not valid CSV: ${error instanceof Error ? error.message : String(error)}`)
      })
      if (typeof scanned === "string") return yield* Effect.fail(invalid("file", scanned))
      // Reported once, on the header row: reserved keys are dropped as POST /contacts drops them.
      const errors: Array<JobError> = scanned.reserved.length === 0 ? [] : [{
        row: 1,
        reason: `reserved key${scanned.reserved.length > 1 ? "s" : ""} ${scanned.reserved.map((key) => `"${key}"`).join(", ")}: ` +
          "the column's cells are ignored (map it to another key with `mapping`)"
      }]
      yield* jobs.queueImport(projectId, id, scanned.rows, scanned.plan satisfies ImportPlan, errors)
      return id
    })

    return yield* checked.pipe(
      Effect.onError(() => (jobId === undefined ? Effect.void : Effect.ignore(jobs.discard(jobId))))
    )
  }
)

/** The form's `mapping`: a JSON object of column → key (or `ignore`); a string says what is wrong. */
const parseMapping = (text: string | undefined): Record<string, string> | string => {
  if (text === undefined || text.trim() === "") return {}
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return 'mapping must be JSON: { "<column>": "<key>" | "ignore" }'
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "mapping must be a JSON object of column → key"
  for (const [column, key] of Object.entries(value)) {
    if (typeof key !== "string") return `mapping["${column}"] must be a string (a key, or "ignore")`
  }
  return value as Record<string, string>
}
