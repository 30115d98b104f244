/** The stream commands that read an import's file, range by range (run by src/actors/importStep.ts). */
import { uuidv7 } from "../domain/ids.ts"
import type { Lanes } from "../stream/lanes.ts"
import type { CommandMessage } from "../stream/messages.ts"

/** Ranges of one file read at once (each by its own lane, so possibly on different workers). */
export const IMPORT_READ_AHEAD = 4

/** The command that reads range `range` of an import, on lane `range mod L`. */
export const importStepCommand = (
  context: { readonly projectId: string; readonly outbox: { readonly lanes: Lanes } },
  jobId: string,
  range: number
): CommandMessage => ({
  kind: "command" as const,
  projectId: context.projectId,
  commandId: uuidv7(),
  type: "importStep" as const,
  jobId,
  range,
  lane: range % context.outbox.lanes.count
})
