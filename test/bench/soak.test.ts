/**
 * The soak's judging and drawing, on synthetic series: the regression check (flat, leaking, bounded
 * and unbounded series; noise within tolerance), the checks the soak derives from its samples, the
 * heap figure read from a /metrics page, and the SVG plot.
 */
import { describe, expect, it } from "vitest"
import { chartSvg, niceCeiling, tickLabel } from "../../bench/harness/chart.ts"
import { boundedCheck, failures, growthCheck, levelCheck, median, type Point, thirds } from "../../bench/harness/soakCheck.ts"
import { heapUsedOf, soakChecks } from "../../bench/soak.ts"

const run = { start: 0, end: 3600 }
/** A sample every 10 s over the hour: value(t). */
const series = (value: (t: number) => number): Array<Point> => Array.from({ length: 361 }, (_, i) => ({ t: i * 10, value: value(i * 10) }))
/** Deterministic noise in [-1, 1]. */
const noise = (t: number) => Math.sin(t * 12.9898) * 0.999

describe("the regression check", () => {
  it("splits a run in thirds and leaves the first (the warm-up) out", () => {
    const { middle, last } = thirds(series((t) => t), 0, 3600)
    expect(middle[0]!.t).toBe(1200)
    expect(middle.at(-1)!.t).toBe(2390)
    expect(last[0]!.t).toBe(2400)
    expect(last.at(-1)!.t).toBe(3600)
  })

  it("passes a flat, noisy level and one that rose during the warm-up only", () => {
    const flat = levelCheck("rss", series((t) => 200 + 10 * noise(t)), run, { relative: 0.1, absolute: 5 })
    expect(flat.ok).toBe(true)
    const warm = levelCheck("heap", series((t) => (t < 600 ? 50 + t / 10 : 110) + noise(t)), run, { relative: 0.05, absolute: 1 })
    expect(warm.ok).toBe(true)
  })

  it("fails a level that keeps rising (a leak), naming it with its figures", () => {
    const leak = levelCheck("api RSS", series((t) => 100 + t / 20), run, { relative: 0.1, absolute: 5 }, { unit: " MB" })
    // middle third mean ≈ 190, last ≈ 250: above 190 × 1.1 + 5.
    expect(leak.ok).toBe(false)
    expect(leak.middle).toBeCloseTo(189.75, 1)
    expect(leak.last).toBeCloseTo(250, 0)
    expect(failures([leak])).toEqual([
      expect.stringMatching(/^api RSS: averaged 250(\.\d+)? MB in the last third \(middle third 189\.75 MB, limit 213\.73 MB\)$/)
    ])
  })

  it("judges latencies by the median, so one spike is noise and a trend is not", () => {
    const spiky = series((t) => (t >= 2400 && t % 300 === 0 ? 2000 : 20 + noise(t)))
    expect(levelCheck("p99", spiky, run, { relative: 0.5, absolute: 10 }, { statistic: "median" }).ok).toBe(true)
    expect(levelCheck("p99", spiky, run, { relative: 0.5, absolute: 10 }).ok).toBe(false)
    const trending = series((t) => 20 + (t * t) / 30_000)
    expect(levelCheck("p99", trending, run, { relative: 0.5, absolute: 10 }, { statistic: "median" }).ok).toBe(false)
    expect(median([3, 1, 2, 10])).toBe(2.5)
  })

  it("lets a table grow with its rows but not accelerate", () => {
    const linear = growthCheck("events", series((t) => 1e6 + 5000 * t + 20000 * noise(t)), run, { relative: 0.5, absolute: 1e5 })
    expect(linear.ok).toBe(true)
    expect(linear.middle).toBeGreaterThan(5.5e6)
    const accelerating = growthCheck("bloated", series((t) => 1e6 + 2 * t * t), run, { relative: 0.5, absolute: 1e5 })
    // growth: middle third 2 × (2400² − 1200²) ≈ 8.6e6, last third 2 × (3600² − 2400²) = 1.44e7 > 8.6e6 × 1.5 + 1e5.
    expect(accelerating.ok).toBe(false)
    // A flat table (a queue emptied as fast as it fills) passes, shrinking too.
    expect(growthCheck("timers", series((t) => 8192 + 100 * noise(t)), run, { relative: 0.5, absolute: 1e4 }).ok).toBe(true)
    expect(growthCheck("vacuumed", series((t) => 1e7 - t * 100), run, { relative: 0.5, absolute: 0 }).ok).toBe(true)
  })

  it("holds storage to its retention limit, and fails storage without one that keeps growing", () => {
    const capped = series((t) => Math.min(4e6, t * 5000))
    expect(boundedCheck("stream A", capped, run, 4e6, 0).ok).toBe(true)
    expect(boundedCheck("stream A", capped, run, 3e6, 0).ok).toBe(false)
    const growing = series((t) => t * 5000)
    const unbounded = boundedCheck("stream B (no retention limit)", growing, run, undefined, 1e6)
    expect(unbounded.ok).toBe(false)
    expect(unbounded.last - unbounded.middle).toBeCloseTo(2400 * 5000, -3)
    expect(boundedCheck("stream C", series(() => 2e5), run, undefined, 1e6).ok).toBe(true)
  })

  it("does not call a third without samples a regression", () => {
    expect(levelCheck("x", [{ t: 0, value: 1 }], run, { relative: 0, absolute: 0 }).ok).toBe(true)
    expect(growthCheck("x", [], run, { relative: 0, absolute: 0 }).ok).toBe(true)
  })
})

