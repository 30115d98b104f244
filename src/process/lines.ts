/**
 * Output of the processes `all` runs, relayed line by line with the name of the process it came from:
 * a JSON log line gets a leading `"process"` field, any other line (a crash's stack trace) becomes one.
 */
import { createInterface } from "node:readline"
import type { Readable } from "node:stream"

export const labelLine = (line: string, process: string): string => {
  const label = `"process":${JSON.stringify(process)}`
  if (/^\{\s*\}$/.test(line)) return `{${label}}`
  if (line.startsWith("{") && line.endsWith("}")) return `{${label},${line.slice(1)}`
  return `{${label},"message":${JSON.stringify(line)}}`
}

/** Copies `from` to `to` one whole line at a time (so processes never interleave mid-line), labelled. */
export const relayLines = (from: Readable, to: NodeJS.WritableStream, process: string) =>
  createInterface({ input: from, crlfDelay: Infinity }).on("line", (line) => {
    to.write(`${labelLine(line, process)}\n`)
  })
