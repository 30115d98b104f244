/** Reads what the service published to JetStream. */
import { jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { existsSync } from "node:fs"
import { createServer } from "node:net"
import { laneSubject as subjectOfLane, makeLanes } from "../../src/stream/lanes.ts"

const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222"

export interface StoredMessage {
  readonly subject: string
  readonly seq: number
  readonly msgId: string | undefined
  readonly data: any
}

/** Every message currently in a stream whose subject matches `filter` (default: all). */
export const readStream = async (stream: string, filter?: string): Promise<Array<StoredMessage>> => {
  const nc = await connect({ servers: NATS_URL })
  try {
    const jsm = await jetstreamManager(nc)
    const info = await jsm.streams.info(stream)
    const out: Array<StoredMessage> = []
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const message = await jsm.streams.getMessage(stream, { seq }).catch(() => null)
      if (!message) continue
      if (filter && !matches(filter, message.subject)) continue
      out.push({ subject: message.subject, seq, msgId: message.header?.get("Nats-Msg-Id") || undefined, data: message.json() })
    }
    return out
  } finally {
    await nc.close()
  }
}

const matches = (filter: string, subject: string) => {
  const f = filter.split(".")
  const s = subject.split(".")
  for (let i = 0; i < f.length; i++) {
    if (f[i] === ">") return true
    if (f[i] !== "*" && f[i] !== s[i]) return false
  }
  return f.length === s.length
}

/** Polls until `check` passes or the time is up. */
export const eventually = async <A>(check: () => Promise<A>, timeoutMs = 10_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  let lastError: unknown
  while (Date.now() < deadline) {
    try {
      return await check()
    } catch (error) {
      lastError = error
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  throw lastError
}

// The deployment's lanes as the test stacks run them (LANES_PER_PROJECT 16, PARTITIONS 32 by default).
const testLanes = makeLanes(16, 32)

/** The stream IN subject of a contact's lane (or of the owner lane, lane 0, without a contact). */
export const laneSubject = (prefix: string, projectId: string, contactId: string | undefined, kind: string) =>
  subjectOfLane(prefix, testLanes, projectId, contactId === undefined ? 0 : testLanes.laneOf(contactId), kind)

/** The partition of a project's owner lane: where its sender and campaigns run. */
export const ownerPartition = (projectId: string) => testLanes.partitionOf(projectId, 0)

/** The nats-server binary, for tests that run a private server they can stop (undefined: not installed). */
export const NATS_SERVER = ["/usr/sbin/nats-server", "/usr/bin/nats-server"].find(existsSync)

/** A TCP port free on loopback right now. */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })
