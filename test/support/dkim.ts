/**
 * DKIM checks without DNS: an RSA key pair for `s1._domainkey.acme.test`, and mailauth's verdicts on a
 * message, the selector's TXT record answered from the key.
 */
import { authenticate } from "mailauth"
import { generateKeyPairSync } from "node:crypto"

export const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
const record = `v=DKIM1; k=rsa; p=${publicKey.export({ type: "spki", format: "der" }).toString("base64")}`

/** Each DKIM signature's result ("pass", "fail", …), as a receiver holding the public key sees it. */
export const dkimResults = async (raw: Buffer) => {
  const result = await authenticate(raw, {
    trustReceived: false,
    ip: "127.0.0.1",
    helo: "test",
    sender: "news@acme.test",
    resolver: async (name: string, type: string) => {
      if (type === "TXT" && name === "s1._domainkey.acme.test") return [[record]]
      throw Object.assign(new Error(`no ${type} ${name}`), { code: "ENOTFOUND" })
    }
  })
  return result.dkim.results.map((each: { status: { result: string } }) => each.status.result)
}
