/// <reference lib="dom" />
/** axe-core run in the page as it is now: its serious and critical findings, one line each. */
import { createRequire } from "node:module"
import type { Page } from "playwright-core"

const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js")

export const seriousFindings = async (page: Page): Promise<Array<string>> => {
  await page.addScriptTag({ path: AXE })
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (context: Document) => Promise<{ violations: Array<any> }> } }).axe
    return (await axe.run(document)).violations
  })
  return violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map((violation) => `${violation.id}: ${violation.help} (${violation.nodes.map((node: any) => node.target.join(" ")).join(", ")})`)
}
