/** The engine's lanes in SQL: which contacts a lane owns (by the last byte of their id, as stream/lanes.ts). */
import type { SqlClient } from "effect/sql"

/** SQL: the contact id `column` is in `lane` of `count` lanes (always true without a lane: messages published before lanes). */
export const contactInLane = (sql: SqlClient.SqlClient, column: string, lane: number | undefined, count: number) =>
  lane === undefined
    ? sql`true`
    : sql`(get_byte(uuid_send(${sql.literal(column)}), 15) % ${sql.literal(String(count))}) = ${lane}`
