/**
 * One bad row never stalls a loop. Background loops that read a batch (the sender, campaign steps,
 * timers, the webhook runner, backfills, scheduled campaigns, domain re-checks) run each row's work
 * through `isolateRow`: a failure that belongs to the row (a defect, data Postgres refuses, a result
 * too large to read) sets that row aside with its reason — logged, counted — and the loop moves on;
 * a failure of the database itself (unreachable, busy) still fails the loop, which retries as before.
 */
import { Cause, Effect } from "effect"
import { counter } from "../observability/Metrics.ts"

const TRANSIENT_SQL = new Set([
  "ConnectionError",
  "AuthenticationError",
  "AuthorizationError",
  "DeadlockError",
  "SerializationError",
  "LockTimeoutError",
  "StatementTimeoutError"
])

interface SqlReason {
  readonly _tag?: string
  readonly cause?: { readonly _tag?: string; readonly message?: string; readonly code?: unknown }
}

/** The reason of a SqlError, also when a repository wrapped it in its PersistenceError (src/store/PersistenceError.ts). */
const sqlReason = (error: unknown): SqlReason | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const tag = (error as { _tag?: unknown })._tag
  if (tag === "PersistenceError") return sqlReason((error as { cause?: unknown }).cause)
  return tag === "SqlError" ? (error as { reason?: SqlReason }).reason : undefined
}

/**
 * Worth retrying until it passes: the database is unreachable or busy, not refusing this data. A
 * result the client cannot read (a row over the wire protocol's 16 MiB message limit surfaces as a
 * "connection" error) is the data's fault, and retrying it would never end.
 */
export const isTransient = (error: unknown): boolean => {
  const reason = sqlReason(error)
  if (reason === undefined) return false
  // A connection the server refused ("too many clients already", still starting up) comes back as an
  // UnknownError carrying the server's SQLSTATE: it is the server being away too, never the data's fault.
  if (isUnreachable(error)) return true
  return TRANSIENT_SQL.has(reason._tag ?? "") && reason.cause?._tag !== "PgProtocolParseError"
}

/**
 * SQLSTATEs of a server going away or not back yet: admin_shutdown and crash_shutdown (a backend told
 * to stop), cannot_connect_now (still recovering), too_many_connections.
 */
const UNREACHABLE_SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300"])

/**
 * Postgres cannot be reached right now (refused, lost, shutting down, recovering): nothing about the
 * request or its data, and it passes once the server is back. Narrower than `isTransient`: a deadlock
 * or a timeout is the statement's, and a wrong password an operator's to fix.
 */
export const isUnreachable = (error: unknown): boolean => {
  const reason = sqlReason(error)
  if (reason === undefined) return false
  if (reason._tag === "ConnectionError") return reason.cause?._tag !== "PgProtocolParseError"
  const code = reason.cause?.code
  return typeof code === "string" && UNREACHABLE_SQLSTATES.has(code)
}

/** A cause whose failure (or defect) is the database being away. */
export const causeIsTransient = (cause: Cause.Cause<unknown>): boolean => isTransient(Cause.squash(cause))

/** Text Postgres will store (in text and in jsonb): no NUL, no lone UTF-16 surrogates. */
export const storableText = (text: string): string =>
  text.replace(/\u0000/g, "").replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd")

/** A reason is bounded storable text of what went wrong. */
export const storableReason = (text: string, max = 1_000): string => {
  const clean = storableText(text)
  return clean.length > max ? `${clean.slice(0, max - 1)}…` : clean
}

/** A readable reason for a failure: the error's message, and what caused it when that says more. */
export const reasonOf = (failure: unknown): string => {
  const error = Cause.isCause(failure) ? Cause.squash(failure) : failure
  const message = error instanceof Error ? error.message : typeof error === "object" && error !== null && "message" in error
    ? String((error as { message: unknown }).message)
    : String(error)
  const inner = sqlReason(error)?.cause?.message ??
    (error instanceof Error && error.cause instanceof Error ? error.cause.message : undefined)
  return storableReason(inner && !message.includes(inner) ? `${message}: ${inner}` : message)
}

export const IsolationMetrics = {
  isolated: counter(
    "mailstream_rows_isolated_total",
    "Rows a background loop could not process, set aside with their reason (label: loop)",
    ["loop"]
  )
}

/** Logs and counts a row set aside (the caller records the reason on the row). */
export const setAsideLogged = (loop: string, row: Readonly<Record<string, unknown>>, reason: string, cause?: Cause.Cause<unknown>) =>
  Effect.logError("row set aside: it cannot be processed", { loop, ...row, reason }, ...(cause ? [cause] : [])).pipe(
    Effect.andThen(Effect.sync(() => IsolationMetrics.isolated.inc(1, { loop })))
  )

/**
 * Turns each row of a batch into what the loop needs (a message, say); a row that cannot be turned is
 * set apart with its reason (logged, counted) instead of failing the batch it came in.
 */
export const mapRows = <Row, A>(
  loop: string,
  rows: ReadonlyArray<Row>,
  describe: (row: Row) => Readonly<Record<string, unknown>>,
  map: (row: Row) => A
) =>
  Effect.gen(function*() {
    const mapped: Array<A> = []
    const failed: Array<{ readonly row: Row; readonly reason: string }> = []
    for (const row of rows) {
      try {
        mapped.push(map(row))
      } catch (error) {
        failed.push({ row, reason: reasonOf(error) })
      }
    }
    for (const { row, reason } of failed) yield* setAsideLogged(loop, describe(row), reason)
    return { mapped, failed }
  })

/**
 * Runs one row's work. If it fails for a reason of the row's own, `setAside(reason)` records that on
 * the row (failed, skipped…), the failure is logged and counted, and the result is `undefined`.
 * Interruption and transient database failures propagate: the caller's loop retries as a whole.
 * A `setAside` that fails too is logged; the row is then left for the next round.
 */
export const isolateRow = <A, E, R, R2>(
  loop: string,
  row: Readonly<Record<string, unknown>>,
  work: Effect.Effect<A, E, R>,
  setAside: (reason: string) => Effect.Effect<unknown, unknown, R2>
): Effect.Effect<A | undefined, E, R | R2> =>
  work.pipe(
    Effect.catchCause((cause): Effect.Effect<A | undefined, E, R2> => {
      if (Cause.hasInterrupts(cause) || causeIsTransient(cause)) return Effect.failCause(cause)
      const reason = reasonOf(cause)
      return setAsideLogged(loop, row, reason, cause).pipe(
        Effect.andThen(setAside(reason)),
        Effect.catchCause((failed) =>
          Cause.hasInterrupts(failed)
            ? Effect.failCause(failed as Cause.Cause<never>)
            : Effect.logError("could not record why a row was set aside", { loop, ...row, reason }, failed)
        ),
        Effect.as(undefined)
      )
    })
  )
