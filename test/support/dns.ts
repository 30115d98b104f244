/**
 * A DNS server for tests (dns2) on 127.0.0.1, a random port, UDP (and TCP on the same port when it is
 * free, for answers too large for UDP). It answers from a record table that tests change at runtime:
 *
 *   const dns = await startDnsServer({ "acme.test": { MX: [{ exchange: "mx.acme.test", priority: 10 }], A: ["192.0.2.1"] } })
 *   // the service under test: DNS_SERVERS=dns.address
 *   dns.addTxt("_dmarc.acme.test", "v=DMARC1; p=none")
 *   dns.silence("slow.test")         // never answers: lookups time out
 *
 * A name in the table answers its records, or NOERROR without records (NODATA) for other types; any
 * other name is NXDOMAIN. `*.zone.test` entries answer for every name below zone.test that has no entry
 * of its own. Names are case-insensitive. Answers carry TTL 0, so nothing is cached between lookups.
 */
import dns2 from "dns2"

const { Packet } = dns2

export interface DnsRecords {
  readonly A?: ReadonlyArray<string>
  readonly AAAA?: ReadonlyArray<string>
  readonly MX?: ReadonlyArray<{ readonly exchange: string; readonly priority: number }>
  readonly NS?: ReadonlyArray<string>
  /** One string per record; longer than 255 bytes is split into character-strings (DKIM keys). */
  readonly TXT?: ReadonlyArray<string>
}

export type RecordType = keyof DnsRecords

export interface TestDnsServer {
  /** `127.0.0.1:<port>`, for DNS_SERVERS. */
  readonly address: string
  readonly port: number
  /** Every question asked, in order (lower-case name, type). */
  readonly queries: Array<{ readonly name: string; readonly type: string }>
  /** Replaces the name's records (`{}`: the name exists without records). */
  set(name: string, records: DnsRecords): void
  /** Removes the name: NXDOMAIN from now on. */
  remove(name: string): void
  addTxt(name: string, value: string): void
  /** Removes one TXT value, or all of the name's TXT records. */
  removeTxt(name: string, value?: string): void
  /** Drops questions for the name (all types, or only these), so lookups time out. */
  silence(name: string, types?: ReadonlyArray<RecordType>): void
  unsilence(name: string): void
  close(): Promise<void>
}

const TYPE_NAMES = new Map<number, RecordType>([
  [Packet.TYPE.A, "A"],
  [Packet.TYPE.AAAA, "AAAA"],
  [Packet.TYPE.MX, "MX"],
  [Packet.TYPE.NS, "NS"],
  [Packet.TYPE.TXT, "TXT"]
])

/** RFC 1035 RCODE 3 (dns2's `Packet.RCODE` is missing from its type declarations). */
const NXDOMAIN = 3

const normalize = (name: string) => name.toLowerCase().replace(/\.$/, "")

/** TXT character-strings are at most 255 bytes each. */
const chunks = (value: string): Array<Buffer> => {
  const bytes = Buffer.from(value, "utf8")
  const out: Array<Buffer> = []
  for (let at = 0; at < bytes.length; at += 255) out.push(bytes.subarray(at, at + 255))
  return out.length > 0 ? out : [Buffer.alloc(0)]
}

const resources = (name: string, type: RecordType, records: DnsRecords): Array<Record<string, unknown>> => {
  const base = { name, type: Packet.TYPE[type], class: Packet.CLASS.IN, ttl: 0 }
  switch (type) {
    case "A":
    case "AAAA":
      return (records[type] ?? []).map((address) => ({ ...base, address }))
    case "MX":
      return (records.MX ?? []).map(({ exchange, priority }) => ({ ...base, exchange, priority }))
    case "NS":
      return (records.NS ?? []).map((ns) => ({ ...base, ns }))
    case "TXT":
      return (records.TXT ?? []).map((value) => ({ ...base, data: chunks(value) }))
  }
}

export const startDnsServer = async (initial: Record<string, DnsRecords> = {}): Promise<TestDnsServer> => {
  const table = new Map<string, DnsRecords>(Object.entries(initial).map(([name, records]) => [normalize(name), records]))
  const silenced = new Map<string, ReadonlySet<RecordType> | "all">()
  const queries: Array<{ name: string; type: string }> = []

  const find = (name: string): DnsRecords | undefined => {
    const exact = table.get(name)
    if (exact) return exact
    for (let dot = name.indexOf("."); dot >= 0; dot = name.indexOf(".", dot + 1)) {
      const wildcard = table.get(`*${name.slice(dot)}`)
      if (wildcard) return wildcard
    }
    return undefined
  }

  const handle: dns2.DnsHandler = (request, send) => {
    const question = request.questions[0]
    if (!question) return
    const name = normalize(question.name)
    const type = TYPE_NAMES.get(question.type)
    queries.push({ name, type: type ?? String(question.type) })
    const silence = silenced.get(name)
    if (silence === "all" || (type && silence?.has(type))) return
    const response = Packet.createResponseFromRequest(request)
    const records = find(name)
    if (!records) response.header.rcode = NXDOMAIN
    else if (type) response.answers.push(...(resources(question.name, type, records) as unknown as Array<dns2.Packet.Resource>))
    void send(response).catch(() => undefined)
  }

  const udp = dns2.createUDPServer(handle)
  await udp.listen(0, "127.0.0.1")
  const port = udp.address().port
  const tcp = dns2.createTCPServer(handle)
  const tcpListening = await new Promise<boolean>((resolve) => {
    tcp.once("error", () => resolve(false))
    tcp.listen(port, "127.0.0.1", () => resolve(true))
  })

  const update = (name: string, change: (records: DnsRecords) => DnsRecords) => {
    const key = normalize(name)
    table.set(key, change(table.get(key) ?? {}))
  }

  return {
    address: `127.0.0.1:${port}`,
    port,
    queries,
    set: (name, records) => void table.set(normalize(name), records),
    remove: (name) => void table.delete(normalize(name)),
    addTxt: (name, value) => update(name, (records) => ({ ...records, TXT: [...(records.TXT ?? []), value] })),
    removeTxt: (name, value) =>
      update(name, (records) => ({ ...records, TXT: value === undefined ? [] : (records.TXT ?? []).filter((v) => v !== value) })),
    silence: (name, types) => void silenced.set(normalize(name), types ? new Set(types) : "all"),
    unsilence: (name) => void silenced.delete(normalize(name)),
    close: async () => {
      await new Promise<void>((resolve) => udp.close(() => resolve()))
      if (tcpListening) await new Promise<void>((resolve) => tcp.close(() => resolve()))
    }
  }
}
