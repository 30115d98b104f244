/**
 * What a batch of workflow steps loads of a contact's facts, and when what it loaded already serves a
 * step: CONDITION steps read the aggregates of some events and, for those counted in a window
 * (`triggeredAtLeast … within`), their occurrence times, only as far back as the window reaches from now
 * (a contact's whole history would grow every read).
 */
import { windowedSince } from "../domain/conditions/evaluate.ts"
import type { ConditionReads } from "../domain/conditions/validate.ts"

/** What a step reads: event names, and the windowed ones with their longest window (ms). */
export type StepReads = Pick<ConditionReads, "events" | "windows">

/** What was loaded for a contact: aggregates of `events`, occurrence times of `windowed` after `since`. */
export interface LoadedFacts {
  readonly events: ReadonlySet<string>
  readonly windowed: ReadonlySet<string>
  /** undefined: every occurrence. */
  readonly since: number | undefined
}

/** Whether `loaded` serves a step reading `reads` at `now`; if not, what to load (covering both). */
export const factsToLoad = (loaded: LoadedFacts | undefined, reads: StepReads, now: number): LoadedFacts | "loaded" => {
  const since = reads.windows.size === 0 ? undefined : windowedSince(now, Math.max(...reads.windows.values()))
  const reachesBack = (from: number | undefined) => from === undefined || (since !== undefined && since >= from)
  if (
    loaded && [...reads.events].every((name) => loaded.events.has(name)) &&
    [...reads.windows.keys()].every((name) => loaded.windowed.has(name)) &&
    (reads.windows.size === 0 || reachesBack(loaded.since))
  ) return "loaded"
  if (!loaded) return { events: reads.events, windowed: new Set(reads.windows.keys()), since }
  const windowed = new Set([...loaded.windowed, ...reads.windows.keys()])
  // Far enough back for both: the earlier bound, unless either reads every occurrence.
  const from = loaded.windowed.size === 0 ? since : reads.windows.size === 0 ?
    loaded.since
    : loaded.since === undefined || since === undefined
    ? undefined
    : Math.min(loaded.since, since)
  return { events: new Set([...loaded.events, ...reads.events]), windowed, since: from }
}
