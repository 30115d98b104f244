/**
 * A uPlot line chart that follows its box's width, with times shown in the chosen zone. The figures are
 * also given as a table below it (for screen readers and for reading exact values).
 */
import "uplot/dist/uPlot.min.css"
import { useEffect, useRef } from "react"
import uPlot from "uplot"

export interface Series {
  readonly label: string
  readonly colour: string
  readonly values: ReadonlyArray<number>
  readonly dashed?: boolean
}

const HEIGHT = 260

export function LineChart({ label, times, series, tz, hourly }: {
  readonly label: string
  /** Bucket starts, ms since the epoch. */
  readonly times: ReadonlyArray<number>
  readonly series: ReadonlyArray<Series>
  readonly tz: string
  readonly hourly: boolean
}) {
  const box = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const element = box.current
    if (!element) return
    const plot = new uPlot(
      {
        width: Math.max(element.clientWidth, 200),
        height: HEIGHT,
        tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), tz),
        scales: { x: { time: true }, y: { range: (_, min, max) => [0, Math.max(max, min, 4)] } },
        axes: [
          {
            values: hourly ? "{HH}:{mm}" : "{MMM} {D}",
            space: 60,
            // Ticks on bucket starts (local midnights or hours), not on uPlot's own UTC-based steps.
            splits: () => {
              const every = Math.max(1, Math.ceil(times.length / Math.max(2, Math.floor(Math.max(box.current?.clientWidth ?? 600, 200) / 70))))
              return times.filter((_, index) => index % every === 0).map((time) => time / 1000)
            }
          },
          { values: (_, ticks) => ticks.map((tick) => (Number.isInteger(tick) ? tick.toLocaleString() : "")) }
        ],
        series: [
          { value: hourly ? "{MMM} {D} {HH}:{mm}" : "{MMM} {D}" },
          ...series.map((one) => ({ label: one.label, stroke: one.colour, width: 2, ...(one.dashed ? { dash: [6, 4] } : {}), points: { show: times.length < 40 } }))
        ]
      },
      [times.map((time) => time / 1000), ...series.map((one) => [...one.values])],
      element
    )
    const observer = new ResizeObserver(() => plot.setSize({ width: Math.max(element.clientWidth, 200), height: HEIGHT }))
    observer.observe(element)
    return () => {
      observer.disconnect()
      plot.destroy()
    }
  }, [times, series, tz, hourly])
  return <div ref={box} role="img" aria-label={label} data-testid="chart" className="w-full min-w-0 [&_.u-legend]:text-xs" />
}
