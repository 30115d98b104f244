/**
 * Postgres refusing connections: the test holds connections open until the server says "too many
 * clients already", cuts the service's own (so its pools must connect again, and cannot) and takes the
 * freed slots too, for FAULT_MS; then lets them all go.
 */
import pg from "pg"
import { it } from "vitest"
import { POSTGRES_SERVER_AVAILABLE } from "../support/postgresServer.ts"
import { runFault } from "./harness.ts"

const held: Array<pg.Client> = []

/** Opens connections until the server refuses one for having too many. */
const takeEverySlot = async (url: string) => {
  for (;;) {
    const client = new pg.Client({ connectionString: url })
    client.on("error", () => undefined)
    try {
      await client.connect()
    } catch (error) {
      if (/too many clients/.test(String(error))) return
      throw error
    }
    held.push(client)
  }
}

it.skipIf(!POSTGRES_SERVER_AVAILABLE)("Postgres at max_connections under load, a campaign sending", async () => {
  await runFault({
    down: "postgres",
    begin: async ({ postgres }) => {
      await takeEverySlot(postgres.adminUrl)
      const ours = await Promise.all(
        held.map(async (client) => (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number)
      )
      // Until no other client holds a connection: the service reconnects as fast as it can.
      for (let round = 0; round < 50; round++) {
        const { rows } = await held[0]!.query(
          `SELECT count(pg_terminate_backend(pid))::int AS cut FROM pg_stat_activity
           WHERE backend_type = 'client backend' AND NOT (pid = ANY($1::int[]))`,
          [ours]
        )
        await takeEverySlot(postgres.adminUrl)
        if (rows[0].cut === 0) return
        ours.push(
          ...await Promise.all(
            held.slice(ours.length).map(async (client) => (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number)
          )
        )
      }
      throw new Error("the service's connections kept coming back")
    },
    end: async () => {
      await Promise.all(held.splice(0).map((client) => client.end().catch(() => undefined)))
    }
  }, { maxConnections: 60 })
}, 300_000)
