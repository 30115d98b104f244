import { JetStreamApiError } from "@nats-io/jetstream"
import { describe, expect, it } from "vitest"
import { isRefusal } from "../../src/stream/OutboxRelay.ts"

const apiError = (code: number, err_code: number, description: string) => new JetStreamApiError({ code, err_code, description })

describe("the outbox relay's verdict on a publish error", () => {
  it("sets aside a message JetStream refuses for itself", () => {
    expect(isRefusal(apiError(400, 10054, "maximum message size exceeded"))).toBe(true)
    expect(isRefusal(Object.assign(new Error("max_payload exceeded"), { name: "InvalidArgumentError" }))).toBe(true)
  })

  it("waits, keeping the row, while the store is full or the server is not ready", () => {
    expect(isRefusal(apiError(400, 10002, "resource limits exceeded for account"))).toBe(false)
    expect(isRefusal(apiError(503, 10023, "insufficient resources"))).toBe(false)
    expect(isRefusal(apiError(500, 10047, "insufficient storage resources available"))).toBe(false)
    expect(isRefusal(apiError(503, 10077, "stream store failed"))).toBe(false)
    expect(isRefusal(apiError(503, 10008, "JetStream system temporarily unavailable"))).toBe(false)
    expect(isRefusal(new Error("TIMEOUT"))).toBe(false)
  })
})
