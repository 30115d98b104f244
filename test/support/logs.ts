/** A service's JSON log lines (test/support/stack.ts keeps each line as printed). */
import type { Service } from "./stack.ts"

export interface LogLine {
  readonly process?: string
  readonly message?: unknown
}

/** The lines that are JSON (every line the service logs). */
export const parsedLogs = (service: Service): Array<LogLine> =>
  service.logs.flatMap((line) => {
    try {
      return [JSON.parse(line)]
    } catch {
      return []
    }
  })

/** The text of a log line (Effect logs `[message, annotations]` when a line has annotations). */
export const logText = (line: LogLine) => Array.isArray(line.message) ? String(line.message[0]) : String(line.message)
