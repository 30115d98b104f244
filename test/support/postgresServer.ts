/**
 * A private Postgres server for tests that stop or crash it: a fresh cluster (`initdb`) in a temporary
 * directory, listening on a free loopback port, never the machine's shared server. Run as the
 * `postgres` user when the tests run as root (Postgres refuses to run as root).
 */
import { execFile } from "node:child_process"
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { freePort } from "./nats.ts"

const run = promisify(execFile)

const BIN_DIRS = ["/usr/local/bin", "/usr/bin", "/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin"]
const binDir = BIN_DIRS.find((dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl")))

/** Whether this machine can run a private server (initdb and pg_ctl installed). */
export const POSTGRES_SERVER_AVAILABLE = binDir !== undefined

const asRoot = process.getuid?.() === 0

/** Runs a Postgres binary, as the `postgres` user when we are root. */
const pgCommand = async (binary: string, args: ReadonlyArray<string>) => {
  const path = join(binDir!, binary)
  return asRoot ? run("runuser", ["-u", "postgres", "--", path, ...args]) : run(path, [...args])
}

const ownerIds = async () => {
  const [uid, gid] = await Promise.all([run("id", ["-u", "postgres"]), run("id", ["-g", "postgres"])])
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) }
}

export interface PostgresServer {
  /** postgres://postgres@127.0.0.1:PORT/postgres (trust authentication). */
  readonly adminUrl: string
  readonly port: number
  /** `pg_ctl stop -m <mode>`: `immediate` is a crash (no checkpoint, connections cut). */
  stop(mode?: "immediate" | "fast"): Promise<void>
  /** Starts it again (after an immediate stop, with crash recovery) and waits until it accepts connections. */
  start(): Promise<void>
  /** Stops it and removes its files. */
  remove(): Promise<void>
}

/** `maxConnections`: the server's connection limit (200 unless a test wants to reach it). */
export const startPostgresServer = async (options: { readonly maxConnections?: number } = {}): Promise<PostgresServer> => {
  const dir = mkdtempSync(join(tmpdir(), "mailstream-pg-"))
  if (asRoot) {
    const { uid, gid } = await ownerIds()
    chownSync(dir, uid, gid)
  }
  const data = join(dir, "data")
  const port = await freePort()
  await pgCommand("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"])
  // A throwaway cluster: no fsync (the machine does not crash in these tests, only Postgres), but every
  // commit in the WAL before it is acknowledged (synchronous_commit stays on), so a crash of Postgres
  // loses nothing it said was committed, as on a real deployment.
  const settings = [
    `port = ${port}`,
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${dir}'`,
    `max_connections = ${options.maxConnections ?? 200}`,
    "fsync = off",
    "full_page_writes = off"
  ]
  writeFileSync(join(data, "postgresql.auto.conf"), `${settings.join("\n")}\n`)
  if (asRoot) {
    const { uid, gid } = await ownerIds()
    chownSync(join(data, "postgresql.auto.conf"), uid, gid)
  }
  const start = async () => {
    await pgCommand("pg_ctl", ["-D", data, "-l", join(dir, "server.log"), "-w", "-t", "30", "start"])
  }
  const stop = async (mode: "immediate" | "fast" = "fast") => {
    await pgCommand("pg_ctl", ["-D", data, "-m", mode, "-w", "stop"])
  }
  await start()
  return {
    adminUrl: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    stop,
    async remove() {
      await stop("immediate").catch(() => undefined)
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
