/**
 * Stream and subject names. Every name carries NATS_PREFIX so several deployments or test runs can
 * share one NATS server. Partitioning is computed by the publisher (nats-server 2.9 has no subject
 * mapping we could rely on): partition = fnv1a(projectId) mod P, fixed per deployment.
 */

export type InKind = "track" | "contact" | "command" | "timer" | "event" | "email" | "workflow"

export const PREFIX_PATTERN = /^[A-Za-z0-9_-]{1,32}$/

/** FNV-1a, 32 bit: tiny, stable across processes and versions. */
export const fnv1a = (text: string): number => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash >>> 0
}

export const partitionOf = (projectId: string, partitions: number): number => fnv1a(projectId) % partitions

export interface StreamNames {
  readonly inStream: string
  readonly outStream: string
  readonly inSubjects: string
  readonly outSubjects: string
  readonly inSubject: (projectId: string, kind: InKind) => string
  readonly outSubject: (projectId: string, eventName: string) => string
}

export const streamNames = (prefix: string, partitions: number): StreamNames => ({
  inStream: `${prefix}_IN`,
  outStream: `${prefix}_OUT`,
  inSubjects: `${prefix}.in.>`,
  outSubjects: `${prefix}.out.>`,
  inSubject: (projectId, kind) => `${prefix}.in.${partitionOf(projectId, partitions)}.${projectId}.${kind}`,
  outSubject: (projectId, eventName) => `${prefix}.out.${projectId}.${eventName}`
})
