/**
 * Turns: a worker's lanes of one project share transactions. A lane actor with a batch of tracked events
 * hands it here and waits; the project's batches handed in while its previous turn ran are applied
 * together, in one transaction (combinedBatch.ts), at most one turn of a project at a time. So at low
 * traffic a batch starts at once, alone; under load the number of transactions follows what
 * Postgres can commit, not the number of lanes, and each carries as many events as were waiting.
 *
 * A turn answers each lane its outcome, or undefined when the lane is to apply its batch alone
 * (applyBatch.ts, with its retries and isolation): a lane the combined path cannot take, or every lane of
 * a turn whose transaction failed.
 */
import { Deferred, Effect, Exit } from "effect"
import type { SqlClient } from "effect/sql"
import { WorkerMetrics } from "../observability/Metrics.ts"
import type { BatchContext, BatchOutcome } from "./batchContext.ts"
import { applyCombined, type LaneBatch } from "./combinedBatch.ts"
import type { Delivered } from "./messages.ts"

/** Events a turn takes at most (whole lane batches; the first is always taken). */
const MAX_TURN_EVENTS = 5_000

interface Waiting extends LaneBatch {
  readonly events: number
  readonly answer: Deferred.Deferred<BatchOutcome | undefined>
}

interface ProjectTurns {
  readonly waiting: Array<Waiting>
  running: boolean
}

const eventsIn = (batch: ReadonlyArray<Delivered>) =>
  batch.reduce((sum, message) => sum + (message.body.kind === "track" ? message.body.events.length : 1), 0)

export const makeLaneTurns = Effect.gen(function*() {
  const services = yield* Effect.context<SqlClient.SqlClient>()
  const projects = new Map<string, ProjectTurns>()

  /** The next turn's batches: the oldest first, then as many as fit. */
  const takeTurn = (turns: ProjectTurns) => {
    let events = 0
    let count = 0
    while (count < turns.waiting.length && (count === 0 || events + turns.waiting[count]!.events <= MAX_TURN_EVENTS)) {
      events += turns.waiting[count]!.events
      count++
    }
    return turns.waiting.splice(0, count)
  }

  /** One transaction for the turn's batches (a lone one too: it keeps its lane's facts that way). */
  const applyTurn = (turn: ReadonlyArray<Waiting>) =>
    Effect.gen(function*() {
      WorkerMetrics.turnLanes.observe(turn.length)
      const exit = yield* Effect.exit(applyCombined(turn))
      if (Exit.isFailure(exit)) {
        yield* Effect.logWarning("combined lane batches failed; each lane applies its own", { lanes: turn.length, cause: exit.cause })
      }
      for (const [index, waiting] of turn.entries()) {
        yield* Deferred.succeed(waiting.answer, Exit.isSuccess(exit) ? exit.value[index] : undefined)
      }
    })

  /** Runs the project's turns while batches wait, then leaves. */
  const runTurns = (projectId: string, turns: ProjectTurns): Effect.Effect<void> =>
    Effect.gen(function*() {
      while (turns.waiting.length > 0) {
        yield* applyTurn(takeTurn(turns))
        // Let the actors just answered take their next batches, so they join the next turn rather than
        // split the project's lanes into turns that alternate.
        yield* Effect.yieldNow
      }
      turns.running = false
      projects.delete(projectId)
    }).pipe(Effect.provideContext(services))

  /** Applies a lane's batch in the project's next turn: its outcome, or undefined to apply it alone. */
  const apply = (context: BatchContext, batch: ReadonlyArray<Delivered>) =>
    Effect.gen(function*() {
      const answer = yield* Deferred.make<BatchOutcome | undefined>()
      let turns = projects.get(context.projectId)
      if (!turns) projects.set(context.projectId, turns = { waiting: [], running: false })
      turns.waiting.push({ context, batch, events: eventsIn(batch), answer })
      if (!turns.running) {
        turns.running = true
        yield* Effect.forkDetach(runTurns(context.projectId, turns))
      }
      return yield* Deferred.await(answer)
    })

  return { apply }
})
