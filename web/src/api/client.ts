/**
 * The app's only way to the API: a client derived from the same HttpApi contract the server implements,
 * so a changed endpoint breaks this app's type check. Requests carry the session cookie (same origin)
 * and, inside a project, its id as X-Project-Id.
 */
import { Context, Effect, Exit } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { Api } from "../../../src/http/api/Api.ts"
import { ApiFailure, failureOfCause, type ResponseSeen } from "./failure.ts"

export type ApiClient = HttpApiClient.ForApi<typeof Api>

/** Per call: what the response said (status, x-request-id), for failures whose value does not carry it. */
const Seen = Context.Reference<ResponseSeen>("web/api/ResponseSeen", { defaultValue: () => ({ status: null, requestId: null }) })

const recordResponse = HttpClient.tap((response) =>
  Effect.map(Effect.service(Seen), (seen) => {
    seen.status = response.status
    seen.requestId = response.headers["x-request-id"] ?? null
  })
)

export type CallApi = <A>(
  projectId: string | undefined,
  call: (client: ApiClient) => Effect.Effect<A, unknown>,
  signal?: AbortSignal
) => Promise<A>

/**
 * The call function for an API at `baseUrl`: the page's own origin in the app (requests stay same-origin,
 * so the session cookie goes along), a test server's address in tests.
 */
export const makeCallApi = (baseUrl?: string): CallApi => {
  const clients = new Map<string, ApiClient>()

  /** One client per project (building one walks the whole contract, so they are kept). */
  const clientFor = (projectId: string | undefined): ApiClient => {
    const key = projectId ?? ""
    let client = clients.get(key)
    if (client === undefined) {
      client = Effect.runSync(
        HttpApiClient.make(Api, {
          baseUrl,
          transformClient: (http) => {
            const withHeader = projectId === undefined ? http : HttpClient.mapRequest(http, HttpClientRequest.setHeader("x-project-id", projectId))
            return recordResponse(withHeader)
          }
        }).pipe(Effect.provide(FetchHttpClient.layer))
      ) as ApiClient
      clients.set(key, client)
    }
    return client
  }

  /**
   * Runs one call against the API. Resolves with the decoded success; rejects with an ApiFailure whatever
   * went wrong. Aborting the signal (TanStack Query does when a query is no longer needed) interrupts it.
   */
  return async (projectId, call, signal) => {
    const seen: ResponseSeen = { status: null, requestId: null }
    const exit = await Effect.runPromiseExit(
      call(clientFor(projectId)).pipe(
        Effect.provideService(Seen, seen),
        Effect.provideService(FetchHttpClient.RequestInit, { credentials: "same-origin" })
      ),
      signal === undefined ? undefined : { signal }
    )
    if (Exit.isSuccess(exit)) return exit.value
    const failure = failureOfCause(exit.cause, seen)
    if (failure === undefined) throw new DOMException("The request was cancelled", "AbortError")
    throw await Effect.runPromise(failure)
  }
}

/** The app's calls: to the origin that served the page. */
export const callApi: CallApi = makeCallApi()

export { ApiFailure }
