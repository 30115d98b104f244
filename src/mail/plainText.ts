/**
 * The text/plain alternative of a message, made from its HTML (html-to-text). Mail with an HTML part
 * only scores as spam (SpamAssassin's MIME_HTML_ONLY), and so does a text part that differs from the
 * HTML (MPART_ALT_DIFF): links keep their targets, blocks (paragraphs, layout table rows and cells)
 * are separated by blank lines, images (the open pixel too) are dropped, headings keep their case.
 */
import { compile } from "html-to-text"

/**
 * HTML past either bound gets no text part. The conversion runs in a compose thread (src/mail/composeRaw.ts)
 * and costs about 10 µs of CPU per tag (measured on the 2-core development machine): these bounds keep one
 * message under about 50 ms, far above real mail (a 16 KB newsletter has a few hundred tags and takes
 * 0.5 ms; Gmail clips HTML past ~100 KB), while a 5 MB body of tiny elements would take seconds.
 */
export const MAX_TEXT_SOURCE_CHARS = 512 * 1024
export const MAX_TEXT_SOURCE_TAGS = 5_000

const asBlock = (selector: string) => ({ selector, format: "block" })

const convert = compile({
  // Lines are left whole: mail clients wrap text themselves, and the transfer encoding keeps the wire's lines
  // short; wrapping at 80 would part long (tracked) links from their anchor text.
  wordwrap: false,
  // Deeper nesting is cut short ("..."), so a hostile body cannot exhaust the stack.
  limits: { maxDepth: 100 },
  selectors: [
    { selector: "img", format: "skip" },
    { selector: "a", options: { hideLinkHrefIfSameAsText: true } },
    ...["h1", "h2", "h3", "h4", "h5", "h6"].map((selector) => ({ selector, options: { uppercase: false } })),
    // Templates lay mail out with tables: their rows and cells are blocks of text, not a grid to draw.
    ...["table", "tr", "td", "th"].map(asBlock)
  ]
})

const tagsIn = (html: string, atMost: number) => {
  let count = 0
  for (let at = html.indexOf("<"); at !== -1 && count <= atMost; at = html.indexOf("<", at + 1)) count++
  return count
}

/** The readable text of an HTML body; empty when it has none, or is past the bounds (no text part is sent then). */
export const htmlToPlainText = (html: string): string =>
  html.length > MAX_TEXT_SOURCE_CHARS || tagsIn(html, MAX_TEXT_SOURCE_TAGS) > MAX_TEXT_SOURCE_TAGS ? "" : convert(html).trim()
