/**
 * Live updates: one EventSource per tab on GET /projects/:id/live (server-sent events), shared by every
 * component of the project's pages through a context. Pages subscribe with `useLiveEvents` or, to refetch
 * their queries when something they show changed, `useLiveRefresh`. The stream reconnects with backoff
 * (1 s doubling to 30 s, jittered); after a reconnection every subscriber gets `resync`, since events may
 * have been missed meanwhile. Without a stream (refused, offline) pages still work: they just wait for the
 * next reload or refetch on focus.
 */
import { type QueryKey, useQueryClient } from "@tanstack/react-query"
import { Schema } from "effect"
import { createContext, type ReactNode, useContext, useEffect, useMemo, useRef } from "react"
import { LiveEvent } from "../../../src/http/api/live.ts"
import { projectKey, useProjectId } from "./hooks.ts"

export type { LiveEvent }

type Listener = (event: LiveEvent) => void

interface LiveEvents {
  readonly subscribe: (listener: Listener) => () => void
}

const LiveContext = createContext<LiveEvents | null>(null)
const isLiveEvent = Schema.is(LiveEvent)

const FIRST_RETRY_MS = 1_000
const LAST_RETRY_MS = 30_000

/** Opens the project's stream for as long as it is mounted (the project layout), and hands its events on. */
export function LiveEventsProvider({ projectId, children }: { readonly projectId: string; readonly children: ReactNode }) {
  const listeners = useRef(new Set<Listener>())
  const value = useMemo<LiveEvents>(() => ({
    subscribe: (listener) => {
      listeners.current.add(listener)
      return () => listeners.current.delete(listener)
    }
  }), [])

  useEffect(() => {
    if (projectId === "" || typeof EventSource === "undefined") return
    let source: EventSource | undefined
    let retry: ReturnType<typeof setTimeout> | undefined
    let failures = 0
    let connectedBefore = false
    const dispatch = (event: LiveEvent) => {
      for (const listener of [...listeners.current]) listener(event)
    }
    const connect = () => {
      source = new EventSource(`/projects/${encodeURIComponent(projectId)}/live`)
      source.onmessage = (message) => {
        let event: unknown
        try {
          event = JSON.parse(message.data)
        } catch {
          return
        }
        if (!isLiveEvent(event)) return
        if (event.type === "ready") {
          failures = 0
          // What changed while the stream was down is unknown: everything shown is refetched.
          if (connectedBefore) dispatch({ type: "resync" })
          connectedBefore = true
        }
        dispatch(event)
      }
      // EventSource retries some failures itself and gives up on others (a 4xx): either way, ours decide.
      source.onerror = () => {
        source?.close()
        const delay = Math.min(LAST_RETRY_MS, FIRST_RETRY_MS * 2 ** failures)
        failures++
        retry = setTimeout(connect, delay / 2 + Math.random() * (delay / 2))
      }
    }
    connect()
    return () => {
      clearTimeout(retry)
      source?.close()
    }
  }, [projectId])

  return <LiveContext.Provider value={value}>{children}</LiveContext.Provider>
}

/**
 * Calls `onEvent` for each live event of the current project that `filter` accepts, and for every
 * `resync`. Both may change between renders; the subscription stays.
 */
export const useLiveEvents = (filter: (event: LiveEvent) => boolean, onEvent: (event: LiveEvent) => void) => {
  const live = useContext(LiveContext)
  const latest = useRef({ filter, onEvent })
  latest.current = { filter, onEvent }
  useEffect(() => live?.subscribe((event) => {
    if (event.type === "resync" || latest.current.filter(event)) latest.current.onEvent(event)
  }), [live])
}

/**
 * Refetches the project's queries under `keys` (prefixes, as `invalidates` takes them) when a live
 * event `filter` accepts arrives: at most once per `waitMs`, the first `waitMs` after the event, so a
 * burst of events (a campaign sending) costs one refetch.
 */
export const useLiveRefresh = (filter: (event: LiveEvent) => boolean, keys: ReadonlyArray<QueryKey>, waitMs = 500) => {
  const projectId = useProjectId()
  const queryClient = useQueryClient()
  const pending = useRef<ReturnType<typeof setTimeout> | undefined>(undefined)
  const latestKeys = useRef(keys)
  latestKeys.current = keys
  useEffect(() => () => clearTimeout(pending.current), [])
  useLiveEvents(filter, () => {
    if (pending.current !== undefined) return
    pending.current = setTimeout(() => {
      pending.current = undefined
      for (const key of latestKeys.current) void queryClient.invalidateQueries({ queryKey: projectKey(projectId, key) })
    }, waitMs)
  })
}

/** Filters: the project's data changed (any page's numbers may have moved). */
export const anyChange = (event: LiveEvent): boolean => event.type === "changed" || event.type === "event"

/** A change of the project's data, or an emitted event about this segment (its entries and exits). */
export const segmentChange = (segmentId: string) => (event: LiveEvent): boolean =>
  event.type === "changed" || (event.type === "event" && event.segmentId === segmentId)

/** A change of the project's data, or an email event (of this email, when one is named). */
export const mailChange = (emailId?: string) => (event: LiveEvent): boolean =>
  event.type === "changed" ||
  (event.type === "event" && event.name.startsWith("email.") && (emailId === undefined || event.emailId === emailId))

/** A change of the project's data, or an emitted event about this campaign's mail. */
export const campaignChange = (campaignId: string) => (event: LiveEvent): boolean =>
  event.type === "changed" || (event.type === "event" && event.campaignId === campaignId)
