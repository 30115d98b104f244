/**
 * Lanes: how one project's stream traffic spreads over partitions, and so over workers.
 *
 * - A contact's lane is its id's last byte modulo L (LANES_PER_PROJECT, a power of two up to 256, fixed
 *   per deployment). Ids are UUIDs whose last byte is random (v4 and v7), so lanes are even, and the
 *   same rule is one expression in SQL (`get_byte(uuid_send(id), 15)`), so bulk work can select a lane's
 *   contacts by index (see migrations: contacts_lane).
 * - A lane's partition is FNV-1a("<projectId>/<lane>") modulo P (PARTITIONS): a busy project's lanes
 *   land on many partitions, each leased by one worker; each contact's messages stay on one partition,
 *   in order.
 * - Lane 0 is the project's owner lane: project-wide work that must run once (the sender and its
 *   throttle, campaign fan-out, scheduled campaigns) belongs to the worker that leases its partition.
 */

/** FNV-1a, 32 bit: tiny, stable across processes and versions. */
export const fnv1a = (text: string): number => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash >>> 0
}

export const OWNER_LANE = 0

/** A UUID's last byte, 0..255: the key lanes are cut from. */
export const laneKeyOf = (contactId: string): number => {
  const key = Number.parseInt(contactId.slice(-2), 16)
  return Number.isNaN(key) ? fnv1a(contactId) & 0xff : key
}

export const isValidLaneCount = (lanes: number): boolean =>
  Number.isInteger(lanes) && lanes >= 1 && lanes <= 256 && (lanes & (lanes - 1)) === 0

export interface Lanes {
  /** L: lanes per project. */
  readonly count: number
  readonly partitions: number
  readonly laneOf: (contactId: string) => number
  readonly partitionOf: (projectId: string, lane: number) => number
  /** Every lane's partition, indexed by lane (for SQL that routes by a contact id it computes). */
  readonly partitionsOf: (projectId: string) => ReadonlyArray<number>
  /** The lane keys (0..255) that make up a lane, for index scans of its contacts. */
  readonly keysOf: (lane: number) => ReadonlyArray<number>
}

export const makeLanes = (count: number, partitions: number): Lanes => {
  const cache = new Map<string, ReadonlyArray<number>>()
  const partitionsOf = (projectId: string) => {
    let found = cache.get(projectId)
    if (!found) {
      found = Array.from({ length: count }, (_, lane) => fnv1a(`${projectId}/${lane}`) % partitions)
      if (cache.size > 100_000) cache.clear()
      cache.set(projectId, found)
    }
    return found
  }
  return {
    count,
    partitions,
    laneOf: (contactId) => laneKeyOf(contactId) % count,
    partitionOf: (projectId, lane) => partitionsOf(projectId)[lane]!,
    partitionsOf,
    keysOf: (lane) => Array.from({ length: 256 / count }, (_, i) => lane + i * count)
  }
}

/** The stream IN subject of one lane of a project: `<prefix>.lane.<partition>.<projectId>.<lane>.<kind>`. */
export const laneSubject = (prefix: string, lanes: Lanes, projectId: string, lane: number, kind: string): string =>
  `${prefix}.lane.${lanes.partitionOf(projectId, lane)}.${projectId}.${lane}.${kind}`
