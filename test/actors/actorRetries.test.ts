import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { ConnectionError, SqlError } from "effect/sql/SqlError"
import { describe, expect, it } from "vitest"
import { withRetry } from "../../src/actors/actorRetries.ts"

const connectionLost = () =>
  new SqlError({ reason: new ConnectionError({ cause: new Error("Connection closed"), message: "PgConnection: Connection closed" }) })
/** The transactions here never touch Postgres. */
const unused = {} as SqlClient.SqlClient
const actor = { lane: 1, run: { stopped: false } }

describe("an actor transaction's retries", () => {
  it("retries a defect that is Postgres away (a connection lost mid-batch) until it passes, never poison", async () => {
    let attempts = 0
    const outcome = await Effect.runPromise(
      withRetry(
        "p",
        actor,
        Effect.suspend(() => ++attempts < 4 ? Effect.die(connectionLost()) : Effect.void) as Effect.Effect<
          void,
          { readonly _tag: "X" },
          SqlClient.SqlClient
        >
      ).pipe(Effect.provideService(SqlClient.SqlClient, unused))
    )
    expect(outcome).toEqual({ _tag: "ok" })
    expect(attempts).toBe(4)
  })

  it("reports any other defect as poison at once", async () => {
    let attempts = 0
    const outcome = await Effect.runPromise(
      withRetry(
        "p",
        actor,
        Effect.suspend(() => {
          attempts++
          return Effect.die(new Error("a bug"))
        }) as Effect.Effect<void, { readonly _tag: "X" }, SqlClient.SqlClient>
      ).pipe(Effect.provideService(SqlClient.SqlClient, unused))
    )
    expect(outcome).toMatchObject({ _tag: "poison" })
    expect(attempts).toBe(1)
  })
})
