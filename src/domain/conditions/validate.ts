/**
 * Validation of condition trees: every problem with the path of the offending node
 * (`groups[1].filters[0].operator`), so the api can answer 422 with precise errors.
 */
import { parseDate } from "./dates.ts"
import {
  type Condition,
  EVENT_OPERATORS,
  type FieldRef,
  type Filter,
  MAX_DEPTH,
  MAX_FILTERS,
  MEMBERSHIP_OPERATORS,
  OPERATORS,
  parseField,
  UNITS,
  VALUE_OPERATORS,
  WINDOW_OPERATORS
} from "./types.ts"

export interface ConditionProblem {
  readonly path: string
  readonly message: string
  readonly code: string
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

const isScalar = (value: unknown) => ["string", "number", "boolean"].includes(typeof value)

export const validateCondition = (input: unknown, basePath = ""): Array<ConditionProblem> => {
  const problems: Array<ConditionProblem> = []
  let filterCount = 0
  const at = (path: string, key: string) => (path ? `${path}.${key}` : key)
  const problem = (path: string, message: string, code = "invalid_value") => problems.push({ path, message, code })

  const checkFilter = (filter: unknown, path: string) => {
    filterCount++
    if (!isObject(filter)) return problem(path, "A filter is an object { field, operator, value?, unit? }", "invalid_type")
    const field = filter.field
    if (typeof field !== "string" || field.length === 0) return problem(at(path, "field"), "field is required", "required")
    if (field.includes("\u0000")) return problem(at(path, "field"), "field must not contain NUL characters")
    const ref = parseField(field)
    if (!ref) {
      return problem(
        at(path, "field"),
        `Unknown field ${field}: use email, subscribed, createdAt, updatedAt, data.<key>, event.<name>, email.<engagement> or segment.<id>`
      )
    }
    const operator = filter.operator
    if (typeof operator !== "string" || !(OPERATORS as ReadonlyArray<string>).includes(operator)) {
      return problem(at(path, "operator"), `operator must be one of ${OPERATORS.join(", ")}`)
    }
    const allowed: ReadonlyArray<string> = ref.kind === "event"
      ? EVENT_OPERATORS
      : ref.kind === "segment"
      ? MEMBERSHIP_OPERATORS
      : VALUE_OPERATORS
    if (!allowed.includes(operator)) {
      return problem(at(path, "operator"), `${operator} does not apply to ${field}; use one of ${allowed.join(", ")}`)
    }
    checkValue(filter as unknown as Filter, ref, path)
  }

  const checkValue = (filter: Filter, ref: FieldRef, path: string) => {
    const { operator, value } = filter
    const valuePath = at(path, "value")
    if (WINDOW_OPERATORS.has(operator) || (operator === "triggeredAtLeast" && filter.within !== undefined)) {
      if (filter.unit === undefined || !(filter.unit in UNITS)) {
        return problem(at(path, "unit"), `unit is required for ${operator}: minutes, hours or days`, "required")
      }
    } else if (filter.unit !== undefined && !(filter.unit in UNITS)) {
      return problem(at(path, "unit"), "unit must be minutes, hours or days")
    }
    if (WINDOW_OPERATORS.has(operator)) {
      if (typeof value !== "number" || !Number.isFinite(value) || value <= 0 || value > 36_500) {
        return problem(valuePath, `${operator} needs a positive amount of ${filter.unit}`)
      }
      if ((operator === "within" || operator === "olderThan") && (ref.kind === "email" || ref.kind === "subscribed")) {
        return problem(at(path, "operator"), `${operator} needs a date field`)
      }
      return
    }
    switch (operator) {
      case "exists":
      case "notExists":
      case "triggered":
      case "notTriggered":
        return
      case "memberOfSegment":
      case "notMemberOfSegment":
        if (ref.kind === "segment" && ref.segmentId === undefined && (typeof value !== "string" || value === "")) {
          return problem(valuePath, "the segment id is required (field segment.<id>, or value)", "required")
        }
        return
      case "triggeredAtLeast":
        if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > 1_000_000_000) {
          return problem(valuePath, "triggeredAtLeast needs a whole count from 1 to 1,000,000,000")
        }
        if (filter.within !== undefined && (typeof filter.within !== "number" || !(filter.within > 0) || filter.within > 36_500)) {
          return problem(at(path, "within"), "within must be a positive amount of at most 36,500")
        }
        return
      case "contains":
      case "notContains":
        if (typeof value !== "string" || value === "" || value.includes("\u0000")) {
          return problem(valuePath, `${operator} needs a non-empty string`)
        }
        return
      case "greaterThan":
      case "lessThan":
      case "greaterThanOrEqual":
      case "lessThanOrEqual":
        if (ref.kind === "timestamp") {
          if (!parseDate(value)) return problem(valuePath, "Expected a date: YYYY-MM-DD or an ISO 8601 timestamp")
        } else if (!(typeof value === "number" && Math.abs(value) <= 1e15) && !parseDate(value)) {
          return problem(valuePath, `${operator} needs a number or a date (YYYY-MM-DD or ISO 8601)`)
        }
        return
      case "equals":
      case "notEquals":
        if (value === undefined || !isScalar(value) || (typeof value === "number" && !(Math.abs(value) <= 1e15))) {
          return problem(
            valuePath,
            `${operator} needs a string, number or boolean value`,
            value === undefined ? "required" : "invalid_value"
          )
        }
        if (typeof value === "string" && value.includes("\u0000")) return problem(valuePath, "values must not contain NUL characters")
        if (ref.kind === "subscribed" && typeof value !== "boolean") return problem(valuePath, "subscribed compares with true or false")
        if (ref.kind === "timestamp" && !parseDate(value)) return problem(valuePath, "Expected a date: YYYY-MM-DD or an ISO 8601 timestamp")
        return
    }
  }

