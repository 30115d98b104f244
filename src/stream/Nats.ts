/** The NATS connection as a scoped service; streams are created idempotently when it starts. */
import { connect, type NatsConnection } from "@nats-io/transport-node"
import {
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  RetentionPolicy,
  StorageType
} from "@nats-io/jetstream"
import { Context, Data, Effect, Layer } from "effect"
import { AppConfig } from "../config.ts"
import { PREFIX_PATTERN } from "../config/serviceVariables.ts"
import { streamNames, type StreamNames } from "./subjects.ts"

export class NatsError extends Data.TaggedError("NatsError")<{ readonly message: string; readonly cause?: unknown }> {}

export class Nats extends Context.Service<Nats, {
  readonly connection: NatsConnection
  readonly js: JetStreamClient
  readonly jsm: JetStreamManager
  readonly names: StreamNames
  readonly prefix: string
  readonly partitions: number
  /** NATS_REPLICAS: of every stream and consumer the service creates. */
  readonly replicas: number
}>()("app/stream/Nats") {
  static readonly layer = Layer.effect(
    Nats,
    Effect.gen(function*() {
      const config = yield* AppConfig
      if (!PREFIX_PATTERN.test(config.natsPrefix)) {
        return yield* new NatsError({ message: `NATS_PREFIX must match ${PREFIX_PATTERN}` })
      }
      const connection = yield* Effect.acquireRelease(
        Effect.tryPromise({
          // noAsyncTraces: the client would otherwise capture a stack trace up front for every request
          // (each JetStream publish: a RequestError for context and an armed TimeoutError), 3 % of the
          // api's CPU under /v1/track load; a failed publish still says what failed.
          try: () => connect({ servers: config.natsUrl.split(","), name: "mailstream", maxReconnectAttempts: -1, noAsyncTraces: true }),
          catch: (cause) => new NatsError({ message: `cannot connect to NATS at ${config.natsUrl}`, cause })
        }),
        (nc) => Effect.promise(() => nc.drain().catch(() => undefined))
      )
      const jsm = yield* Effect.tryPromise({
        try: () => jetstreamManager(connection),
        catch: (cause) => new NatsError({ message: "JetStream is not enabled on the NATS server", cause })
      })
      const names = streamNames(config.natsPrefix)
      const limits = { replicas: config.natsReplicas, maxAgeNanos: hoursToNanos(config.streamMaxAgeHours) }
      yield* ensureStream(jsm, names.inStream, names.inSubjects, limits)
      yield* ensureStream(jsm, names.outStream, names.outSubjects, limits)
      return Nats.of({
        connection,
        js: jetstream(connection),
        jsm,
        names,
        prefix: config.natsPrefix,
        partitions: config.partitions,
        replicas: config.natsReplicas
      })
    })
  )
}

/** STREAM_MAX_AGE_HOURS as JetStream's max_age (nanoseconds; 0: none). */
export const hoursToNanos = (hours: number): number => Math.round(hours * 3600) * 1_000_000_000

/** JetStream's window for dropping a message published twice (by its Nats-Msg-Id); never above max_age. */
const DUPLICATE_WINDOW_NANOS = 2 * 60 * 1_000_000_000
const duplicateWindowOf = (maxAgeNanos: number) => maxAgeNanos > 0 ? Math.min(DUPLICATE_WINDOW_NANOS, maxAgeNanos) : DUPLICATE_WINDOW_NANOS

interface StreamLimits {
  /** NATS_REPLICAS. */
  readonly replicas: number
  /** STREAM_MAX_AGE_HOURS in nanoseconds; 0: none. */
  readonly maxAgeNanos: number
}

/**
 * Creates the stream, or brings an existing one to this configuration: adds the subjects it lacks (a
 * deployment upgraded to lanes), raises its replicas to NATS_REPLICAS (a deployment moved from one
 * node to a cluster: the server copies the stream to the new replicas in place, docs/operations.md "A NATS
 * cluster") and sets its max_age to STREAM_MAX_AGE_HOURS (the safety limit behind the workers' purges,
 * actors/StreamPurge.ts; docs/operations.md "Stream retention").
 */
const ensureStream = (jsm: JetStreamManager, name: string, subjects: ReadonlyArray<string>, limits: StreamLimits) =>
  Effect.tryPromise({
    try: async () => {
      const existing = await jsm.streams.info(name).catch(() => undefined)
      if (existing) {
        const missing = subjects.filter((subject) => !existing.config.subjects?.includes(subject))
        // Raised, never lowered: during a rolling restart to more replicas, a process still on the old
        // setting must not undo it (fewer replicas is an operator's `nats stream edit --replicas`).
        const raise = (existing.config.num_replicas ?? 1) < limits.replicas
        // The age limit is this release's setting, whichever way it moves (a release before it never sets one).
        const reage = (existing.config.max_age ?? 0) !== limits.maxAgeNanos
        if (missing.length > 0 || raise || reage) {
          await jsm.streams.update(name, {
            subjects: [...(existing.config.subjects ?? []), ...missing],
            num_replicas: Math.max(existing.config.num_replicas ?? 1, limits.replicas),
            max_age: limits.maxAgeNanos,
            duplicate_window: duplicateWindowOf(limits.maxAgeNanos)
          })
        }
        return
      }
      await jsm.streams.add({
        name,
        subjects: [...subjects],
        num_replicas: limits.replicas,
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        discard: DiscardPolicy.Old,
        max_age: limits.maxAgeNanos,
        duplicate_window: duplicateWindowOf(limits.maxAgeNanos)
      }).catch(async (error) => {
        // Another process created it between our check and our add.
        if (!(await jsm.streams.info(name).catch(() => undefined))) throw error
      })
    },
    catch: (cause) => new NatsError({ message: `cannot create stream ${name}`, cause })
  })
