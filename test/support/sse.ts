/** A server-sent events client over a raw HTTP request, as a browser's EventSource reads the stream, for tests. */
import { request as httpRequest, type IncomingMessage } from "node:http"

export interface SseStream {
  readonly status: number
  readonly headers: IncomingMessage["headers"]
  /** The body when the answer was not a stream (an error envelope). */
  readonly body: string
  /** Every `data:` payload so far, parsed. */
  readonly events: Array<any>
  /** How many comment lines (heartbeats) so far. */
  readonly comments: () => number
  /** Resolves with the first event (already received or to come) that `match` accepts. */
  readonly waitFor: (match: (event: any) => boolean, timeoutMs?: number) => Promise<any>
  /** Resolves once the server ended or cut the connection. */
  readonly closed: Promise<void>
  /** Stops reading (the socket's buffers fill up, as for a client that hangs). */
  readonly pause: () => void
  readonly resume: () => void
  readonly close: () => void
}

export const openSse = (url: string, headers: Record<string, string> = {}): Promise<SseStream> =>
  new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { accept: "text/event-stream", ...headers } }, (res) => {
      const events: Array<any> = []
      let comments = 0
      let body = ""
      let buffer = ""
      const waiters = new Set<() => void>()
      const closed = new Promise<void>((done) => {
        res.once("close", () => done())
        res.once("error", () => done())
      })
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        if (!String(res.headers["content-type"]).startsWith("text/event-stream")) {
          body += chunk
          return
        }
        buffer += chunk
        let end: number
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) comments++
            else if (line.startsWith("data: ")) events.push(JSON.parse(line.slice(6)))
          }
        }
        for (const waiter of waiters) waiter()
      })
      const stream: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        get body() {
          return body
        },
        events,
        comments: () => comments,
        waitFor: (match, timeoutMs = 5_000) =>
          new Promise((found, fail) => {
            const check = () => {
              const event = events.find(match)
              if (event === undefined) return false
              waiters.delete(check)
              clearTimeout(timer)
              found(event)
              return true
            }
            const timer = setTimeout(() => {
              waiters.delete(check)
              fail(new Error(`no matching event in ${timeoutMs} ms; got ${JSON.stringify(events).slice(0, 500)}`))
            }, timeoutMs)
            if (!check()) waiters.add(check)
          }),
        closed,
        pause: () => res.pause(),
        resume: () => res.resume(),
        close: () => req.destroy()
      }
      if (String(res.headers["content-type"]).startsWith("text/event-stream")) resolve(stream)
      else res.on("end", () => resolve(stream))
    })
    req.on("error", reject)
    req.end()
  })
