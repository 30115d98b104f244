/**
 * The worker's clock for segment time windows and timers. CLOCK_OFFSET_MS shifts it (tests use it to
 * reach a window's end without waiting; operators never need it).
 */
const OFFSET = Number(process.env.CLOCK_OFFSET_MS ?? 0) || 0

export const clockNow = (): number => Date.now() + OFFSET