describe("the soak's checks over its samples", () => {
  const MiB = 2 ** 20
  const sample = (t: number, leak: number) => ({
    t,
    processes: { api: { rss: 150 * MiB + leak * t, heap: 40 * MiB }, worker1: { rss: 200 * MiB + 5 * MiB * noise(t), heap: undefined } },
    tables: { events: { total: 10 * MiB + 4000 * t, indexes: 4 * MiB }, tiny: { total: 8192, indexes: 0 } },
    databaseBytes: 30 * MiB + 4000 * t,
    streams: { t1_IN: { bytes: 10_000 * t, messages: t } },
    accepted: 100 * t,
    stored: 100 * t - 50,
    lag: 50,
    p99: { track: 12 + noise(t), campaign: t },
    requests: { track: 1000 },
    sseEvents: t,
    mailsArrived: t
  })

  it("checks each process, the tables above 1 MiB, the streams, the lag and the p99s, and names what failed", () => {
    const steady = soakChecks(Array.from({ length: 181 }, (_, i) => sample(i * 10, 0)), { t1_IN: 32 * MiB }, 100)
    expect(steady.map((check) => check.name).sort()).toEqual([
      "api RSS",
      "api heap used",
      "database size",
      "stream t1_IN",
      "table events",
      "track lag",
      "track p99",
      "worker1 RSS",
      "worker1 heap used"
    ])
    expect(failures(steady)).toEqual([])
    const leaking = soakChecks(Array.from({ length: 181 }, (_, i) => sample(i * 10, 200_000)), {}, 100)
    expect(failures(leaking).map((line) => line.split(":")[0])).toEqual(["api RSS", "stream t1_IN (no retention limit)"])
  })

  it("reads the heap used from a /metrics page", () => {
    const page = "# HELP nodejs_heap_size_used_bytes Process heap size used from Node.js in bytes.\n" +
      "# TYPE nodejs_heap_size_used_bytes gauge\nnodejs_heap_size_used_bytes 12345678\nnodejs_heap_size_total_bytes 2e7\n"
    expect(heapUsedOf(page)).toBe(12345678)
    expect(heapUsedOf('nodejs_heap_size_used_bytes{process="a"} 10\nnodejs_heap_size_used_bytes{process="b"} 5\n')).toBe(15)
    expect(heapUsedOf("process_cpu_seconds_total 1\n")).toBeUndefined()
  })
})

describe("the plot", () => {
  const panel = (title: string, values: Array<number>) => ({
    title,
    unit: "MiB",
    series: [{ name: "api <main>", points: values.map((value, i) => ({ t: i * 60, value })) }, { name: "worker1", points: [] }],
    markers: [120]
  })

  it("draws one panel per family, a polyline per series scaled to the axis, restarts as dashed lines", () => {
    const svg = chartSvg("soak & run", [panel("RSS", [0, 50, 100]), panel("Heap", [10, 20, 30]), panel("Lag", [1, 2, 3])])
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg" width="1200" height="596"')).toBe(true)
    expect(svg).toContain(">soak &amp; run<")
    expect(svg.match(/font-weight="bold">[^<]+\(MiB\)</g)).toHaveLength(3)
    // One path per series with points (the empty one is in the legend only), and the names escaped.
    expect(svg.match(/<path /g)).toHaveLength(3)
    expect(svg.match(/api &lt;main&gt;/g)).toHaveLength(3)
    expect(svg.match(/>worker1</g)).toHaveLength(3)
    expect(svg.match(/class="marker"/g)).toHaveLength(3)
    // The first panel: 0 at the bottom of the plot area (y 36 + 30 + 178), 100 (the axis top) at its top.
    const [first] = svg.match(/<path d="([^"]+)"/)!.slice(1)
    expect(first).toBe("M64.0,244.0 L312.0,155.0 L560.0,66.0")
    // Two minutes on the time axis: ticks every 0.5 min.
    expect(svg.match(/>[\d.]+ min</g)!.slice(0, 5)).toEqual([">0 min<", ">0.5 min<", ">1 min<", ">1.5 min<", ">2 min<"])
  })

  it("breaks a line where a point has no value", () => {
    const svg = chartSvg("gap", [panel("RSS", [50, NaN, NaN, 100, 50])])
    expect(svg.match(/<path d="([^"]+)"/)![1]).toBe("M64.0,155.0 M436.0,66.0 L560.0,155.0")
  })

  it("takes the axis below zero when a series goes there", () => {
    const svg = chartSvg("lag", [panel("Lag", [-30, 0, 80])])
    // From -50 to 100 (nice bounds): -30 sits 20/150 of the height above the bottom (244 − 178 × 20/150).
    expect(svg.match(/<path d="([^"]+)"/)![1]).toBe("M64.0,220.3 L312.0,184.7 L560.0,89.7")
    expect(svg).toContain(">-50<")
  })

  it("labels the axes in short numbers on a nice scale", () => {
    expect([niceCeiling(0), niceCeiling(0.7), niceCeiling(3), niceCeiling(101), niceCeiling(4.2e6)]).toEqual([1, 1, 5, 200, 5e6])
    expect([tickLabel(0), tickLabel(0.25), tickLabel(250), tickLabel(12_500), tickLabel(2_500_000)]).toEqual([
      "0",
      "0.25",
      "250",
      "12.5k",
      "2.5M"
    ])
  })
})
