/** What the analytics page's parts share: the range asked about, as the API's query, and how figures are shown. */
import type { Stream } from "../../../../src/domain/analytics/range.ts"

export type Range = { readonly from: string; readonly to: string; readonly tz: string; readonly stream: Stream }

export const query = (range: Range) => ({ from: range.from, to: range.to, tz: range.tz, stream: range.stream })

export const percent = (share: number) => `${(share * 100).toFixed(share > 0 && share < 0.1 ? 1 : 0)}%`
export const number = (value: number) => value.toLocaleString()
