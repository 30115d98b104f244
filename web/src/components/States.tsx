/** The loading, empty and error states every page shows while it has no data to show. */
import type { UseQueryResult } from "@tanstack/react-query"
import type { ReactNode } from "react"
import { Link, useParams } from "react-router"
import type { ApiFailure } from "../api/failure.ts"

export function Loading({ label = "Loading…" }: { readonly label?: string }) {
  return (
    <div role="status" aria-live="polite" className="flex items-center gap-3 py-10 text-slate-500">
      <span aria-hidden="true" className="size-4 animate-spin rounded-full border-2 border-slate-300 border-t-indigo-600" />
      {label}
    </div>
  )
}

export function Empty({ title, children }: { readonly title: string; readonly children?: ReactNode }) {
  return (
    <div className="rounded-lg border border-dashed border-slate-300 bg-white px-6 py-10 text-center">
      <p className="font-medium text-slate-700">{title}</p>
      {children && <div className="mt-2 text-sm text-slate-500">{children}</div>}
    </div>
  )
}

/** A sender domain the project has not verified (the 403 names it in `details.domain`): where to verify it. */
const unverifiedDomain = (failure: ApiFailure): string | undefined =>
  failure.status === 403 && typeof failure.details["domain"] === "string" ? failure.details["domain"] : undefined

function VerifyDomainLink({ domain }: { readonly domain: string }) {
  const { projectId } = useParams()
  return (
    <p className="mt-2 text-sm">
      Mail from <span className="font-medium">{domain}</span> needs the domain verified first:{" "}
      <Link className="font-medium underline" to={`/p/${projectId}/domains`}>add or check {domain} on the Domains page</Link>.
    </p>
  )
}

/** An API failure: its message, and the request id to quote when reporting it (none when nothing was sent). */
export function ErrorState({ failure, onRetry }: { readonly failure: ApiFailure; readonly onRetry?: () => void }) {
  const domain = unverifiedDomain(failure)
  return (
    <div role="alert" className="rounded-lg border border-red-200 bg-red-50 px-5 py-4 text-red-900">
      <p className="font-medium" data-testid="error-message">{failure.message}</p>
      {domain !== undefined && <VerifyDomainLink domain={domain} />}
      {failure.local
        ? <p className="mt-1 text-sm text-red-800">Nothing was sent: correct the value and try again.</p>
        : (
          <p className="mt-1 text-sm text-red-800">
            {/* The unverified-domain 403 carries the reference's code, INTERNAL_SERVER_ERROR: not worth showing. */}
            {failure.status > 0 ? `${failure.status}${domain === undefined ? ` ${failure.code}` : ""}` : failure.code}
            {failure.requestId && (
              <>
                {" · request id "}
                <code data-testid="request-id" className="font-mono">{failure.requestId}</code>
              </>
            )}
          </p>
        )}
      {onRetry && (
        <button type="button" onClick={onRetry} className="btn-secondary mt-3">
          Try again
        </button>
      )}
    </div>
  )
}

/** Renders a query's data, or its loading, error or empty state. */
export function QueryView<A>({
  query,
  isEmpty,
  empty,
  children
}: {
  readonly query: UseQueryResult<A, ApiFailure>
  readonly isEmpty?: (data: A) => boolean
  readonly empty?: ReactNode
  readonly children: (data: A) => ReactNode
}) {
  if (query.isPending) return <Loading />
  if (query.isError) return <ErrorState failure={query.error} onRetry={() => void query.refetch()} />
  if (isEmpty?.(query.data)) return <>{empty}</>
  return <>{children(query.data)}</>
}
