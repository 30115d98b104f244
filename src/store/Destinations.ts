/**
 * Event destinations and their delivery log (migration 0028). The api reads and changes destinations
 * through it; the worker's delivery engine (src/destinations) records deliveries, claims due ones per
 * destination and settles their attempts. Every API-facing query is scoped to the caller's project.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { InvalidCursor } from "../domain/errors.ts"
import { deliveryQueue } from "./deliveryQueue.ts"
import { deliveryId, type Recorded } from "./deliveryRecording.ts"
import { destinationRecords } from "./destinationRecords.ts"
import type {
  ActiveDestination,
  AttemptOutcome,
  ClaimedDelivery,
  DeliveryStatus,
  DeliveryView,
  DestinationInput,
  DestinationView,
  NewDelivery
} from "./destinationTypes.ts"
import type { PersistenceError } from "./PersistenceError.ts"

export { deliveryId, type Recorded }
export type * from "./destinationTypes.ts"

export class Destinations extends Context.Service<Destinations, {
  readonly create: (
    projectId: string,
    input: DestinationInput
  ) => Effect.Effect<DestinationView & { readonly secret: string }, PersistenceError>
  readonly list: (projectId: string) => Effect.Effect<ReadonlyArray<DestinationView>, PersistenceError>
  readonly get: (projectId: string, id: string) => Effect.Effect<DestinationView | undefined, PersistenceError>
  readonly update: (
    projectId: string,
    id: string,
    patch: Partial<DestinationInput>
  ) => Effect.Effect<DestinationView | undefined, PersistenceError>
  readonly remove: (projectId: string, id: string) => Effect.Effect<boolean, PersistenceError>
  readonly rotateSecret: (
    projectId: string,
    id: string,
    overlapSeconds: number
  ) => Effect.Effect<(DestinationView & { readonly secret: string }) | undefined, PersistenceError>
  readonly deliveries: (projectId: string, id: string, query: {
    readonly limit: number
    readonly cursor: string | undefined
    readonly status: DeliveryStatus | undefined
  }) => Effect.Effect<
    { readonly data: ReadonlyArray<DeliveryView>; readonly cursor: string | null; readonly hasMore: boolean } | undefined,
    InvalidCursor | PersistenceError
  >
  readonly delivery: (projectId: string, destinationId: string, id: string) => Effect.Effect<DeliveryView | undefined, PersistenceError>
  /** Puts deliveries back to pending (a new retry period from now); answers those it found. */
  readonly replay: (
    projectId: string,
    destinationId: string,
    which: { readonly id: string } | { readonly from: Date; readonly to: Date },
    retryUntil: Date
  ) => Effect.Effect<ReadonlyArray<DeliveryView> | undefined, PersistenceError>

  // The engine's side.
  readonly active: (projectId: string) => Effect.Effect<ReadonlyArray<ActiveDestination>, PersistenceError>
  /** The enabled destinations of each of these projects (one query). */
  readonly activeIn: (
    projectIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyMap<string, ReadonlyArray<ActiveDestination>>, PersistenceError>
  /** Records deliveries (a repeat of one already recorded is ignored); answers the destinations that got new ones. */
  readonly record: (deliveries: ReadonlyArray<NewDelivery>, retryUntil: Date) => Effect.Effect<ReadonlyArray<string>, PersistenceError>
  /** Records deliveries, and claims for the caller, for `leaseMs`, up to `rooms[destination]` of each destination's ready ones. */
  readonly recordAndClaim: (
    deliveries: ReadonlyArray<NewDelivery>,
    retryUntil: Date,
    rooms: ReadonlyMap<string, number>,
    leaseMs: number
  ) => Effect.Effect<Recorded, PersistenceError>
  /** Claims up to `room` due deliveries of an enabled destination, each a contact's earliest open one, for `leaseMs`. */
  readonly claim: (destinationId: string, room: number, leaseMs: number) => Effect.Effect<ReadonlyArray<ClaimedDelivery>, PersistenceError>
  /** Records an attempt's outcome; answers whether this failure disabled the destination. */
  readonly settle: (delivery: ClaimedDelivery, outcome: AttemptOutcome, disableAfter: number) => Effect.Effect<boolean, PersistenceError>
  /** Records the outcomes of one destination's attempts, in the order they ended, in one statement; answers whether they disabled it. */
  readonly settleMany: (
    destinationId: string,
    settled: ReadonlyArray<{ readonly delivery: ClaimedDelivery; readonly outcome: AttemptOutcome }>,
    disableAfter: number
  ) => Effect.Effect<boolean, PersistenceError>
  /** Enabled destinations with deliveries due now (not in flight). */
  readonly due: Effect.Effect<ReadonlyArray<string>, PersistenceError>
  /** Milliseconds until the next delivery is due (≤ 0: now), undefined when none is open. */
  readonly nextDueIn: Effect.Effect<number | undefined, PersistenceError>
  /** Deletes up to `limit` finished deliveries created more than `days` days ago; answers how many. */
  readonly prune: (days: number, limit: number) => Effect.Effect<number, PersistenceError>
  /** A test event's delivery, recorded already claimed. */
  readonly recordTest: (
    projectId: string,
    destinationId: string,
    eventId: string,
    body: string,
    eventAt: string
  ) => Effect.Effect<ClaimedDelivery | undefined, PersistenceError>
}>()("app/store/Destinations") {
  static readonly layer = Layer.effect(
    Destinations,
    Effect.map(Effect.service(SqlClient.SqlClient), (sql) => Destinations.of({ ...destinationRecords(sql), ...deliveryQueue(sql) }))
  )
}
