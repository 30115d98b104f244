/** A value that follows its input once the input has been still for `ms` (compared by JSON: trees are rebuilt on every edit). */
import { useEffect, useState } from "react"

export const useSettled = <A>(value: A, ms: number): A => {
  const [settled, setSettled] = useState(value)
  const key = JSON.stringify(value)
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms)
    return () => clearTimeout(timer)
  }, [key, ms]) // eslint-disable-line react-hooks/exhaustive-deps -- `key` is `value` compared by JSON
  return settled
}
