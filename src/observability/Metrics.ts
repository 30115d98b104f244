/**
 * A small in-process metrics registry rendered in the Prometheus text format at /metrics: counters,
 * gauges (with labels) and summaries (count and sum; enough for rates and averages).
 */
type Labels = Readonly<Record<string, string | number>>

const key = (labels: Labels) =>
  Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}="${String(v).replace(/["\\\n]/g, "_")}"`).join(",")

interface Family {
  readonly name: string
  readonly help: string
  readonly type: "counter" | "gauge" | "summary"
  readonly values: Map<string, number>
}

const families = new Map<string, Family>()

const family = (name: string, help: string, type: Family["type"]): Family => {
  let existing = families.get(name)
  if (!existing) {
    existing = { name, help, type, values: new Map() }
    families.set(name, existing)
  }
  return existing
}

export const counter = (name: string, help: string) => {
  const f = family(name, help, "counter")
  return { inc: (value = 1, labels: Labels = {}) => f.values.set(key(labels), (f.values.get(key(labels)) ?? 0) + value) }
}

export const gauge = (name: string, help: string) => {
  const f = family(name, help, "gauge")
  return {
    set: (value: number, labels: Labels = {}) => f.values.set(key(labels), value),
    remove: (labels: Labels) => f.values.delete(key(labels))
  }
}

export const summary = (name: string, help: string) => {
  const f = family(name, help, "summary")
  return {
    observe: (value: number, labels: Labels = {}) => {
      const k = key(labels)
      f.values.set(`count|${k}`, (f.values.get(`count|${k}`) ?? 0) + 1)
      f.values.set(`sum|${k}`, (f.values.get(`sum|${k}`) ?? 0) + value)
    }
  }
}

/** One process's values, handed to the processes it runs beside (`all`) so any of them can render all. */
export type MetricsSnapshot = ReadonlyArray<{
  readonly name: string
  readonly help: string
  readonly type: Family["type"]
  readonly values: ReadonlyArray<readonly [string, number]>
}>

export const snapshot = (): MetricsSnapshot =>
  [...families.values()].filter((f) => f.values.size > 0).map((f) => ({ ...f, values: [...f.values] }))

/** The latest snapshot of each sibling process; their values are summed into this process's /metrics. */
const peers = new Map<string, MetricsSnapshot>()

export const setPeerSnapshot = (peer: string, values: MetricsSnapshot | undefined) => {
  if (values === undefined) peers.delete(peer)
  else peers.set(peer, values)
}

const merged = (): ReadonlyArray<Family> => {
  if (peers.size === 0) return [...families.values()]
  const all = new Map([...families.values()].map((f) => [f.name, { ...f, values: new Map(f.values) }]))
  for (const peer of peers.values()) {
    for (const f of peer) {
      const into = all.get(f.name) ?? { name: f.name, help: f.help, type: f.type, values: new Map<string, number>() }
      all.set(f.name, into)
      for (const [k, value] of f.values) into.values.set(k, (into.values.get(k) ?? 0) + value)
    }
  }
  return [...all.values()]
}

export const renderPrometheus = (): string => {
  const lines: Array<string> = []
  for (const f of merged()) {
    lines.push(`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`)
    for (const [k, value] of f.values) {
      if (f.type === "summary") {
        const [part, labels] = k.split("|") as [string, string]
        lines.push(`${f.name}_${part}${labels ? `{${labels}}` : ""} ${value}`)
      } else {
        lines.push(`${f.name}${k ? `{${k}}` : ""} ${value}`)
      }
    }
  }
  return lines.join("\n") + "\n"
}

// The worker's metrics, in one place so /metrics documents itself.
export const WorkerMetrics = {
  eventsApplied: counter("mailstream_events_applied_total", "Events stored by project actors"),
  messagesApplied: counter("mailstream_messages_applied_total", "Stream messages applied by project actors"),
  messagesSkipped: counter("mailstream_messages_skipped_total", "Redelivered stream messages skipped (already applied)"),
  emitted: counter("mailstream_events_emitted_total", "Events emitted into the outbox (contact.subscribed, ...)"),
  batchSize: summary("mailstream_actor_batch_size", "Messages per actor transaction"),
  batchSeconds: summary("mailstream_actor_batch_seconds", "Duration of actor transactions"),
  batchFailures: counter("mailstream_actor_batch_failures_total", "Actor transactions that failed and were retried"),
  deadLettered: counter("mailstream_messages_dead_lettered_total", "Stream messages set aside in dead_letters after failing on their own"),
  actorsAlive: gauge("mailstream_actors_alive", "Project actors currently alive in this process"),
  partitionsOwned: gauge("mailstream_partitions_owned", "Partitions leased by this process"),
  partitionLag: gauge("mailstream_partition_lag", "Messages in the partition not yet applied (stream last seq minus watermark)"),
  partitionWatermark: gauge("mailstream_partition_watermark", "Highest stream sequence of the partition applied contiguously")
} as const
