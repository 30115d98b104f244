/** Custom-data rules as the API answers them, shared by the handlers that write contact data (contacts, track, send). */
import { Effect } from "effect"
import { dataPayloadProblems } from "../../domain/customData.ts"
import type { ContactDataTooLarge } from "../../store/Contacts.ts"
import { type FieldError } from "../errors.ts"
import { ValidationFailed } from "../api/statusErrors.ts"

/** Data limits (key count, key length, size) that the schema cannot express, as field errors. */
export const dataErrors = (
  data: Readonly<Record<string, unknown>> | undefined,
  options?: { readonly storableChecked?: boolean }
): Array<FieldError> =>
  data === undefined ? [] : dataPayloadProblems(data, options).map(([field, message]) => ({ field, message, code: "too_big" }))

/** The same limits as a 422. */
export const validateData = (data: Readonly<Record<string, unknown>> | undefined) => {
  const errors = dataErrors(data)
  return errors.length === 0 ? Effect.void : Effect.fail(ValidationFailed.of(errors))
}

/** The contact data limit as the API answers it. */
export const refuseOversizedData = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.catchIf(
      (error: E): error is Extract<E, ContactDataTooLarge> => (error as { _tag?: unknown })?._tag === "ContactDataTooLarge",
      (error) => Effect.fail(ValidationFailed.contactDataTooLarge(error.limitBytes)),
      Effect.fail
    )
  )
