// autocannon ships no types; the benchmark uses a small part of its API.
declare module "autocannon" {
  interface Result {
    readonly requests: { readonly average: number; readonly total: number }
    readonly latency: { readonly p50: number; readonly p99: number }
    readonly non2xx: number
    readonly errors: number
  }
  const autocannon: (options: Record<string, unknown>) => Promise<Result>
  export default autocannon
}
