/// <reference lib="dom" />
/**
 * axe-core (Deque's accessibility engine) run inside a page: the rules of WCAG 2.1 A and AA and axe's
 * best practices, and the findings whose impact is serious or critical, each with the elements it names.
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import type { Page } from "playwright-core"

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

export interface AxeFinding {
  readonly id: string
  readonly impact: string
  readonly help: string
  readonly targets: ReadonlyArray<string>
}

/** The serious and critical findings of axe on the page as it is now. */
export const seriousAxeFindings = async (page: Page): Promise<ReadonlyArray<AxeFinding>> => {
  if (!(await page.evaluate(() => "axe" in window))) await page.addScriptTag({ content: axeSource })
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (context: Document, options: unknown) => Promise<any> } }).axe
    const results = await axe.run(document, {
      runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] },
      resultTypes: ["violations"]
    })
    return (results.violations as Array<any>)
      .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
      .map((violation) => ({
        id: violation.id,
        impact: violation.impact,
        help: violation.help,
        targets: violation.nodes.map((node: { target: Array<string> }) => node.target.join(" "))
      }))
  })
}

/** The same findings, one line each (for `toEqual([])`, which then prints what was found). */
export const seriousFindings = async (page: Page): Promise<Array<string>> =>
  (await seriousAxeFindings(page)).map((finding) => `${finding.id}: ${finding.help} (${finding.targets.join(", ")})`)
