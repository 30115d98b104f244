/** An HttpApi served in this process behind the real gateway (request ids, the envelope), called with GETs. */
import { Context, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { afterAll } from "vitest"
import { GatewayLive } from "../../src/http/gateway.ts"

export const serveInProcess = (api: any, handlers: Layer.Layer<any, any, any>) => {
  const { dispose, handler } = HttpRouter.toWebHandler(
    Layer.mergeAll(HttpApiBuilder.layer(api).pipe(Layer.provide(handlers)), GatewayLive) as Layer.Layer<
      never,
      never,
      HttpRouter.HttpRouter
    >,
    { disableLogger: true }
  )
  afterAll(() => dispose())
  return async (path: string) => {
    const response = await handler(new Request(`http://localhost${path}`), Context.empty())
    return { response, body: (await response.json()) as unknown }
  }
}
