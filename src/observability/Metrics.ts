/**
 * The process's metrics on prom-client, rendered in the Prometheus text format at /metrics: counters,
 * gauges and histograms, plus Node's own (CPU, memory, event-loop lag, GC) from collectDefaultMetrics.
 * Call sites use a small facade (`inc(value, labels)`, `set(value, labels)`, `observe(value, labels)`,
 * `remove(labels)`) whose label names are declared with the metric, so a label typo fails to compile.
 */
import {
  AggregatorRegistry,
  collectDefaultMetrics,
  Counter,
  Gauge,
  Histogram,
  type MetricObjectWithValues,
  type MetricValue,
  Registry
} from "prom-client"

/** A metric's labels; a metric declared without label names takes none (passing some fails to compile). */
type Labels<L extends string> = [L] extends [never] ? never : Readonly<Record<L, string | number>>

export const registry = new Registry()

// The event-loop delay sampler wakes the process every `precision` ms: at prom-client's 10 ms that alone
// is ~0.6 % of a core on an idle process; 100 ms costs next to nothing and still catches real stalls.
collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 })

export const counter = <L extends string = never>(name: string, help: string, labelNames: ReadonlyArray<L> = []) => {
  const metric = new Counter<L>({ name, help, labelNames, registers: [registry] })
  return {
    inc: (value = 1, labels?: Labels<L>) => (labels ? metric.inc(labels, value) : metric.inc(value))
  }
}

export const gauge = <L extends string = never>(name: string, help: string, labelNames: ReadonlyArray<L> = []) => {
  const metric = new Gauge<L>({ name, help, labelNames, registers: [registry] })
  return {
    set: (value: number, labels?: Labels<L>) => (labels ? metric.set(labels, value) : metric.set(value)),
    remove: (labels: Labels<L>) => metric.remove(labels)
  }
}

/** Buckets in seconds for durations from a millisecond to ten seconds. */
export const secondsBuckets: ReadonlyArray<number> = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

export const histogram = <L extends string = never>(
  name: string,
  help: string,
  buckets: ReadonlyArray<number>,
  labelNames: ReadonlyArray<L> = []
) => {
  const metric = new Histogram<L>({ name, help, buckets: [...buckets], labelNames, registers: [registry] })
  return {
    observe: (value: number, labels?: Labels<L>) => (labels ? metric.observe(labels, value) : metric.observe(value))
  }
}

/** Count and sum (as before), now with buckets too: a histogram of durations in seconds. */
export const summary = <L extends string = never>(name: string, help: string, labelNames: ReadonlyArray<L> = []) =>
  histogram(name, help, secondsBuckets, labelNames)

export const metricsContentType = registry.contentType

/** One process's metrics (prom-client's JSON form), handed to the processes it runs beside under `all`. */
export type MetricsSnapshot = ReadonlyArray<MetricObjectWithValues<MetricValue<string>>>

export const snapshot = (): Promise<MetricsSnapshot> => registry.getMetricsAsJSON()

const OWN_PREFIX = "mailstream_"

/**
 * This process's own metrics (`mailstream_*`) alone, as in `snapshot`: Node's process figures are not
 * collected (their collectors read /proc and V8's heap statistics), so an idle process can look often.
 */
export const ownSnapshot = (): Promise<MetricsSnapshot> =>
  Promise.all(
    registry.getMetricsAsArray().flatMap(({ name }) => {
      const metric = name.startsWith(OWN_PREFIX) ? registry.getSingleMetric(name) : undefined
      return metric === undefined ? [] : [metric.get()]
    })
  )

/** The latest snapshot of each sibling process; summed into this process's /metrics. */
const peers = new Map<string, MetricsSnapshot>()

export const setPeerSnapshot = (peer: string, values: MetricsSnapshot | undefined) => {
  if (values === undefined) peers.delete(peer)
  else peers.set(peer, values)
}

/** The whole registry in the Prometheus text format, with the sibling processes' values aggregated in. */
export const renderPrometheus = async (): Promise<string> => {
  if (peers.size === 0) return registry.metrics()
  const all = [await registry.getMetricsAsJSON(), ...peers.values()] as Array<Array<MetricObjectWithValues<MetricValue<string>>>>
  return AggregatorRegistry.aggregate(all).metrics()
}

