import { describe, expect, it } from "vitest"

describe("runtime", () => {
  it("runs on Node 24 (the pinned `node` package), whatever the system Node is", () => {
    expect(process.versions.node.split(".")[0]).toBe("24")
  })
})
