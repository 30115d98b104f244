/**
 * Column schemas the repositories decode rows with (SqlSchema), so each encoding is written once:
 * a `timestamptz` (the driver's Date) is answered as an ISO 8601 string, a `jsonb` column arrives
 * parsed and is checked by the schema of what it holds.
 */
import { Effect, Schema, SchemaGetter } from "effect"
import type { Condition } from "../domain/conditions/types.ts"

/** A `timestamptz` column, as the API shows instants: ISO 8601 with milliseconds, UTC. */
export const Timestamp = Schema.Date.pipe(
  Schema.decodeTo(Schema.String, {
    decode: SchemaGetter.transform((date: Date) => date.toISOString()),
    encode: SchemaGetter.transform((text: string) => new Date(text))
  })
)

/** A nullable `timestamptz` column. */
export const NullableTimestamp = Schema.NullOr(Timestamp)

/** A `jsonb` condition as stored (validated when it was written): an object. */
export const StoredCondition = Schema.declare((input: unknown): input is Condition => typeof input === "object" && input !== null)

/**
 * A `jsonb` object column holding the user's own fields (contact data, event data): checked to be an
 * object, its fields left as they are (they are the user's, and contact rows are read on per-event paths).
 */
export const JsonObject = Schema.declare(
  (input: unknown): input is Record<string, unknown> => typeof input === "object" && input !== null && !Array.isArray(input),
  // What a failed decode says: the reason an operator reads on the failed step or in the log.
  { expected: "a JSON object" }
)

/** One `count(*)::int AS n`. */
export const CountRow = Schema.Struct({ n: Schema.Number })

/** A row that is only an id (`RETURNING id`). */
export const IdRow = Schema.Struct({ id: Schema.String })

/**
 * Decodes a statement's rows with `schema`: for statements built per call (a compiled condition, an
 * optional filter) where SqlSchema's fixed request does not fit. The decoder is built once.
 */
export const decodeRows = <T, E>(schema: Schema.Codec<T, E>) => {
  const decode = Schema.decodeUnknownEffect(Schema.Array(schema))
  return <Err, R>(rows: Effect.Effect<ReadonlyArray<unknown>, Err, R>) => Effect.flatMap(rows, decode)
}

/**
 * The same encoding for values not decoded with a schema: the driver's Date (or a timestamp it answered
 * as text, inside jsonb), or epoch milliseconds, as ISO 8601.
 */
export const iso = (value: Date | string | number): string => new Date(value).toISOString()

/** `iso`, with null kept. */
export const isoOrNull = (value: Date | string | number | null): string | null => (value === null ? null : iso(value))
