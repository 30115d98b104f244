/**
 * What the service can store, checked once at the edge so nothing accepted is refused later (a 500, or
 * a message dead-lettered after the client was told 200):
 *
 * - text without U+0000: Postgres `text` and `jsonb` both refuse it;
 * - well-formed UTF-16: a lone surrogate has no UTF-8 form, so `jsonb` refuses it and `text` would
 *   silently store U+FFFD instead;
 * - JSON (custom data, execution context, step configs, condition trees) nested at most
 *   `MAX_JSON_DEPTH` levels: deeper values overflow recursive code (JSON.stringify among it);
 * - no `__proto__` key: assigning it to a plain object changes the object's prototype instead of
 *   adding a key, so it would be silently dropped (or worse) on its way to storage;
 * - finite numbers: JSON.parse turns `1e400` into Infinity, which JSON.stringify writes as null.
 */

/** Objects and arrays nest at most this many levels (the value itself is the first level). */
export const MAX_JSON_DEPTH = 32

export interface StorableProblem {
  /** Where, from the checked value: keys and array indexes. */
  readonly path: ReadonlyArray<string | number>
  readonly message: string
  readonly code: string
}

/** Why a string cannot be stored, or undefined when it can. */
export const textProblem = (value: string): string | undefined =>
  value.includes("\u0000")
    ? "must not contain the NUL character (\\u0000)"
    : value.isWellFormed()
    ? undefined
    : "must not contain unpaired UTF-16 surrogates (\\ud800-\\udfff)"

export const isStorableText = (value: string): boolean => textProblem(value) === undefined

/** `groups[1].filters[0].operator`-style paths. */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string => {
  let out = ""
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`
    else out += out === "" ? String(segment) : `.${String(segment)}`
  }
  return out
}

interface Visit {
  readonly value: unknown
  readonly key: string | number | undefined
  readonly parent: Visit | undefined
  readonly depth: number
}

const pathOf = (visit: Visit): Array<string | number> => {
  const path: Array<string | number> = []
  for (let at: Visit | undefined = visit; at?.key !== undefined; at = at.parent) path.unshift(at.key)
  return path
}

/**
 * The first problem in a decoded JSON value, in document order, or undefined. Iterative (an explicit
 * stack), so a value nested any number of levels is checked without recursion.
 */
export const storableProblem = (root: unknown, maxDepth = MAX_JSON_DEPTH): StorableProblem | undefined => {
  const stack: Array<Visit> = [{ value: root, key: undefined, parent: undefined, depth: 1 }]
  while (stack.length > 0) {
    const visit = stack.pop()!
    const { value } = visit
    if (typeof value === "string") {
      const problem = textProblem(value)
      if (problem) return { path: pathOf(visit), message: `Text ${problem}`, code: "invalid_string" }
    } else if (typeof value === "number") {
      if (!Number.isFinite(value)) return { path: pathOf(visit), message: "Numbers must be finite", code: "invalid_number" }
    } else if (typeof value === "object" && value !== null) {
      if (visit.depth > maxDepth) {
        return { path: pathOf(visit), message: `Values may nest at most ${maxDepth} levels of objects and arrays`, code: "too_deep" }
      }
      const children: Array<Visit> = []
      if (Array.isArray(value)) {
        value.forEach((item, index) => children.push({ value: item, key: index, parent: visit, depth: visit.depth + 1 }))
      } else {
        for (const key of Object.keys(value)) {
          const at = { value: undefined, key, parent: visit, depth: visit.depth + 1 }
          if (key === "__proto__") return { path: pathOf(at), message: "The key __proto__ is not accepted", code: "forbidden_key" }
          const problem = textProblem(key)
          if (problem) return { path: pathOf(at), message: `Keys ${problem}`, code: "invalid_key" }
          children.push({ ...at, value: (value as Record<string, unknown>)[key] })
        }
      }
      for (let index = children.length - 1; index >= 0; index--) stack.push(children[index]!)
    }
  }
  return undefined
}
