/** A page that throws while rendering shows this instead of a blank screen; the rest of the app keeps working. */
import { Component, type ReactNode } from "react"

export class ErrorBoundary extends Component<{ readonly children: ReactNode }, { readonly error: Error | null }> {
  override state = { error: null as Error | null }

  static getDerivedStateFromError(error: Error) {
    return { error }
  }

  override render() {
    if (this.state.error) {
      return (
        <div role="alert" className="rounded-lg border border-red-200 bg-red-50 px-5 py-4 text-red-900">
          <p className="font-medium">This page failed to show.</p>
          <p className="mt-1 text-sm">{this.state.error.message}</p>
          <button type="button" className="btn-secondary mt-3" onClick={() => window.location.reload()}>Reload</button>
        </div>
      )
    }
    return this.props.children
  }
}
