/**
 * Column schemas the repositories decode rows with (SqlSchema), so each encoding is written once:
 * a `timestamptz` (the driver's Date) is answered as an ISO 8601 string, a `jsonb` column arrives
 * parsed and is checked by the schema of what it holds.
 */
import { Schema, SchemaGetter } from "effect"

/** A `timestamptz` column, as the API shows instants: ISO 8601 with milliseconds, UTC. */
export const Timestamp = Schema.Date.pipe(
  Schema.decodeTo(Schema.String, {
    decode: SchemaGetter.transform((date: Date) => date.toISOString()),
    encode: SchemaGetter.transform((text: string) => new Date(text))
  })
)

/** A nullable `timestamptz` column. */
export const NullableTimestamp = Schema.NullOr(Timestamp)

/**
 * The same encoding for values not decoded with a schema: the driver's Date (or a timestamp it answered
 * as text, inside jsonb), or epoch milliseconds, as ISO 8601.
 */
export const iso = (value: Date | string | number): string => new Date(value).toISOString()

/** `iso`, with null kept. */
export const isoOrNull = (value: Date | string | number | null): string | null => (value === null ? null : iso(value))
