/**
 * The in-memory evaluator (used by project actors): a condition compiled once into a function of a
 * contact's facts and the current instant, answering whether the contact matches and the next
 * instant at which that answer can change without new input (a time window lapsing), if any.
 * `store/conditionSql.ts` compiles the same tree to SQL; a property test holds the two to one answer.
 */
import { DAY_MS, parseDate } from "./dates.ts"
import { type Condition, type FieldRef, type Filter, membershipTarget, parseField, UNITS, windowMs } from "./types.ts"

export interface EventAggregate {
  readonly count: number
  readonly firstAt: number
  readonly lastAt: number
}

export interface ContactFacts {
  readonly id: string
  readonly email: string
  readonly subscribed: boolean
  readonly createdAt: number
  readonly updatedAt: number
  readonly data: Readonly<Record<string, unknown>>
  readonly events: ReadonlyMap<string, EventAggregate>
  /** Occurrence times of events read by windowed `triggeredAtLeast` filters, newest first. */
  readonly eventTimes?: ReadonlyMap<string, ReadonlyArray<number>>
  readonly memberships: ReadonlySet<string>
}

/** Beyond this a number of milliseconds is no Date. */
const MAX_DATE_MS = 8.64e15

/**
 * The occurrence time (ms) at or before which no windowed count (`triggeredAtLeast … within`, at most
 * `longestWindowMs`) evaluated at `earliestInstant` or later counts an occurrence, so reads of occurrence
 * times can stop there; undefined when nothing can be left out (no window that long fits in a Date: the
 * api refuses them). The instant is the earliest the facts are evaluated at: the clock, or a late
 * timer's due time, which may be long past.
 */
export const windowedSince = (earliestInstant: number, longestWindowMs: number): number | undefined => {
  const since = earliestInstant - longestWindowMs
  return since >= -MAX_DATE_MS ? since : undefined
}

export interface Evaluation {
  readonly matches: boolean
  /** The earliest instant (ms) at which the answer may change with no new input; undefined: never. */
  readonly nextChangeAt: number | undefined
}

type Compiled = (facts: ContactFacts, now: number) => Evaluation

const earliest = (a: number | undefined, b: number | undefined) => a === undefined ? b : b === undefined ? a : Math.min(a, b)

const result = (matches: boolean, nextChangeAt?: number): Evaluation => ({ matches, nextChangeAt })

/** The stored value a value filter reads (undefined when missing or null). */
const readValue = (ref: FieldRef, facts: ContactFacts): unknown => {
  switch (ref.kind) {
    case "email":
      return facts.email
    case "subscribed":
      return facts.subscribed
    case "timestamp":
      return ref.column === "createdAt" ? facts.createdAt : facts.updatedAt
    case "data": {
      // As Postgres' `#>` does: object keys (own properties only) and array indexes.
      let current: unknown = facts.data
      for (const key of ref.path) {
        if (Array.isArray(current)) {
          if (!/^[+-]?\d+$/.test(key)) return undefined
          const index = Number(key) < 0 ? current.length + Number(key) : Number(key)
          current = current[index]
        } else if (typeof current === "object" && current !== null && Object.hasOwn(current, key)) {
          current = (current as Record<string, unknown>)[key]
        } else {
          return undefined
        }
      }
      return current === null ? undefined : current
    }
    default:
      return undefined
  }
}

/** A stored value as an instant: timestamps are instants; data values must be date strings. */
const asInstant = (ref: FieldRef, stored: unknown): number | undefined =>
  ref.kind === "timestamp" ? (stored as number) : parseDate(stored)?.at

const compareDates = (operator: Filter["operator"], t: number, value: { at: number; isDay: boolean }): boolean => {
  const end = value.isDay ? value.at + DAY_MS : value.at
  switch (operator) {
    case "equals":
      return value.isDay ? t >= value.at && t < end : t === value.at
    case "greaterThan":
      return value.isDay ? t >= end : t > value.at
    case "greaterThanOrEqual":
      return t >= value.at
    case "lessThan":
      return t < value.at
    case "lessThanOrEqual":
      return value.isDay ? t < end : t <= value.at
    default:
      return false
  }
}

