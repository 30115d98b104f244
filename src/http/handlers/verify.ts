/** POST /v1/verify: the checks live in src/verify (Verifier); a verification always answers 200. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Verifier } from "../../verify/Verifier.ts"
import { Api } from "../api/Api.ts"

export const VerifyHandlers = HttpApiBuilder.group(
  Api,
  "verify",
  Effect.fnUntraced(function*(handlers) {
    const verifier = yield* Verifier
    return handlers.handle(
      "verify",
      ({ payload }) => Effect.map(verifier.verify(payload.email), (data) => ({ success: true as const, data }))
    )
  })
)
