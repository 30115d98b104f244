/**
 * The client address behind trusted proxies, as proxies write X-Forwarded-For (end to end:
 * test/accounts/signInProtection.test.ts): the peer unless it is trusted, then the right-most entry a
 * trusted proxy did not add; ports and brackets as some proxies add them; garbage stops the walk.
 */
import { describe, expect, it } from "vitest"
import { addressBucket, clientAddressResolver } from "../../src/lib/clientAddress.ts"

const behind = clientAddressResolver(["10.0.0.0/8", "::1"])

describe("clientAddressResolver", () => {
  it("believes X-Forwarded-For only from a trusted peer", () => {
    expect(behind("203.0.113.9", "198.51.100.1")).toBe("203.0.113.9")
    expect(clientAddressResolver([])("10.0.0.2", "198.51.100.1")).toBe("10.0.0.2")
    expect(behind("10.0.0.2", undefined)).toBe("10.0.0.2")
    expect(behind("10.0.0.2", "198.51.100.1")).toBe("198.51.100.1")
  })

  it("reads from the right, past trusted hops; what the client wrote on the left does not count", () => {
    expect(behind("10.0.0.2", "6.6.6.6, 198.51.100.1, 10.1.1.1")).toBe("198.51.100.1")
    expect(behind("::1", "10.9.9.9, 10.1.1.1")).toBe("10.9.9.9")
  })

  it("takes the forms proxies write, and stops at an entry that is no address", () => {
    expect(behind("::ffff:10.0.0.2", "198.51.100.1:5123")).toBe("198.51.100.1")
    expect(behind("10.0.0.2", "[2001:db8::7]:443")).toBe("2001:db8::7")
    expect(behind("10.0.0.2", "2001:DB8:0:0::7")).toBe("2001:db8::7")
    expect(behind("10.0.0.2", "6.6.6.6, unknown")).toBe("10.0.0.2")
    expect(behind("10.0.0.2", "6.6.6.6, unknown, 10.1.1.1")).toBe("10.1.1.1")
  })

  it("counts IPv4 clients by address and IPv6 clients by their /64", () => {
    expect(addressBucket("198.51.100.1")).toBe("198.51.100.1")
    expect(addressBucket("2001:db8:1:2:aaaa::1")).toBe(addressBucket("2001:db8:1:2:bbbb::9"))
    expect(addressBucket("2001:db8:1:2::1")).not.toBe(addressBucket("2001:db8:1:3::1"))
  })
})
