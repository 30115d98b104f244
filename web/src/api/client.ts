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

/** Per call: the project the request is about (sent as X-Project-Id), if any. */
const ProjectOfCall = Context.Reference<string | undefined>("web/api/ProjectOfCall", { defaultValue: () => undefined })

const recordResponse = HttpClient.tap((response) =>
  Effect.map(Effect.service(Seen), (seen) => {
    seen.status = response.status
    seen.requestId = response.headers["x-request-id"] ?? null
  })
)

const withProjectHeader = HttpClient.mapRequestEffect((request: HttpClientRequest.HttpClientRequest) =>
  Effect.map(
    Effect.service(ProjectOfCall),
    (projectId) => projectId === undefined ? request : HttpClientRequest.setHeader(request, "x-project-id", projectId)
  )
)

export type CallApi = <A>(
  projectId: string | undefined,
  call: (client: ApiClient) => Effect.Effect<A, unknown>,
  signal?: AbortSignal
) => Promise<A>

/** Groups whose endpoints sit on the client itself rather than under the group's name. */
const topLevelGroups = Object.values(Api.groups).filter((group) => group.topLevel).map((group) => group.identifier as string)

/**
 * The call function for an API at `baseUrl`: the page's own origin in the app (requests stay same-origin,
 * so the session cookie goes along), a test server's address in tests.
 */
export const makeCallApi = (baseUrl?: string): CallApi => {
  const http = Effect.runSync(
    Effect.map(HttpClient.HttpClient, (client) => recordResponse(withProjectHeader(client))).pipe(Effect.provide(FetchHttpClient.layer))
  )
  /**
   * One client for every project (the project travels per call). Building a client compiles the codecs of
   * every endpoint it covers, which cost most of a first page load on a slow machine; so each endpoint is
   * built when a page first calls it (`client.contacts.list` builds that one endpoint) and kept.
   */
  const endpoints = new Map<string, unknown>()
  const groups = new Map<string, unknown>()
  let whole: ApiClient | undefined
  const wholeClient = () => (whole ??= Effect.runSync(HttpApiClient.makeWith(Api, { httpClient: http, baseUrl })) as ApiClient)
  const groupClient = (group: string) =>
    new Proxy({}, {
      get: (_, name) => {
        if (typeof name !== "string") return undefined
        const key = `${group}.${name}`
        let method = endpoints.get(key)
        if (method === undefined) {
          method = Effect.runSync(
            HttpApiClient.endpoint(Api, { group: group as never, endpoint: name as never, httpClient: http, baseUrl })
          )
          endpoints.set(key, method)
        }
        return method
      }
    })
  const client = new Proxy({} as ApiClient, {
    get: (_, name) => {
      if (typeof name !== "string" || !Object.hasOwn(Api.groups, name) || topLevelGroups.includes(name)) {
        return (wholeClient() as unknown as Record<PropertyKey, unknown>)[name]
      }
      let group = groups.get(name)
      if (group === undefined) {
        group = groupClient(name)
        groups.set(name, group)
      }
      return group
    }
  })

  /**
   * Runs one call against the API. Resolves with the decoded success; rejects with an ApiFailure whatever
   * went wrong. Aborting the signal (TanStack Query does when a query is no longer needed) interrupts it.
   */
  return async (projectId, call, signal) => {
    const seen: ResponseSeen = { status: null, requestId: null }
    const exit = await Effect.runPromiseExit(
      Effect.suspend(() => call(client)).pipe(
        Effect.provideService(Seen, seen),
        Effect.provideService(ProjectOfCall, projectId),
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
