import { QueryClient, QueryClientProvider } from "@tanstack/react-query"
import { StrictMode } from "react"
import { createRoot } from "react-dom/client"
import { RouterProvider } from "react-router"
import { retryUnlessClientError } from "./api/hooks.ts"
import { router } from "./routes.tsx"
import "./index.css"

const queryClient = new QueryClient({
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
