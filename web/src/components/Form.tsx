/** Form pieces shared by the account and settings pages: labelled fields, a card, a mutation's outcome. */
import { type InputHTMLAttributes, type ReactNode, useId } from "react"
import type { ApiFailure } from "../api/failure.ts"
import { ErrorState } from "./States.tsx"

export function Field({ label, hint, ...input }: { readonly label: string; readonly hint?: ReactNode } & InputHTMLAttributes<HTMLInputElement>) {
  const id = useId()
  return (
    <div>
      <label htmlFor={id} className="block text-sm font-medium text-slate-700">{label}</label>
      <input id={id} className="input mt-1" aria-describedby={hint ? `${id}-hint` : undefined} {...input} />
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

/** A mutation's failure, shown where the form is (null while there is none). */
export function MutationError({ error }: { readonly error: ApiFailure | null }) {
  return error ? <div className="mt-4"><ErrorState failure={error} /></div> : null
}

export function Notice({ children }: { readonly children: ReactNode }) {
  return <div role="status" className="rounded-lg border border-green-200 bg-green-50 px-5 py-4 text-green-900">{children}</div>
}
