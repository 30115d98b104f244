/** Form pieces shared by the account and settings pages: labelled fields, a card, a mutation's outcome. */
import { type ChangeEvent, type InputHTMLAttributes, type ReactNode, useId } from "react"
import type { ApiFailure } from "../api/failure.ts"
import { shownAtFields } from "../api/fieldErrors.ts"
import { ErrorState } from "./States.tsx"

/** An input's onChange that also clears the mutation's failure: once edited, its messages no longer describe the value. */
export const changeClearing = (mutation: { readonly isError: boolean; readonly reset: () => void }, set: (value: string) => void) =>
  (event: ChangeEvent<HTMLInputElement>) => {
    if (mutation.isError) mutation.reset()
    set(event.target.value)
  }

/** A field's error under it, announced when it appears (see fieldError in api/fieldErrors.ts). */
export function FieldMessage({ id, message }: { readonly id: string; readonly message: string | undefined }) {
  return message ? <p id={id} role="alert" className="mt-1 text-sm text-red-700">{message}</p> : null
}

export function Field({ label, hint, error, ...input }: {
  readonly label: string
  readonly hint?: ReactNode
  /** The server's (or the contract's) message for this field, shown under it. */
  readonly error?: string | undefined
} & InputHTMLAttributes<HTMLInputElement>) {
  const id = useId()
  const describedBy = [error && `${id}-error`, hint && `${id}-hint`].filter(Boolean).join(" ")
  return (
    <div>
      <label htmlFor={id} className="block text-sm font-medium text-slate-700">{label}</label>
      <input
        id={id}
        className={`input mt-1 ${error ? "border-red-500" : ""}`}
        aria-invalid={error ? true : undefined}
        aria-describedby={describedBy || undefined}
        {...input}
      />
      <FieldMessage id={`${id}-error`} message={error} />
      {hint && <p id={`${id}-hint`} className="mt-1 text-xs text-slate-500">{hint}</p>}
    </div>
  )
}

export function Card({ title, children, tone = "plain" }: { readonly title?: string; readonly children: ReactNode; readonly tone?: "plain" | "danger" }) {
  const border = tone === "danger" ? "border-red-200" : "border-slate-200"
  return (
    <section aria-label={title} className={`rounded-lg border ${border} bg-white p-5 sm:p-6`}>
      {title && <h2 className={`mb-4 text-lg font-semibold ${tone === "danger" ? "text-red-800" : "text-slate-800"}`}>{title}</h2>}
      {children}
    </section>
  )
}

/**
 * A mutation's failure, shown where the form is (null while there is none). `fields` are the fields the
 * form shows errors at: a failure whose every field error is shown there needs nothing more.
 */
export function MutationError({ error, fields = [] }: { readonly error: ApiFailure | null; readonly fields?: ReadonlyArray<string> }) {
  if (!error || shownAtFields(error, fields)) return null
  return <div className="mt-4"><ErrorState failure={error} /></div>
}

export function Notice({ children }: { readonly children: ReactNode }) {
  return <div role="status" className="rounded-lg border border-green-200 bg-green-50 px-5 py-4 text-green-900">{children}</div>
}
