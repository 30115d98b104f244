import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query"
import { StrictMode } from "react"
import { createRoot } from "react-dom/client"
import { RouterProvider } from "react-router"
import { ApiFailure } from "./api/failure.ts"
import { retryUnlessClientError } from "./api/hooks.ts"
import { isAccountPage, signInPath } from "./api/session.ts"
import { router } from "./routes.tsx"
import "./index.css"

// Every module has been evaluated by now: the browser tests read this mark to tell loading from rendering.
performance.mark("mailstream:modules-evaluated")

/** A 401 anywhere but on the account pages: the session is gone, so sign in and come back here. */
const onFailure = (error: unknown) => {
  const { pathname, search } = window.location
  if (error instanceof ApiFailure && error.status === 401 && !isAccountPage(pathname)) {
    void router.navigate(signInPath(pathname + search), { replace: true })
  }
}

const queryClient = new QueryClient({
  queryCache: new QueryCache({ onError: onFailure }),
  mutationCache: new MutationCache({ onError: onFailure }),
  defaultOptions: {
    queries: { retry: retryUnlessClientError, staleTime: 10_000 },
    mutations: { retry: false }
  }
})

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>
)
