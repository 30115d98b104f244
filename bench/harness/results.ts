/** The machine a run measured, and where its result goes: bench/results/<name>-<time>.json. */
import { mkdirSync, writeFileSync } from "node:fs"
import { cpus, loadavg, totalmem } from "node:os"
import { CONNECTIONS, DURATION, ROOT } from "./settings.ts"

export const machine = () => ({
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model,
  memoryGiB: Math.round(totalmem() / 2 ** 30),
  node: process.version,
  /** The machine is shared: what else ran in the last minute before the result was written. */
  loadAverage1m: Math.round(loadavg()[0]! * 100) / 100
})

export const settings = () => ({ durationSeconds: DURATION, connections: CONNECTIONS })

/** Writes the result file and returns its path. */
export const writeResult = (name: string, result: { readonly at: string }) => {
  mkdirSync(`${ROOT}/bench/results`, { recursive: true })
  const path = `${ROOT}/bench/results/${name}-${result.at.replace(/[:.]/g, "-")}.json`
  writeFileSync(path, JSON.stringify(result, null, 2))
  return path
}
