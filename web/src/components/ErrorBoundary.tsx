/** A page that throws while rendering shows this instead of a blank screen; the rest of the app keeps working. */
import { Component, type ReactNode } from "react"
import { useRouteError } from "react-router"

function Failed({ error }: { readonly error: unknown }) {
  return (
    <div role="alert" className="rounded-lg border border-red-200 bg-red-50 px-5 py-4 text-red-900">
      <p className="font-medium">This page failed to show.</p>
      <p className="mt-1 text-sm">{error instanceof Error ? error.message : String(error)}</p>
      <button type="button" className="btn-secondary mt-3" onClick={() => window.location.reload()}>Reload</button>
    </div>
  )
}

/** The router's fallback for a failure outside a page (in a layout): the same message, on its own. */
export function RouteError() {
  return (
    <main className="mx-auto max-w-2xl px-4 py-8">
      <Failed error={useRouteError()} />
    </main>
  )
}

export class ErrorBoundary extends Component<{ readonly children: ReactNode }, { readonly error: Error | null }> {
  override state = { error: null as Error | null }

  static getDerivedStateFromError(error: Error) {
    return { error }
  }

  override render() {
    if (this.state.error) return <Failed error={this.state.error} />
    return this.props.children
  }
}
