/**
 * Serves the web dashboard built into web/dist: its page (index.html, never cached, so a new build is
 * picked up at once) at `/` and under each app root, and its content-hashed files under /assets with a
 * year-long immutable cache. Everything else stays the API's: an unknown path answers the 404 envelope.
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse, HttpStaticServer } from "effect/http"
import { join } from "node:path"
import { INSTALL_ROOT } from "../lib/installation.ts"
import { DASHBOARD_ASSETS, DASHBOARD_ROOTS } from "./api/dashboard.ts"

export const WEB_DIST = join(INSTALL_ROOT, "web/dist")

const PAGE_HEADERS = { "cache-control": "no-cache", "x-content-type-options": "nosniff" }

/**
 * Whether a request path climbs with `..` (raw or percent-encoded). The static server keeps every path
 * inside web/dist; this keeps /assets/ requests inside web/dist/assets (index.html must not be served
 * with the assets' year-long cache).
 */
const climbs = (url: string): boolean => {
  try {
    return decodeURIComponent(url.split("?")[0]!).split(/[\\/]/).includes("..")
  } catch {
    return true
  }
}

export const DashboardRoutes = Layer.effectDiscard(Effect.gen(function*() {
  const router = yield* HttpRouter.HttpRouter
  const page = HttpServerResponse.file(`${WEB_DIST}/index.html`, { contentType: "text/html; charset=utf-8" }).pipe(
    Effect.map(HttpServerResponse.setHeaders(PAGE_HEADERS)),
    // No build (web/dist missing): a defect, which the gateway logs and answers with the 500 envelope.
    Effect.orDie
  )
  yield* router.add("GET", "/", page)
  // The router's `/p/*` matches `/p` itself too.
  for (const root of DASHBOARD_ROOTS) yield* router.add("GET", `${root}/*`, page)
  // The static server resolves the request path under web/dist and refuses anything outside it.
  const assets = yield* HttpStaticServer.make({
    root: WEB_DIST,
    index: undefined,
    cacheControl: "public, max-age=31536000, immutable"
  })
  yield* router.add(
    "GET",
    `${DASHBOARD_ASSETS}/*`,
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      climbs(request.url)
        ? Effect.fail(new HttpServerError.HttpServerError({ reason: new HttpServerError.RouteNotFound({ request }) }))
        : Effect.map(assets, HttpServerResponse.setHeader("x-content-type-options", "nosniff")))
  )
}))
