/**
 * A three-node JetStream cluster (private nats-servers clustered on loopback, NATS_REPLICAS=3) under
 * /v1/track load, the api and two workers connected to all three: the node leading stream IN is
 * SIGKILLed, brought back, then the node leading it next, likewise. No process of ours is restarted.
 * Every event the api accepted (2xx) is stored exactly once, each contact's in the order sent.
 */
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream"
import { connect, nanos, type NatsConnection } from "@nats-io/transport-node"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { streamNames } from "../../src/stream/subjects.ts"
import { eventually, freePort, NATS_SERVER } from "../support/nats.ts"
import { createStack, type Service, type Stack, type TestProject } from "../support/stack.ts"

const CONTACTS = 40
const t0 = Date.now()
const mark = (what: string) => console.info(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Node {
  readonly name: string
  readonly port: number
  readonly clusterPort: number
  process: ChildProcess
}

/** Every cluster started, stopped after the file even when a test timed out before its own `finally` ran. */
const liveClusters = new Set<{ readonly nodes: ReadonlyArray<Node>; readonly stop: () => Promise<unknown> }>()
afterAll(() => Promise.all([...liveClusters].map((cluster) => cluster.stop())))
// And if the test process itself ends first: the nats-servers are not reaped with it.
process.once("exit", () => {
  for (const cluster of liveClusters) for (const node of cluster.nodes) node.process?.kill("SIGKILL")
})

/** Three nats-servers routed to each other, JetStream on, each with its own store under `dir`. */
const startCluster = async (dir: string) => {
  const nodes: Array<Node> = []
  for (let i = 1; i <= 3; i++) {
    nodes.push({ name: `n${i}`, port: await freePort(), clusterPort: await freePort(), process: undefined as unknown as ChildProcess })
  }
  const routes = nodes.map((node) => `nats://127.0.0.1:${node.clusterPort}`).join(",")
  let stopped = false
  const start = (node: Node) => {
    // A test that timed out may still try to bring a node back after the cleanup stopped the cluster.
    if (stopped) return
    node.process = spawn(NATS_SERVER!, [
      "-a",
      "127.0.0.1",
      "-p",
      String(node.port),
      "-n",
      node.name,
      "-js",
      "-sd",
      join(dir, node.name),
      "--cluster_name",
      "mailstream-test",
      "--cluster",
      `nats://127.0.0.1:${node.clusterPort}`,
      "--routes",
      routes
    ], { stdio: "ignore" })
  }
  nodes.forEach(start)
  const kill = async (node: Node) => {
    if (node.process.exitCode !== null || node.process.signalCode !== null) return
    const exited = new Promise((resolve) => node.process.once("exit", resolve))
    node.process.kill("SIGKILL")
    await exited
  }
  const url = nodes.map((node) => `nats://127.0.0.1:${node.port}`).join(",")
  const cluster = {
    nodes,
    url,
    start,
    kill,
    stop: () => {
      stopped = true
      return Promise.all(nodes.map(kill))
    }
  }
  liveClusters.add(cluster)
  return cluster
}

interface Attempt {
  readonly contact: number
  readonly seq: number
  readonly marker: string
  readonly sentAt: number
  readonly at: number
  readonly status: number
}

/** One contact's events, one after the other; an event not accepted is sent again (a new marker) until it is. */
const load = async (api: Service, project: TestProject, contact: number, running: () => boolean, attempts: Array<Attempt>) => {
  for (let seq = 1; running(); seq++) {
    for (let attempt = 0;; attempt++) {
      const marker = `c${contact}-${seq}-${attempt}`
      const sentAt = Date.now()
      let status: number
      try {
        const response = await fetch(`${api.url}/v1/track`, {
          method: "POST",
          headers: { authorization: `Bearer ${project.publicKey}`, "content-type": "application/json" },
          body: JSON.stringify({ email: `c${contact}@cluster.test`, event: "step", data: { seq, m: marker } }),
          signal: AbortSignal.timeout(15_000)
        })
        status = response.status
        await response.arrayBuffer()
      } catch {
        status = 0
      }
      attempts.push({ contact, seq, marker, sentAt, at: Date.now(), status })
      if (status >= 200 && status < 300) break
      await sleep(100)
    }
  }
}

const streamLeader = async (jsm: JetStreamManager, stream: string) =>
  eventually(async () => {
    const leader = (await jsm.streams.info(stream)).cluster?.leader
    expect(leader).toBeTruthy()
    return leader!
  }, 20_000)

/** Where in the stream the messages carrying these markers are (diagnostics of a failure). */
const whereInStream = async (nc: NatsConnection, stream: string, markers: ReadonlyArray<string>) => {
  const consumer = await jetstream(nc).consumers.get(stream)
  const found: Array<{ seq: number; subject: string; marker: string; redelivered: boolean }> = []
  const last = (await (await jetstreamManager(nc)).streams.info(stream)).state.last_seq
  for (;;) {
    const message = await consumer.next({ expires: 2_000 })
    if (!message) break
    const text = message.string()
    for (const marker of markers) {
      if (text.includes(`"${marker}"`)) found.push({ seq: message.seq, subject: message.subject, marker, redelivered: message.redelivered })
    }
    if (message.seq >= last) break
  }
  return found
}

describe("a three-node JetStream cluster under /v1/track load", () => {
  it.skipIf(!NATS_SERVER)("the node leading the streams killed twice: every accepted event stored once, in order", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mailstream-cluster-"))
    const cluster = await startCluster(dir)
    let stack: Stack | undefined
    const services: Array<[string, Service]> = []
    let nc: NatsConnection | undefined
    try {
      nc = await eventually(() => connect({ servers: cluster.url.split(","), maxReconnectAttempts: -1 }), 10_000)
      const jsm = await jetstreamManager(nc, { checkAPI: false })
      // JetStream's meta group has a leader.
      await eventually(() => jsm.getAccountInfo(), 20_000)
      mark("JetStream up")
      // 8 partitions, not 32: each is three R3 consumers to create, slow on a loaded machine.
      stack = await createStack({
        NATS_URL: cluster.url,
        NATS_REPLICAS: "3",
        RATE_LIMIT_PER_MINUTE: "0",
        PARTITIONS: process.env.CLUSTER_TEST_PARTITIONS ?? "8"
      })
      const names = streamNames(stack.natsPrefix)
      const inStream = names.inStream
      // A deployment moved from one node: its streams exist with one replica; the api raises them to NATS_REPLICAS.
      for (const [name, subjects] of [[names.inStream, names.inSubjects], [names.outStream, names.outSubjects]] as const) {
        await jsm.streams.add({ name, subjects: [...subjects], num_replicas: 1, duplicate_window: nanos(120_000) })
      }
      mark("stack")
      const api = await stack.start("api")
      mark("api")
      const workers = await Promise.all([stack.start("worker"), stack.start("worker")])
      services.push(["api", api], ["worker-1", workers[0]!], ["worker-2", workers[1]!])
      const project = await stack.createProject()
      mark("cluster and service up")
      for (const stream of [names.inStream, names.outStream]) expect((await jsm.streams.info(stream)).config.num_replicas).toBe(3)

      const attempts: Array<Attempt> = []
      let running = true
      const loads = Array.from({ length: CONTACTS }, (_, contact) => load(api, project, contact, () => running, attempts))
      const recoveries: Array<{ killed: string; firstAcceptedAfterMs: number; newLeader: string }> = []
      await sleep(2_000)
      for (let round = 0; round < 2; round++) {
        const leader = await streamLeader(jsm, inStream)
        const node = cluster.nodes.find((node) => node.name === leader)!
        mark(`killing ${leader}`)
        const killedAt = Date.now()
        await cluster.kill(node)
        const accepted = await eventually(async () => {
          const first = attempts.find((attempt) => attempt.sentAt > killedAt && attempt.status === 200)
          expect(first).toBeDefined()
          return first!
        }, 20_000)
        const newLeader = await streamLeader(jsm, inStream)
        recoveries.push({ killed: leader, firstAcceptedAfterMs: accepted.at - killedAt, newLeader })
        await sleep(1_000)
        mark(`accepting again; restarting ${leader}`)
        cluster.start(node)
        // Back in the stream's group and caught up before the next kill.
        await eventually(async () => {
          const state = await jsm.streams.info(inStream)
          const replica = state.cluster?.replicas?.find((replica) => replica.name === node.name)
          expect(replica?.current).toBe(true)
        }, 20_000)
        mark(`${leader} current`)
        await sleep(1_500)
      }
      running = false
      await Promise.all(loads)

      const accepted = attempts.filter((attempt) => attempt.status >= 200 && attempt.status < 300)
      const started = Date.now()
      const counts = async () =>
        new Map((await stack!.query<{ m: string; n: number }>(
          "SELECT data->>'m' AS m, count(*)::int AS n FROM events WHERE project_id = $1 AND name = 'step' GROUP BY 1",
          [project.id]
        )).map((row) => [row.m, row.n]))
      let stored = new Map<string, number>()
      const missing = () => accepted.filter((attempt) => stored.get(attempt.marker) !== 1)
      await eventually(async () => {
        stored = await counts()
        expect(missing().length).toBe(0)
      }, 30_000).catch(() => undefined)
      mark("stored")
      const summary = {
        accepted: accepted.length,
        refused: attempts.length - accepted.length,
        refusedStored: attempts.filter((attempt) => attempt.status !== 200 && stored.has(attempt.marker)).length,
        recoveries,
        allStoredAfterMs: Date.now() - started
      }
      console.info(`cluster: ${JSON.stringify(summary)}`)
      const restarts = workers.flatMap((worker) => worker.logs.filter((line) => line.includes("partition consumer stopped")))
      console.info(`consumers restarted: ${restarts.length}\n${restarts.map((line) => line.slice(0, 600)).join("\n")}`)
      if (missing().length > 0) {
        console.info(
          `missing events found in stream IN: ${
            JSON.stringify(
              await whereInStream(
                nc,
                inStream,
                missing().map((attempt) => attempt.marker)
              )
            )
          }`
        )
        console.info(
          `partition state: ${JSON.stringify(await stack.query("SELECT partition, lane_seq::int, ingest_seq::int FROM partition_state"))}`
        )
        for (const [index, worker] of workers.entries()) {
          console.info(`worker ${index}:\n${worker.logs.filter((line) => !line.includes('"level":"INFO"')).slice(-40).join("\n")}`)
        }
      }
      expect(missing().map((attempt) => `${attempt.marker}: ${stored.get(attempt.marker) ?? 0}`), JSON.stringify(summary)).toEqual([])
      expect(accepted.length).toBeGreaterThan(CONTACTS * 5)

      // Each contact's accepted events in the order sent, its data from the last.
      for (let contact = 0; contact < CONTACTS; contact++) {
        const rows = await stack.query<{ seq: number; m: string }>(
          `SELECT (e.data->>'seq')::int AS seq, e.data->>'m' AS m FROM events e JOIN contacts c ON c.id = e.contact_id
           WHERE e.project_id = $1 AND c.email = $2 AND e.name = 'step' ORDER BY e.created_at, e.id`,
          [project.id, `c${contact}@cluster.test`]
        )
        const acceptedMarkers = new Set(accepted.filter((attempt) => attempt.contact === contact).map((attempt) => attempt.marker))
        const seqs = rows.filter((row) => acceptedMarkers.has(row.m)).map((row) => row.seq)
        expect(seqs).toEqual(seqs.map((_, index) => index + 1))
        const [data] = await stack.query<{ seq: number }>(
          "SELECT (data->>'seq')::int AS seq FROM contacts WHERE project_id = $1 AND email = $2",
          [project.id, `c${contact}@cluster.test`]
        )
        expect(data!.seq).toBe(Math.max(...rows.map((row) => row.seq)))
      }
      mark("checked")
    } finally {
      // CLUSTER_TEST_LOGS=<dir>: every process's log lines there, to look into a failure.
      if (process.env.CLUSTER_TEST_LOGS) {
        await mkdir(process.env.CLUSTER_TEST_LOGS, { recursive: true })
        for (const [name, service] of services) await writeFile(join(process.env.CLUSTER_TEST_LOGS, `${name}.log`), service.logs.join("\n"))
      }
      await stack?.stop().catch(() => undefined)
      await nc?.close().catch(() => undefined)
      await cluster.stop()
      await rm(dir, { recursive: true, force: true })
    }
  }, 120_000)
})