const valueFilter = (filter: Filter, ref: FieldRef): Compiled => {
  const { operator, value } = filter
  switch (operator) {
    case "exists":
      return (facts) => result(readValue(ref, facts) !== undefined)
    case "notExists":
      return (facts) => result(readValue(ref, facts) === undefined)
    case "equals":
    case "notEquals": {
      const negate = operator === "notEquals"
      let test: (stored: unknown) => boolean
      if (ref.kind === "email") {
        const wanted = String(value).toLowerCase()
        test = (stored) => String(stored).toLowerCase() === wanted
      } else if (ref.kind === "timestamp") {
        const date = parseDate(value)!
        test = (stored) => compareDates("equals", stored as number, date)
      } else {
        test = (stored) => stored === value
      }
      return (facts) => {
        const stored = readValue(ref, facts)
        return result((stored !== undefined && test(stored)) !== negate)
      }
    }
    case "contains":
    case "notContains": {
      const needle = String(value).toLowerCase()
      const wanted = operator === "contains"
      return (facts) => {
        const stored = readValue(ref, facts)
        const contains = typeof stored === "string" && stored.toLowerCase().includes(needle)
        // notContains asks about a value the contact has: a missing (or null) field matches neither, as in the reference.
        return result(wanted ? contains : stored !== undefined && !contains)
      }
    }
    case "greaterThan":
    case "lessThan":
    case "greaterThanOrEqual":
    case "lessThanOrEqual": {
      if (typeof value === "number" && ref.kind !== "timestamp") {
        const compare = {
          greaterThan: (a: number) => a > value,
          lessThan: (a: number) => a < value,
          greaterThanOrEqual: (a: number) => a >= value,
          lessThanOrEqual: (a: number) => a <= value
        }[operator]
        return (facts) => {
          const stored = readValue(ref, facts)
          return result(typeof stored === "number" && compare(stored))
        }
      }
      const date = parseDate(value)!
      return (facts) => {
        const t = asInstant(ref, readValue(ref, facts))
        return result(t !== undefined && compareDates(operator, t, date))
      }
    }
    case "within":
    case "olderThan": {
      const window = windowMs(filter)
      const within = operator === "within"
      return (facts, now) => {
        const t = asInstant(ref, readValue(ref, facts))
        if (t === undefined) return result(false)
        // Within until t + window (exclusive), older than from that instant on.
        const isWithin = t > now - window
        return result(within ? isWithin : !isWithin, isWithin ? t + window : undefined)
      }
    }
    default:
      return () => result(false)
  }
}

const eventFilter = (filter: Filter, name: string): Compiled => {
  switch (filter.operator) {
    case "triggered":
      return (facts) => result((facts.events.get(name)?.count ?? 0) > 0)
    case "notTriggered":
      return (facts) => result((facts.events.get(name)?.count ?? 0) === 0)
    case "triggeredWithin":
    case "notTriggeredWithin":
    case "triggeredOlderThan": {
      const window = windowMs(filter)
      const operator = filter.operator
      return (facts, now) => {
        const aggregate = facts.events.get(name)
        if (!aggregate || aggregate.count === 0) return result(operator === "notTriggeredWithin")
        const recent = aggregate.lastAt > now - window
        const next = recent ? aggregate.lastAt + window : undefined
        if (operator === "triggeredWithin") return result(recent, next)
        return result(!recent, next)
      }
    }
    case "triggeredAtLeast": {
      const count = Number(filter.value)
      if (filter.within === undefined) return (facts) => result((facts.events.get(name)?.count ?? 0) >= count)
      const window = filter.within * UNITS[filter.unit!]
      return (facts, now) => {
        const times = facts.eventTimes?.get(name) ?? []
        const inWindow = times.filter((t) => t > now - window)
        if (inWindow.length < count) return result(false)
        // True until the count-th newest occurrence leaves the window.
        return result(true, inWindow[count - 1]! + window)
      }
    }
    default:
      return () => result(false)
  }
}

const compileFilter = (filter: Filter): Compiled => {
  const ref = parseField(filter.field)!
  if (ref.kind === "event") return eventFilter(filter, ref.name)
  if (ref.kind === "segment") {
    const target = membershipTarget(filter, ref)
    const negate = filter.operator === "notMemberOfSegment"
    return (facts) => result(facts.memberships.has(target) !== negate)
  }
  return valueFilter(filter, ref)
}

/**
 * Combines parts precisely enough to avoid needless timers: a part that is false (in AND) or true
 * (in OR) with no scheduled change fixes the answer until new input, so later instants don't matter.
 */
const combine = (parts: ReadonlyArray<Evaluation>, any: boolean): Evaluation => {
  let next: number | undefined
  let matches = !any
  for (const part of parts) {
    if (part.matches === any && part.nextChangeAt === undefined) return { matches: any, nextChangeAt: undefined }
    next = earliest(next, part.nextChangeAt)
    if (part.matches === any) matches = any
  }
  return { matches, nextChangeAt: next }
}

export const compileCondition = (condition: Condition): Compiled => {
  const groups = condition.groups.map((group) => {
    const parts = group.filters.map(compileFilter)
    if (group.conditions) parts.push(compileCondition(group.conditions))
    return parts
  })
  const any = condition.logic === "OR"
  return (facts, now) => combine(groups.map((parts) => combine(parts.map((part) => part(facts, now)), false)), any)
}
