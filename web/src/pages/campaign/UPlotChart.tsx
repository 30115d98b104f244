/**
 * uPlot in React: made once per options, given new data in place, as wide as its box (ResizeObserver),
 * destroyed on unmount. The chart is an image to assistive technology (`label`); pages show its
 * numbers as text beside it.
 */
import { useEffect, useMemo, useRef } from "react"
import uPlot from "uplot"
import "uplot/dist/uPlot.min.css"

export function UPlotChart({ options, data, height = 220, label }: {
  readonly options: Omit<uPlot.Options, "width" | "height">
  readonly data: uPlot.AlignedData
  readonly height?: number
  readonly label: string
}) {
  const box = useRef<HTMLDivElement>(null)
  const chart = useRef<uPlot | null>(null)
  useEffect(() => {
    const element = box.current
    if (!element) return
    const plot = new uPlot({ ...options, width: Math.max(element.clientWidth, 100), height }, data, element)
    chart.current = plot
    const observer = new ResizeObserver(() => plot.setSize({ width: Math.max(element.clientWidth, 100), height }))
    observer.observe(element)
    return () => {
      observer.disconnect()
      plot.destroy()
      chart.current = null
    }
    // The chart is remade only when its options change; data changes are applied in place below.
  }, [options, height]) // eslint-disable-line react-hooks/exhaustive-deps
  useEffect(() => {
    chart.current?.setData(data)
  }, [data])
  return <div ref={box} role="img" aria-label={label} className="w-full min-w-0 overflow-hidden" />
}

/** Options of a bar chart of named counts (x: the categories, y: one series). */
export const barOptions = (labels: ReadonlyArray<string>, color: string): Omit<uPlot.Options, "width" | "height"> => ({
  legend: { show: false },
  cursor: { show: false },
  scales: { x: { time: false, range: [-0.5, labels.length - 0.5] }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
  axes: [
    { splits: () => labels.map((_, index) => index), values: (_u, splits) => splits.map((index) => labels[index] ?? ""), grid: { show: false }, size: 36, font: "11px system-ui, sans-serif" },
    { grid: { stroke: "#e2e8f0" }, font: "11px system-ui, sans-serif", size: 40, values: (_u, splits) => splits.map((value) => (Number.isInteger(value) ? value.toLocaleString() : "")) }
  ],
  series: [{}, { label: "Count", fill: color, stroke: color, paths: uPlot.paths.bars!({ size: [0.6, 64] }), points: { show: false } }]
})

/** A bar chart of named counts: this module (uPlot with it) is loaded on demand, see Outcome.tsx. */
export default function BarChart({ labels, values, color = "#6366f1" }: {
  readonly labels: ReadonlyArray<string>
  readonly values: ReadonlyArray<number>
  readonly color?: string
}) {
  // The arrays are compared by content (a parent may build new ones on every render).
  const key = labels.join("\u0000")
  const valuesKey = values.join(",")
  const options = useMemo(() => barOptions(labels, color), [key, color]) // eslint-disable-line react-hooks/exhaustive-deps
  const data = useMemo(() => [labels.map((_, index) => index), [...values]] as uPlot.AlignedData, [key, valuesKey]) // eslint-disable-line react-hooks/exhaustive-deps
  return <UPlotChart options={options} data={data} label={labels.map((label, index) => `${label} ${values[index]}`).join(", ")} />
}