// The worker's metrics, in one place so /metrics documents itself.
export const WorkerMetrics = {
  eventsApplied: counter("mailstream_events_applied_total", "Events stored by project actors"),
  messagesApplied: counter("mailstream_messages_applied_total", "Stream messages applied by project actors"),
  messagesSkipped: counter("mailstream_messages_skipped_total", "Redelivered stream messages skipped (already applied)"),
  emitted: counter("mailstream_events_emitted_total", "Events emitted into the outbox (contact.subscribed, ...)"),
  publishedByActors: counter(
    "mailstream_outbox_published_by_actors_total",
    "Outbox rows a lane actor published itself after its batch's commit, not through the relay"
  ),
  batchSize: histogram("mailstream_actor_batch_size", "Messages per actor transaction", [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]),
  batchSeconds: histogram("mailstream_actor_batch_seconds", "Duration of actor transactions", secondsBuckets),
  batchFailures: counter("mailstream_actor_batch_failures_total", "Actor transactions that failed and were retried"),
  factsKept: counter(
    "mailstream_actor_facts_total",
    "Contacts of combined turns whose segment facts were kept from an earlier turn (kept) or read from Postgres (read)",
    ["source"]
  ),
  turnLanes: histogram("mailstream_actor_turn_lanes", "Lane batches a project's turn applies in one transaction", [1, 2, 4, 8, 16, 32, 64]),
  readAhead: counter(
    "mailstream_actor_read_ahead_total",
    "Batches started while the batch before them committed: committed, or abandoned (rolled back and applied again) because that one did not",
    ["outcome"]
  ),
  deliveryGaps: counter(
    "mailstream_partition_delivery_gaps_total",
    "Partition consumers recreated at their watermark because a delivery was skipped (a NATS node lost mid-delivery, a consumer leader change)"
  ),
  streamPurged: counter(
    "mailstream_stream_purged_messages_total",
    "Messages a worker purged from streams IN and OUT once applied and acked by every durable reader (actors/StreamPurge.ts)",
    ["stream"]
  ),
  deadLettered: counter("mailstream_messages_dead_lettered_total", "Stream messages set aside in dead_letters after failing on their own"),
  actorsAlive: gauge("mailstream_actors_alive", "Project actors currently alive in this process"),
  partitionsOwned: gauge("mailstream_partitions_owned", "Partitions leased by this process"),
  partitionsAcquired: counter(
    "mailstream_partitions_acquired_total",
    "Partition leases taken by this process (at start, on a takeover or a rebalance); a steady rise with no worker joining or leaving is lease churn"
  ),
  partitionLag: gauge("mailstream_partition_lag", "Messages in the partition not yet applied (stream last seq minus watermark)", [
    "partition"
  ]),
  partitionWatermark: gauge("mailstream_partition_watermark", "Highest stream sequence of the partition applied contiguously", [
    "partition"
  ])
} as const

// The api's metrics: one histogram observed by the gateway (or /v1/track's fast path) for every request.
export const HttpMetrics = {
  trackShed: counter(
    "mailstream_http_track_shed_total",
    "/v1/track requests answered 503 at once because TRACK_MAX_IN_FLIGHT requests were already in flight (load shedding)"
  ),
  trackFastPath: counter(
    "mailstream_http_track_fast_path_total",
    "POST /v1/track and /events/track requests answered by the fast path rather than the router (src/http/trackFastPath.ts)"
  ),
  liveStreams: gauge("mailstream_http_live_streams", "Live-update streams (GET /projects/:id/live) this api process serves now"),
  liveDropped: counter(
    "mailstream_http_live_dropped_total",
    "Live-update streams cut off because their client fell LIVE_CLIENT_BUFFER events behind"
  ),
  liveRefused: counter(
    "mailstream_http_live_refused_total",
    "Live-update streams refused past LIVE_MAX_CLIENTS or LIVE_MAX_CLIENTS_PER_USER"
  ),
  requestSeconds: histogram(
    "mailstream_http_request_duration_seconds",
    "HTTP requests by method, route template (unmatched: no route) and status class (2xx, 4xx, ...), until the response is ready",
    secondsBuckets,
    ["method", "route", "status"]
  )
} as const
