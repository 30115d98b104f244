/**
 * TanStack Query over callApi. Keys are per project (["project", id, ...]) so switching projects never
 * shows another project's data; a 4xx is not retried (asking again gets the same answer).
 */
import { type QueryKey, useMutation, useQuery, useQueryClient, type UseQueryOptions } from "@tanstack/react-query"
import type { Effect } from "effect"
import { useParams } from "react-router"
import { type ApiClient, ApiFailure, callApi } from "./client.ts"

export const useProjectId = (): string | undefined => useParams().projectId

export const projectKey = (projectId: string | undefined, key: QueryKey): QueryKey => ["project", projectId ?? null, ...key]

export const retryUnlessClientError = (failureCount: number, error: Error): boolean =>
  !(error instanceof ApiFailure && error.isClientError) && failureCount < 2

export const useApiQuery = <A>(
  key: QueryKey,
  call: (client: ApiClient) => Effect.Effect<A, unknown>,
  options: {
    readonly enabled?: boolean
    /** A number of ms, or a function of the query (its data): polling until a job is done. */
    readonly refetchInterval?: UseQueryOptions<A, ApiFailure>["refetchInterval"]
  } = {}
) => {
  const projectId = useProjectId()
  return useQuery<A, ApiFailure>({
    queryKey: projectKey(projectId, key),
    queryFn: ({ signal }) => callApi(projectId, call, signal),
    retry: retryUnlessClientError,
    ...options
  })
}

export const useApiMutation = <A, V>(
  call: (client: ApiClient, variables: V) => Effect.Effect<A, unknown>,
  options: { readonly invalidates?: ReadonlyArray<QueryKey>; readonly onSuccess?: (result: A) => void } = {}
) => {
  const projectId = useProjectId()
  const queryClient = useQueryClient()
  return useMutation<A, ApiFailure, V>({
    mutationFn: (variables) => callApi(projectId, (client) => call(client, variables)),
    onSuccess: async (result) => {
      await Promise.all((options.invalidates ?? []).map((key) => queryClient.invalidateQueries({ queryKey: projectKey(projectId, key) })))
      options.onSuccess?.(result)
    }
  })
}
