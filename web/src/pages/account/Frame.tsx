/** The frame of an account page: a narrow card with its title, and links below it. */
import type { ReactNode } from "react"
import { Page } from "../../components/Page.tsx"

export function AccountFrame({ title, children, footer }: { readonly title: string; readonly children: ReactNode; readonly footer?: ReactNode }) {
  return (
    <div className="mx-auto max-w-md">
      <Page title={title}>
        <div className="rounded-lg border border-slate-200 bg-white p-6 shadow-sm">{children}</div>
        {footer && <div className="mt-4 space-y-1 text-center text-sm text-slate-600">{footer}</div>}
      </Page>
    </div>
  )
}

/** The value of a form field by name (the forms here are uncontrolled: the browser validates them). */
export const fieldOf = (form: HTMLFormElement, name: string) => String(new FormData(form).get(name) ?? "")
