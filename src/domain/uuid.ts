/** UUID syntax, apart from ids.ts (which draws random bytes from node:crypto) so browser code can use it. */
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const isUuid = (value: string): boolean => UUID_PATTERN.test(value)
