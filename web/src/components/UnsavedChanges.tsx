/**
 * Guards unsaved edits: while `dirty`, leaving for another page of the app asks first (a route change is
 * held by react-router's blocker), and closing or reloading the tab makes the browser ask (beforeunload).
 * The page a save itself leads to passes: navigate there with `{ state: SAVED }` (the save's render, which
 * makes `dirty` false, comes after the navigation).
 */
import { useEffect } from "react"
import { useBlocker } from "react-router"
import { Confirm } from "./Confirm.tsx"

export const SAVED = { saved: true } as const

export function UnsavedChanges({ dirty, what }: { readonly dirty: boolean; readonly what: string }) {
  const blocker = useBlocker(({ currentLocation, nextLocation }) =>
    dirty && currentLocation.pathname !== nextLocation.pathname && (nextLocation.state as typeof SAVED | null)?.saved !== true
  )
  useEffect(() => {
    if (!dirty) return
    const warn = (event: BeforeUnloadEvent) => event.preventDefault()
    window.addEventListener("beforeunload", warn)
    return () => window.removeEventListener("beforeunload", warn)
  }, [dirty])
  return (
    <Confirm
      open={blocker.state === "blocked"}
      title="Leave without saving?"
      action="Leave without saving"
      danger
      onConfirm={() => blocker.proceed?.()}
      onCancel={() => blocker.reset?.()}
    >
      {`The changes to this ${what} are not saved: leaving now loses them.`}
    </Confirm>
  )
}
