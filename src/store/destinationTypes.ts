/** The shapes of event destinations and their deliveries, as the api and the delivery engine see them (store/Destinations.ts). */

export const DELIVERY_STATUSES = ["pending", "succeeded", "failed", "parked"] as const
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number]

export interface DestinationView {
  readonly id: string
  readonly url: string
  readonly description: string | null
  readonly events: ReadonlyArray<string>
  readonly enabled: boolean
  readonly disabledAt: string | null
  readonly disabledReason: string | null
  readonly consecutiveFailures: number
  readonly secretRotatedAt: string | null
  readonly previousSecretExpiresAt: string | null
  readonly stats: {
    readonly pending: number
    readonly succeeded: number
    readonly failed: number
    readonly parked: number
    readonly lastSuccessAt: string | null
    readonly lastFailureAt: string | null
  }
  readonly createdAt: string
  readonly updatedAt: string
}

export interface DeliveryView {
  readonly id: string
  readonly destinationId: string
  readonly eventId: string
  readonly eventType: string
  readonly contactId: string | null
  readonly status: DeliveryStatus
  readonly attempts: number
  readonly lastStatusCode: number | null
  readonly latencyMs: number | null
  readonly responseExcerpt: string | null
  readonly error: string | null
  readonly nextAttemptAt: string | null
  readonly replays: number
  readonly createdAt: string
  readonly updatedAt: string
}

/** What the engine matches events against: a project's enabled destinations. */
export interface ActiveDestination {
  readonly id: string
  readonly projectId: string
  readonly events: ReadonlyArray<string>
}

/** A delivery the engine is about to attempt, with what it signs and sends. */
export interface ClaimedDelivery {
  readonly id: string
  readonly destinationId: string
  readonly contactId: string | null
  readonly url: string
  readonly secrets: ReadonlyArray<string>
  readonly body: string
  readonly eventAt: Date
  readonly attempts: number
  readonly retryUntil: Date
  readonly test: boolean
}

export interface NewDelivery {
  readonly destinationId: string
  readonly projectId: string
  readonly eventId: string
  readonly eventType: string
  readonly contactId: string | null
  readonly body: string
  readonly eventAt: string
}

export interface AttemptOutcome {
  readonly ok: boolean
  /** No more attempts (a refused address, the retry period over, a test event): parked when not ok. */
  readonly final: boolean
  readonly statusCode: number | null
  readonly latencyMs: number
  readonly excerpt: string | null
  readonly error: string | null
  readonly nextAttemptAt: Date | null
}

export interface DestinationInput {
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly description?: string | null | undefined
  readonly enabled?: boolean | undefined
}
