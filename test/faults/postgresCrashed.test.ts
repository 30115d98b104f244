import { it } from "vitest"
import { POSTGRES_SERVER_AVAILABLE } from "../support/postgresServer.ts"
import { runFault } from "./harness.ts"

it.skipIf(!POSTGRES_SERVER_AVAILABLE)(
  "Postgres stopped with pg_ctl -m immediate and restarted under load, a campaign sending",
  async () => {
    await runFault({
      down: "postgres",
      begin: ({ postgres }) => postgres.stop("immediate"),
      end: ({ postgres }) => postgres.start()
    })
  },
  300_000
)
