/**
 * Turns Schema failures into the envelope's `errors[]` items (`{ field, message, code, received? }`): the
 * server's 422 for a request that does not decode, and the web app's own check of a request before it is
 * sent (web/src/api/failure.ts), so both name the same fields with the same messages.
 */
import { SchemaIssue } from "effect"
import { formatPath } from "../../domain/storable.ts"
import type { FieldError } from "../../domain/errors.ts"

const received = (issue: SchemaIssue.Issue): { received?: unknown } => {
  if (!SchemaIssue.hasInput(issue)) {
    return issue._tag === "Filter" || issue._tag === "Encoding" ? received(issue.issue) : {}
  }
  const input = (issue as { input: unknown }).input
  // Echo scalars only: large or nested inputs make the error body bigger than the request.
  if (input === null || ["string", "number", "boolean"].includes(typeof input)) {
    return { received: typeof input === "string" && input.length > 200 ? `${input.slice(0, 200)}…` : input }
  }
  return { received: Array.isArray(input) ? "array" : typeof input }
}

const filterCode = (issue: SchemaIssue.Filter): string => {
  const code = (issue.filter.annotations as Record<string, unknown> | undefined)?.["code"]
  return typeof code === "string" ? code : "invalid_string"
}

const filterMessage = (issue: SchemaIssue.Filter): string => {
  const annotations = issue.filter.annotations as Record<string, unknown> | undefined
  if (typeof annotations?.["message"] === "string") return annotations["message"]
  if (typeof annotations?.["expected"] === "string") return `Expected ${annotations["expected"]}`
  return SchemaIssue.defaultCheckHook(issue) ?? "Invalid value"
}

/** A filter that said where and why itself (a nested path, its own message) is reported as it said. */
const isDetailed = (issue: SchemaIssue.Issue): boolean =>
  issue._tag === "Pointer" || (issue._tag === "InvalidValue" && typeof issue.annotations?.message === "string")

const annotation = (issue: SchemaIssue.Issue, key: "code" | "message"): string | undefined => {
  const value = issue._tag === "InvalidValue" ? (issue.annotations as Record<string, unknown> | undefined)?.[key] : undefined
  return typeof value === "string" ? value : undefined
}

export const issueToFieldErrors = (root: SchemaIssue.Issue): Array<FieldError> => {
  const out: Array<FieldError> = []
  const walk = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>) => {
    const field = formatPath(path) || "body"
    switch (issue._tag) {
      case "Pointer":
        return walk(issue.issue, [...path, ...issue.path])
      case "Composite":
        for (const nested of issue.issues) walk(nested, path)
        return
      case "Encoding":
        return walk(issue.issue, path)
      case "AnyOf":
        if (issue.issues.length > 0) return walk(issue.issues[0]!, path)
        out.push({ field, message: "Value does not match any allowed shape", code: "invalid_union", ...received(issue) })
        return
      case "Filter":
        if (isDetailed(issue.issue)) return walk(issue.issue, path)
        out.push({
          field,
          message: filterMessage(issue),
          code: filterCode(issue),
          ...received(issue)
        })
        return
      case "MissingKey":
        out.push({ field, message: `${field} is required`, code: "required" })
        return
      case "UnexpectedKey":
        out.push({ field, message: `Unknown field ${field}`, code: "unrecognized_key" })
        return
      case "InvalidType":
        out.push({ field, message: SchemaIssue.defaultLeafHook(issue), code: "invalid_type", ...received(issue) })
        return
      default:
        out.push({
          field,
          message: annotation(issue, "message") ?? SchemaIssue.defaultLeafHook(issue),
          code: annotation(issue, "code") ?? "invalid_value",
          ...received(issue)
        })
    }
  }
  walk(root, [])
  return out
}
