/**
 * Line charts for benchmark plots (the soak's): an SVG written here, one panel per series family in a
 * grid, rendered to PNG by the Chromium the browser tests use (scripts/ensure-browser.sh, driven with
 * playwright-core): no charting dependency.
 */
import { execFileSync } from "node:child_process"
import { writeFileSync } from "node:fs"
import { chromium } from "playwright-core"
import type { Point } from "./soakCheck.ts"
import { ROOT } from "./settings.ts"

export interface Series {
  readonly name: string
  readonly points: ReadonlyArray<Point>
}

export interface Panel {
  readonly title: string
  /** The y axis's unit, shown after the title. */
  readonly unit: string
  readonly series: ReadonlyArray<Series>
  /** Times (s) drawn as dashed vertical lines (e.g. a worker restarted). A point whose value is NaN breaks its line. */
  readonly markers?: ReadonlyArray<number>
}

export const PANEL_WIDTH = 600
export const PANEL_HEIGHT = 280
const COLUMNS = 2
const MARGIN = { left: 64, right: 40, top: 30, bottom: 72 }
const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]

const escape = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

/** A tick label: short, whatever the magnitude. */
export const tickLabel = (value: number) => {
  const magnitude = Math.abs(value)
  if (magnitude >= 1e6) return `${Math.round(value / 1e5) / 10}M`
  if (magnitude >= 1e4) return `${Math.round(value / 100) / 10}k`
  if (magnitude >= 100 || value === 0) return String(Math.round(value))
  return String(Math.round(value * 100) / 100)
}

/** A "nice" upper bound of the y axis (1, 2 or 5 × a power of ten) at or above `max`. */
export const niceCeiling = (max: number) => {
  if (!(max > 0)) return 1
  const power = 10 ** Math.floor(Math.log10(max))
  return [1, 2, 5, 10].map((step) => step * power).find((candidate) => candidate >= max)!
}

const panelSvg = (panel: Panel, x0: number, y0: number) => {
  const plotWidth = PANEL_WIDTH - MARGIN.left - MARGIN.right
  const plotHeight = PANEL_HEIGHT - MARGIN.top - MARGIN.bottom
  const all = panel.series.flatMap((series) => series.points).filter((p) => Number.isFinite(p.value))
  const tMax = Math.max(1, ...all.map((p) => p.t))
  const yMax = niceCeiling(Math.max(0, ...all.map((p) => p.value)))
  // Below zero (a lag counted before its requests were answered) the axis goes as far down, on the same steps.
  const yMin = -niceCeiling(-Math.min(0, ...all.map((p) => p.value))) * (all.some((p) => p.value < 0) ? 1 : 0)
  const x = (t: number) => x0 + MARGIN.left + (t / tMax) * plotWidth
  const y = (value: number) => y0 + MARGIN.top + plotHeight - ((value - yMin) / (yMax - yMin)) * plotHeight
  const parts: Array<string> = [
    `<text x="${x0 + MARGIN.left}" y="${y0 + 18}" font-size="14" font-weight="bold">${escape(panel.title)} (${escape(panel.unit)})</text>`,
    `<rect x="${x0 + MARGIN.left}" y="${y0 + MARGIN.top}" width="${plotWidth}" height="${plotHeight}" fill="none" stroke="#999"/>`
  ]
  for (let i = 0; i <= 4; i++) {
    const value = yMin + ((yMax - yMin) * i) / 4
    parts.push(
      `<line x1="${x0 + MARGIN.left}" x2="${x0 + MARGIN.left + plotWidth}" y1="${y(value)}" y2="${y(value)}" stroke="#eee"/>`,
      `<text x="${x0 + MARGIN.left - 6}" y="${y(value) + 4}" font-size="11" text-anchor="end">${tickLabel(value)}</text>`
    )
  }
  // Minutes on round steps, five or so.
  const step = niceCeiling(tMax / 60 / 5)
  for (let minute = 0; minute * 60 <= tMax + 1e-9; minute += step) {
    parts.push(
      `<text x="${x(minute * 60)}" y="${y0 + MARGIN.top + plotHeight + 15}" font-size="11" text-anchor="middle">${
        tickLabel(minute)
      } min</text>`
    )
  }
  for (const marker of panel.markers ?? []) {
    parts.push(
      `<line class="marker" x1="${x(marker)}" x2="${x(marker)}" y1="${y0 + MARGIN.top}" y2="${
        y0 + MARGIN.top + plotHeight
      }" stroke="#aaa" stroke-dasharray="4 3"/>`
    )
  }
  panel.series.forEach((series, index) => {
    const color = COLORS[index % COLORS.length]!
    // A point without a value (NaN: a process between its stop and its start) breaks the line.
    let move = true
    const path = series.points.flatMap((p) => {
      if (!Number.isFinite(p.value)) {
        move = true
        return []
      }
      const command = `${move ? "M" : "L"}${x(p.t).toFixed(1)},${y(p.value).toFixed(1)}`
      move = false
      return [command]
    }).join(" ")
    if (path !== "") parts.push(`<path d="${path}" fill="none" stroke="${color}" stroke-width="1.5"/>`)
    // The legend under the axis, four names a row.
    const lx = x0 + MARGIN.left + (index % 4) * (plotWidth / 4)
    const ly = y0 + MARGIN.top + plotHeight + 30 + Math.floor(index / 4) * 14
    parts.push(
      `<rect x="${lx}" y="${ly - 8}" width="10" height="3" fill="${color}"/>`,
      `<text x="${lx + 14}" y="${ly}" font-size="11">${
        escape(series.name.length > 18 ? `${series.name.slice(0, 17)}…` : series.name)
      }</text>`
    )
  })
  return parts.join("\n")
}

/** The whole plot: a title and the panels, COLUMNS a row. */
export const chartSvg = (title: string, panels: ReadonlyArray<Panel>) => {
  const rows = Math.ceil(panels.length / COLUMNS)
  const width = COLUMNS * PANEL_WIDTH
  const height = 36 + rows * PANEL_HEIGHT
  const body = panels.map((panel, i) => panelSvg(panel, (i % COLUMNS) * PANEL_WIDTH, 36 + Math.floor(i / COLUMNS) * PANEL_HEIGHT))
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="16" y="24" font-size="16" font-weight="bold">${escape(title)}</text>`,
    ...body,
    "</svg>"
  ].join("\n")
}

/** Renders an SVG to a PNG file with the browser tests' Chromium. */
export const renderPng = async (svg: string, path: string) => {
  const executablePath = execFileSync("bash", [`${ROOT}scripts/ensure-browser.sh`], { encoding: "utf8" }).trim()
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] })
  try {
    const width = Number(svg.match(/width="(\d+)"/)![1])
    const height = Number(svg.match(/height="(\d+)"/)![1])
    const page = await browser.newPage({ viewport: { width, height } })
    await page.setContent(`<!doctype html><html><body style="margin:0">${svg}</body></html>`)
    writeFileSync(path, await page.screenshot({ type: "png", fullPage: true }))
  } finally {
    await browser.close()
  }
}
