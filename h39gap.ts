// Experiment (not committed): does a push consumer skip deliveries when the node its client is connected to is SIGKILLed?
import { connect, createInbox, nanos } from "@nats-io/transport-node"
import { jetstream, jetstreamManager, AckPolicy, DeliverPolicy } from "@nats-io/jetstream"
import { spawn, type ChildProcess } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { createServer } from "node:net"
const free = () => new Promise<number>((r) => { const s = createServer().listen(0, "127.0.0.1", () => { const p = (s.address() as any).port; s.close(() => r(p)) }) })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const dir = mkdtempSync("/tmp/h39gap-")
const nodes = await Promise.all([1, 2, 3].map(async (i) => ({ name: `n${i}`, port: await free(), cport: await free(), proc: undefined as any as ChildProcess })))
const routes = nodes.map((n) => `nats://127.0.0.1:${n.cport}`).join(",")
const start = (n: typeof nodes[0]) => { n.proc = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(n.port), "-n", n.name, "-js", "-sd", `${dir}/${n.name}`, "--cluster_name", "x", "--cluster", `nats://127.0.0.1:${n.cport}`, "--routes", routes], { stdio: "ignore" }) }
nodes.forEach(start)
await sleep(4000)
const url = (n: typeof nodes[0]) => `nats://127.0.0.1:${n.port}`
const admin = await connect({ servers: nodes.map(url) })
const jsm = await jetstreamManager(admin, { checkAPI: false })
for (;;) { try { await jsm.getAccountInfo(); break } catch { await sleep(300) } }
await jsm.streams.add({ name: "S", subjects: ["s.>"], num_replicas: 3 })
const info = await jsm.streams.info("S")
const leader = nodes.find((n) => n.name === info.cluster!.leader)!
const inbox = createInbox()
await jsm.consumers.add("S", { durable_name: "c", num_replicas: 3, ack_policy: AckPolicy.Explicit, ack_wait: nanos(60_000), max_ack_pending: 20000, deliver_subject: inbox, flow_control: true, idle_heartbeat: nanos(5000), deliver_policy: DeliverPolicy.All })
const mode = process.argv[2] ?? "consumer-leader"
const cleader = (await jsm.consumers.info("S", "c")).cluster!.leader
const victim = nodes.find((n) => n.name === (mode === "stream-leader" ? leader.name : cleader))!
const subNode = nodes.find((n) => n !== victim)!
const sub = await connect({ servers: [url(subNode), ...nodes.filter((n) => n !== subNode).map(url)], noRandomize: true, maxReconnectAttempts: -1, reconnectTimeWait: 200 })
const consumer = await jetstream(sub).consumers.getPushConsumer("S", "c")
const messages = await consumer.consume()
const seen: Array<{ seq: number; dseq: number; redelivered: boolean }> = []
;(async () => { for await (const m of messages) { seen.push({ seq: m.seq, dseq: m.info.deliverySequence, redelivered: m.redelivered }); m.ack() } })()
const pub = await connect({ servers: nodes.map(url) })
const js = jetstream(pub)
let published = 0, running = true
const publisher = (async () => { while (running) { await Promise.all(Array.from({ length: 20 }, () => js.publish("s.a", "x").then(() => published++, () => undefined))) } })()
await sleep(1500)
console.log(`${mode}: killing ${victim.name} (subscriber on ${subNode.name}; stream leader ${leader.name}, consumer leader ${(await jsm.consumers.info("S", "c")).cluster?.leader})`)
victim.proc.kill("SIGKILL")
await sleep(3000)
running = false
await publisher
await sleep(3000)
const last = (await jsm.streams.info("S")).state.last_seq
const got = new Set(seen.map((s) => s.seq))
const missing = [] as number[]
for (let s = 1; s <= last; s++) if (!got.has(s)) missing.push(s)
const gaps = seen.filter((s, i) => i > 0 && s.dseq !== seen[i - 1]!.dseq + 1).map((s, i) => ({ at: s.seq, dseq: s.dseq }))
const maxSeen = Math.max(...seen.map((s) => s.seq))
console.log(JSON.stringify({ published, stored: last, delivered: seen.length, missingBelowHighestDelivered: missing.filter((s) => s < maxSeen).length, firstMissing: missing.slice(0, 5), dseqJumps: gaps.slice(0, 5), pendingOnServer: (await jsm.consumers.info("S", "c")).num_ack_pending }))
nodes.forEach((n) => n.proc.kill("SIGKILL"))
process.exit(0)
