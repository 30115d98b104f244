/**
 * Stream retention (actors/StreamPurge.ts): what is applied leaves stream IN, what the event
 * destinations' consumers acked leaves IN and OUT, nothing a reader still needs is purged, and
 * STREAM_MAX_AGE_HOURS is the streams' max_age.
 */
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream"
import { connect, type NatsConnection } from "@nats-io/transport-node"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/nats.ts"
import { createStack, request, type Service, type Stack } from "../support/stack.ts"

const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222"
const HOUR_NANOS = 3600 * 1_000_000_000

describe("stream retention", () => {
  let stack: Stack
  let nc: NatsConnection
  let jsm: JetStreamManager
  const running: Array<Service> = []
  const start = async (role: "api" | "worker", env: Record<string, string> = {}) => {
    const service = await stack.start(role, env)
    running.push(service)
    return service
  }

  beforeAll(async () => {
    stack = await createStack({ RATE_LIMIT_PER_MINUTE: "0", PARTITIONS: "4", LANES_PER_PROJECT: "4", STREAM_PURGE_SECONDS: "0.5" })
    nc = await connect({ servers: NATS_URL })
    jsm = await jetstreamManager(nc)
  })
  afterAll(async () => {
    await Promise.all(running.map((service) => service.stop().catch(() => undefined)))
    await nc?.close()
    await stack?.stop()
  })

  const inStream = () => `${stack.natsPrefix}_IN`
  const outStream = () => `${stack.natsPrefix}_OUT`
  const state = async (stream: string) => (await jsm.streams.info(stream)).state

  /** `count` events over `count / 10` batches of 10 contacts each: one envelope per batch. */
  const burst = (api: Service, key: string, tag: string, count: number) =>
    Promise.all(Array.from({ length: count / 10 }, (_, batch) =>
      request(api.url, "POST", "/v1/track/batch", {
        key,
        body: { events: Array.from({ length: 10 }, (_, n) => ({ email: `${tag}${batch}-${n}@retention.test`, event: tag, data: { n } })) }
      }).then((res) => expect(res.status, res.text).toBe(200))))

  const expectStoredOnce = async (projectId: string, name: string, count: number) =>
    eventually(async () => {
      const [row] = await stack.query<{ n: number; distinct: number }>(
        "SELECT count(*)::int AS n, count(DISTINCT contact_id)::int AS distinct FROM events WHERE project_id = $1 AND name = $2",
        [projectId, name]
      )
      expect(row).toEqual({ n: count, distinct: count })
    }, 60_000)

  it("sets STREAM_MAX_AGE_HOURS as the streams' max_age, and changes it in place on streams that exist", async () => {
    await start("api")
    expect((await jsm.streams.info(inStream())).config.max_age).toBe(168 * HOUR_NANOS)
    const other = await stack.start("api", { STREAM_MAX_AGE_HOURS: "2" })
    for (const stream of [inStream(), outStream()]) expect((await jsm.streams.info(stream)).config.max_age).toBe(2 * HOUR_NANOS)
    await other.stop()
  }, 60_000)

  it("purges what is applied, across a worker SIGKILLed mid-way, and keeps what a lagging reader has not acked", async () => {
    const api = running[0] ?? (await start("api"))
    const project = await stack.createProject("retention")
    // The destinations' consumer of tracked events, made before any worker (the engine adopts it): a
    // message taken from it here and not acked holds its ack floor back.
    const tracked = `${stack.natsPrefix}_destinations_tracked`
    await jsm.consumers.add(inStream(), {
      durable_name: tracked,
      filter_subject: `${stack.natsPrefix}.ingest.*.*.track`,
      ack_policy: AckPolicy.Explicit,
      ack_wait: 60 * 1_000_000_000,
      max_ack_pending: 20_000,
      deliver_policy: DeliverPolicy.New
    })
    await burst(api, project.publicKey, "early", 200)
    const held = await (await jetstream(nc).consumers.get(inStream(), tracked)).next({ expires: 5_000 })
    expect(held).not.toBeNull()
    const before = await state(inStream())
    expect(before.messages).toBeGreaterThanOrEqual(1) // envelopes: one per project per api flush

    const doomed = await start("worker")
    const survivor = await start("worker")
    const late = burst(api, project.publicKey, "late", 400)
    // SIGKILL mid-way: its partitions (and their watermarks) are taken over by the other worker.
    await eventually(async () => {
      const [row] = await stack.query<{ n: number }>("SELECT count(*)::int AS n FROM events WHERE project_id = $1", [project.id])
      expect(row!.n).toBeGreaterThan(50)
    }, 30_000)
    doomed.process.kill("SIGKILL")
    await late
    // Contacts unsubscribed through the api: their `contact.unsubscribed` events go to stream OUT.
    for (let n = 0; n < 5; n++) {
      const res = await request(api.url, "POST", "/contacts", {
        key: project.secretKey,
        body: { email: `early0-${n}@retention.test`, subscribed: false }
      })
      expect(res.status, res.text).toBeLessThan(300)
    }
    await eventually(async () => expect((await state(outStream())).last_seq).toBeGreaterThanOrEqual(5), 30_000)
    await expectStoredOnce(project.id, "early", 200)
    await expectStoredOnce(project.id, "late", 400)

    // Everything applied is purged but the envelopes from the held one on, which the destinations'
    // consumer has not acked: the held one stays.
    await eventually(async () => {
      const lanes = await jsm.streams.info(inStream(), { subjects_filter: `${stack.natsPrefix}.lane.>` })
      expect(lanes.state.subjects ?? {}).toEqual({})
      const all = await state(inStream())
      expect(all.first_seq).toBe(held!.seq)
    }, 30_000)
    expect((await jsm.streams.getMessage(inStream(), { seq: held!.seq }))?.subject).toBe(held!.subject)

    // Acked: stream IN falls to nothing, and OUT to what its destinations' consumer has not acked yet.
    held!.ack()
    await eventually(async () => {
      const all = await state(inStream())
      expect({ messages: all.messages, bytes: all.bytes }).toEqual({ messages: 0, bytes: 0 })
      const out = await state(outStream())
      expect(out.messages).toBe(0)
    }, 60_000)
    expect((await state(inStream())).last_seq).toBeGreaterThan(before.last_seq)
    await expectStoredOnce(project.id, "late", 400)
    expect(survivor.logs.join("\n")).not.toMatch(/stream IN purge failed/)
  }, 150_000)
})
