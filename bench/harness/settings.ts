/** Settings every benchmark shares (environment variables, see BENCHMARKS.md) and small helpers. */
export const ROOT = new URL("../../", import.meta.url).pathname
export const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222"

/** An integer setting from the environment. */
export const setting = (name: string, fallback: number): number => {
  const value = process.env[name]
  return value === undefined || value === "" ? fallback : Number(value)
}

/** Seconds per measurement. */
export const DURATION = setting("BENCH_DURATION", 10)
/** Connections of the load generator. */
export const CONNECTIONS = setting("BENCH_CONNECTIONS", 50)

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Polls `check` every `everyMs` until it answers true; false once `timeoutMs` has passed. */
export const waitFor = async (check: () => Promise<boolean> | boolean, timeoutMs: number, everyMs = 100): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await check()) return true
    if (Date.now() > deadline) return false
    await sleep(everyMs)
  }
}
