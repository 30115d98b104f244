/** A tiny Postgres helper for tests, on the same client the service uses. */
import { PgClient } from "@effect/sql-pg"
import { Effect, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql"

type Runtime = ManagedRuntime.ManagedRuntime<SqlClient.SqlClient, unknown>
const runtimes = new Map<string, Runtime>()

const runtimeFor = (url: string): Runtime => {
  let runtime = runtimes.get(url)
  if (!runtime) {
    runtime = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 })) as Runtime
    runtimes.set(url, runtime)
  }
  return runtime
}

/** `adminUrl` naming another database; its query (e.g. `?host=/var/run/postgresql`, the Unix socket) kept. */
export const databaseUrlOf = (adminUrl: string, database: string): string => {
  const url = new URL(adminUrl)
  url.pathname = `/${database}`
  return url.toString()
}

export default {
  exec: (url: string, text: string) =>
    runtimeFor(url).runPromise(Effect.flatMap(Effect.service(SqlClient.SqlClient), (sql) => sql.unsafe(text).unprepared)),
  query: <T>(url: string, text: string, params: Array<unknown> = []) =>
    runtimeFor(url).runPromise(
      Effect.flatMap(Effect.service(SqlClient.SqlClient), (sql) => sql.unsafe(text, params))
    ) as Promise<Array<T>>,
  close: async (url: string) => {
    const runtime = runtimes.get(url)
    runtimes.delete(url)
    if (runtime) await runtime.dispose()
  }
}

/** Runs an Effect that needs the SqlClient against `url` (for tests of SQL-building code). */
export const withSql = <A, E>(url: string, effect: Effect.Effect<A, E, SqlClient.SqlClient>): Promise<A> =>
  runtimeFor(url).runPromise(effect)