  const checkTree = (tree: unknown, path: string, depth: number) => {
    if (depth > MAX_DEPTH) return problem(path || "condition", `Conditions nest at most ${MAX_DEPTH} levels deep`, "too_deep")
    if (!isObject(tree)) return problem(path || "condition", "A condition is an object { logic, groups }", "invalid_type")
    if (tree.logic !== "AND" && tree.logic !== "OR") problem(at(path, "logic"), "logic must be AND or OR")
    if (!Array.isArray(tree.groups) || tree.groups.length === 0) {
      return problem(at(path, "groups"), "groups must be a non-empty array", Array.isArray(tree.groups) ? "too_small" : "required")
    }
    tree.groups.forEach((group: unknown, index: number) => {
      const groupPath = at(path, `groups[${index}]`)
      if (!isObject(group)) return problem(groupPath, "A group is an object { filters, conditions? }", "invalid_type")
      const filters = group.filters ?? []
      if (!Array.isArray(filters)) return problem(at(groupPath, "filters"), "filters must be an array", "invalid_type")
      if (filters.length === 0 && group.conditions === undefined) {
        return problem(at(groupPath, "filters"), "A group needs at least one filter or a nested condition", "too_small")
      }
      filters.forEach((filter: unknown, filterIndex: number) => checkFilter(filter, at(groupPath, `filters[${filterIndex}]`)))
      if (group.conditions !== undefined) checkTree(group.conditions, at(groupPath, "conditions"), depth + 1)
    })
  }

  checkTree(input, basePath, 1)
  if (filterCount > MAX_FILTERS) problem(basePath || "condition", `At most ${MAX_FILTERS} filters per condition`, "too_big")
  return problems
}

/** Everything a (valid) condition reads: for indexing segments by what can change their answer. */
export interface ConditionReads {
  /** Contact fields: `email`, `subscribed`, `createdAt`, `updatedAt`, `data.<top-level key>`. */
  readonly fields: Set<string>
  readonly events: Set<string>
  readonly segments: Set<string>
  /** Whether the answer depends on the current time (window operators). */
  readonly timeDependent: boolean
  /** The events counted in a window (`triggeredAtLeast … within`), each with its longest window (ms). */
  readonly windows: ReadonlyMap<string, number>
}

export const conditionReads = (condition: Condition): ConditionReads => {
  const windows = new Map<string, number>()
  const reads: ConditionReads & { timeDependent: boolean } = {
    fields: new Set(),
    events: new Set(),
    segments: new Set(),
    timeDependent: false,
    windows
  }
  const visit = (tree: Condition) => {
    for (const group of tree.groups) {
      for (const filter of group.filters) {
        const ref = parseField(filter.field)!
        if (WINDOW_OPERATORS.has(filter.operator) || (filter.operator === "triggeredAtLeast" && filter.within !== undefined)) {
          reads.timeDependent = true
        }
        switch (ref.kind) {
          case "event":
            reads.events.add(ref.name)
            if (filter.operator === "triggeredAtLeast" && filter.within !== undefined) {
              windows.set(ref.name, Math.max(windows.get(ref.name) ?? 0, filter.within * UNITS[filter.unit!]))
            }
            break
          case "segment":
            reads.segments.add(ref.segmentId ?? String(filter.value))
            break
          case "data":
            reads.fields.add(`data.${ref.path[0]}`)
            break
          case "timestamp":
            reads.fields.add(ref.column)
            break
          default:
            reads.fields.add(ref.kind)
        }
      }
      if (group.conditions) visit(group.conditions)
    }
  }
  visit(condition)
  return reads
}

/** Every filter of a condition, depth first. */
export const conditionFilters = (condition: Condition): Array<Filter> => {
  const out: Array<Filter> = []
  const visit = (tree: Condition) => {
    for (const group of tree.groups) {
      out.push(...group.filters)
      if (group.conditions) visit(group.conditions)
    }
  }
  visit(condition)
  return out
}
