/** Checks raw query values, collecting every problem, so one 422 names all the bad fields. */
import { Effect } from "effect"
import { type FieldProblem, parseInstant } from "../domain/analytics/range.ts"
import { isUuid } from "../domain/ids.ts"
import { nonEmpty } from "./query.ts"
import { ValidationFailed } from "./api/statusErrors.ts"

export const fieldReader = () => {
  const problems: Array<FieldProblem> = []
  return {
    problems,
    instant: (field: string, raw: string | undefined) => {
      const value = nonEmpty(raw)
      if (value === undefined) return undefined
      const time = parseInstant(value)
      if (time === undefined)
        problems.push({ field, message: "expected an ISO 8601 date-time (1970 to 9999)", code: "invalid_date", received: value })
      return time
    },
    uuid: (field: string, raw: string | undefined) => {
      const value = nonEmpty(raw)
      if (value !== undefined && !isUuid(value))
        problems.push({ field, message: "expected a UUID", code: "invalid_string", received: value })
      return value?.toLowerCase()
    },
    /** A comma-separated list of `allowed` values (`name` says what they are in the message). */
    list: <const T extends string>(field: string, raw: string | undefined, allowed: ReadonlyArray<T>, name = field) => {
      const value = nonEmpty(raw)
      if (value === undefined) return undefined
      const items = value.split(",").map((item) => item.trim()).filter((item) => item !== "")
      const known = (item: string): item is T => (allowed as ReadonlyArray<string>).includes(item)
      const unknown = items.filter((item) => !known(item))
      if (unknown.length > 0) {
        problems.push({
          field,
          message: `unknown ${name} ${unknown.join(", ")}; expected any of ${allowed.join(", ")}`,
          code: "invalid_enum_value",
          received: value
        })
      }
      return items.filter(known)
    },
    done: () => (problems.length > 0 ? Effect.fail(ValidationFailed.of(problems)) : Effect.void)
  }
}
