/**
 * Event destinations: which emitted events an endpoint subscribes to (patterns), and the rules the API
 * checks a destination's fields against. Pure: imported by the contract (browser-safe) and the engine.
 *
 * A pattern is an event name whose dot-separated tokens may be `*`, matching exactly one token
 * (`segment.*.entry`); a final `*` matches one or more tokens (`email.*`, `contact.*`); `*` alone
 * matches every event. Anything else is matched literally (`segment.vip.exit`, a tracked event name).
 */

export const MAX_PATTERNS = 50
export const MAX_PATTERN_LENGTH = 200
export const MAX_URL_LENGTH = 2048
export const MAX_DESCRIPTION_LENGTH = 500
/** How long the previous secret keeps signing after a rotation, by default (24 h), and at most (7 days). */
export const DEFAULT_OVERLAP_SECONDS = 86_400
export const MAX_OVERLAP_SECONDS = 7 * 86_400
/** The event type of the synthetic event `POST /destinations/:id/test` sends. */
export const TEST_EVENT_TYPE = "destination.test"

const TOKEN = /^(\*|[A-Za-z0-9_:@$-]+)$/

/** Why `pattern` is not a subscription pattern, or undefined when it is one. */
export const patternProblem = (pattern: string): string | undefined => {
  if (pattern.length === 0) return "a pattern cannot be empty"
  if (pattern.length > MAX_PATTERN_LENGTH) return `a pattern has at most ${MAX_PATTERN_LENGTH} characters`
  const tokens = pattern.split(".")
  if (!tokens.every((token) => TOKEN.test(token))) {
    return "tokens separated by dots, each `*` or letters, digits and _ : @ $ -"
  }
  return undefined
}

/** Whether the event `name` matches `pattern` (see the module's comment). */
export const matchesPattern = (pattern: string, name: string): boolean => {
  if (pattern === "*") return true
  const want = pattern.split(".")
  const have = name.split(".")
  for (let i = 0; i < want.length; i++) {
    const token = want[i]
    if (token === "*" && i === want.length - 1) return have.length >= want.length
    if (i >= have.length) return false
    if (token !== "*" && token !== have[i]) return false
  }
  return have.length === want.length
}

export const matchesAny = (patterns: ReadonlyArray<string>, name: string): boolean =>
  patterns.some((pattern) => matchesPattern(pattern, name))

/** Why `url` cannot be a destination's address, or undefined when it can (http or https, no credentials). */
export const urlProblem = (url: string): string | undefined => {
  if (url.length > MAX_URL_LENGTH) return `at most ${MAX_URL_LENGTH} characters`
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return "an absolute http(s) URL"
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") return "an absolute http(s) URL"
  if (parsed.username !== "" || parsed.password !== "") return "no user name or password in the URL"
  return undefined
}
