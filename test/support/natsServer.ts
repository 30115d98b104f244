/**
 * A private nats-server for tests that kill it or fill its store: JetStream in a temporary directory, a
 * free loopback port, never the machine's shared server. Clients land in one account (`no_auth_user`)
 * whose JetStream file storage limit the test can lower and raise again while it runs (a config reload):
 * the account's store full, as a full volume looks to its clients, and the volume grown again.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { connect } from "@nats-io/transport-node"
import { freePort, NATS_SERVER } from "./nats.ts"

export interface NatsServer {
  /** nats://127.0.0.1:PORT */
  readonly url: string
  readonly port: number
  /** SIGKILL, and wait until it is gone. */
  kill(): Promise<void>
  /** Starts it again on the same port and store, and waits until it accepts connections. */
  start(): Promise<void>
  /** Sets the account's JetStream file storage limit (bytes, -1 for none) by a config reload. */
  setStoreLimit(bytes: number): Promise<void>
  /** The server's log so far. */
  log(): string
  remove(): Promise<void>
}

const UNLIMITED = -1

export const startNatsServer = async (): Promise<NatsServer> => {
  const dir = mkdtempSync(join(tmpdir(), "mailstream-nats-"))
  const port = await freePort()
  const configFile = join(dir, "nats.conf")
  const logFile = join(dir, "nats.log")
  const writeConfig = (maxFile: number) =>
    writeFileSync(
      configFile,
      [
        `listen: 127.0.0.1:${port}`,
        `jetstream { store_dir: "${join(dir, "store")}" }`,
        `accounts { APP: { jetstream: { max_file: ${maxFile}, max_mem: ${UNLIMITED} }, users: [{ user: app, password: app }] } }`,
        "no_auth_user: app",
        ""
      ].join("\n")
    )
  writeConfig(UNLIMITED)
  let child: ChildProcess | undefined
  const start = async () => {
    const log = openSync(logFile, "a")
    child = spawn(NATS_SERVER!, ["-c", configFile], { stdio: ["ignore", log, log] })
    const deadline = Date.now() + 10_000
    for (;;) {
      try {
        const nc = await connect({ servers: `127.0.0.1:${port}`, reconnect: false })
        await nc.close()
        return
      } catch (error) {
        if (Date.now() > deadline) throw error
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
  }
  const kill = async () => {
    const running = child
    if (!running || running.exitCode !== null || running.signalCode !== null) return
    const exited = new Promise((resolve) => running.once("exit", resolve))
    running.kill("SIGKILL")
    await exited
  }
  await start()
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    kill,
    start,
    async setStoreLimit(bytes) {
      writeConfig(bytes)
      const before = readFileSync(logFile, "utf8").length
      child!.kill("SIGHUP")
      const deadline = Date.now() + 5_000
      while (!readFileSync(logFile, "utf8").slice(before).includes("Reloaded")) {
        if (Date.now() > deadline) throw new Error(`nats-server did not reload:\n${readFileSync(logFile, "utf8").slice(before)}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    },
    log: () => readFileSync(logFile, "utf8"),
    async remove() {
      await kill()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
