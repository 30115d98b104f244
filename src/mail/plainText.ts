/**
 * The text/plain alternative of a message, made from its HTML (html-to-text). Mail with an HTML part
 * only scores as spam (SpamAssassin's MIME_HTML_ONLY), and so does a text part that differs from the
 * HTML (MPART_ALT_DIFF): links keep their targets, blocks (paragraphs, layout table rows and cells)
 * are separated by blank lines, images (the open pixel too) are dropped, headings keep their case.
 */
import { compile } from "html-to-text"

const asBlock = (selector: string) => ({ selector, format: "block" })

const convert = compile({
  // Lines are left whole: mail clients wrap text themselves, and the transfer encoding keeps the wire's lines
  // short; wrapping at 80 would part long (tracked) links from their anchor text.
  wordwrap: false,
  selectors: [
    { selector: "img", format: "skip" },
    { selector: "a", options: { hideLinkHrefIfSameAsText: true } },
    ...["h1", "h2", "h3", "h4", "h5", "h6"].map((selector) => ({ selector, options: { uppercase: false } })),
    // Templates lay mail out with tables: their rows and cells are blocks of text, not a grid to draw.
    ...["table", "tr", "td", "th"].map(asBlock)
  ]
})

/** The readable text of an HTML body; empty when it has none (no text part is sent then). */
export const htmlToPlainText = (html: string): string => convert(html).trim()
