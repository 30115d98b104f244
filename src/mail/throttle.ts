/**
 * The per-project send throttle: a token bucket refilled at `rate` tokens per second, holding at most
 * a tenth of a second's worth (at least one), so mail leaves evenly rather than in bursts.
 */
export class TokenBucket {
  private rate: number
  private tokens: number
  private last: number

  constructor(rate: number, now: number) {
    this.rate = rate
    this.tokens = this.capacity()
    this.last = now
  }

  private capacity() {
    return Math.max(1, this.rate / 10)
  }

  /** Changes the rate, keeping the tokens already earned (up to the new capacity). */
  setRate(rate: number, now: number) {
    if (rate === this.rate) return
    this.refill(now)
    this.rate = rate
    this.tokens = Math.min(this.tokens, this.capacity())
  }

  private refill(now: number) {
    this.tokens = Math.min(this.capacity(), this.tokens + ((now - this.last) / 1000) * this.rate)
    this.last = now
  }

  /** Whole tokens available now, at most `max`, without taking them. */
  available(now: number, max: number): number {
    this.refill(now)
    return Math.min(max, Math.floor(this.tokens))
  }

  take(count: number, now: number) {
    this.refill(now)
    this.tokens -= count
  }

  /** Milliseconds until at least one whole token is available. */
  waitMs(now: number): number {
    this.refill(now)
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) / this.rate) * 1000)
  }
}
