/**
 * Where a failure's field errors go: each at the field it names (`email`, `body`), and the rest (fields
 * the form has no input for) with the failure as a whole.
 */
import type { ApiFailure, FieldError } from "./failure.ts"

/** True when `path` is the field or inside it (`data` covers `data.plan` and `data[0]`). */
const isWithin = (path: string, field: string) => path === field || path.startsWith(`${field}.`) || path.startsWith(`${field}[`)

/** The messages of a failure for one field, joined; undefined when it names none there. */
export const fieldError = (
  failure: { readonly fieldErrors: ReadonlyArray<FieldError> } | null | undefined,
  field: string
): string | undefined => {
  const messages = (failure?.fieldErrors ?? []).filter((error) => isWithin(error.field, field)).map((error) => error.message)
  return messages.length === 0 ? undefined : messages.join("; ")
}

/** True when every field error of the failure is shown at one of `fields` (so it needs no message of its own). */
export const shownAtFields = (failure: ApiFailure, fields: ReadonlyArray<string>): boolean =>
  failure.fieldErrors.length > 0 && failure.fieldErrors.every((error) => fields.some((field) => isWithin(error.field, field)))
