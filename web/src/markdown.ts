/**
 * Markdown from notes and models, rendered to Preact nodes without ever parsing HTML.
 *
 * The contract: nothing in the text can run. There is no innerHTML anywhere: raw HTML such as
 * `<script>` or `<img onerror=...>` stays visible text; a link's address is kept only when it is
 * http(s), mailto or obsidian (a `javascript:` or `data:` link is shown as inert text); images
 * are links, never loaded. `[[Note]]`, `[[Note|alias]]` and `[[Note#Heading]]` become
 * `obsidian://open?vault=...&file=...` links. Supported: headings, paragraphs, lists, quotes,
 * fenced code, rules, `code`, **bold**, *italic*, ~~strike~~, links.
 */

import { type ComponentChild, type ComponentChildren, h } from "preact";

const SAFE_SCHEMES = ["http:", "https:", "mailto:"];
// Of Obsidian's own addresses only "open a note": others (a plugin's, such as advanced-uri's
// commands) would run something in Obsidian at one click on a model's answer.
const OBSIDIAN_OPEN = "obsidian://open?";

export function obsidianUri(vault: string, file: string): string {
  return `obsidian://open?vault=${encodeURIComponent(vault)}&file=${encodeURIComponent(file)}`;
}

/** The address to put in href, or null when it could run code or is not one we open. */
export function safeHref(raw: string, vault: string): string | null {
  const url = raw.trim().replace(/^<|>$/g, "");
  // Browsers ignore control characters and whitespace inside a scheme ("java\tscript:").
  const squeezed = url.replace(/[\u0000-\u0020\u007f]/g, "").toLowerCase();
  const scheme = /^([a-z][a-z0-9+.-]*):/.exec(squeezed)?.[1];
  if (scheme === undefined) {
    if (squeezed.startsWith("//")) return null;
    if (url.startsWith("#")) return null;
    // A relative link in a note names another note of the vault.
    const file = decodeSafe(url.split("#")[0] ?? "");
    return file ? obsidianUri(vault, file) : null;
  }
  if (scheme === "obsidian") return squeezed.startsWith(OBSIDIAN_OPEN) ? url : null;
  return SAFE_SCHEMES.includes(`${scheme}:`) ? url : null;
}

function decodeSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Text with its control characters (NUL, ESC, ...; not tab or newline) written as escapes
 * (`\x1b`), so they read as what they are instead of empty boxes. */
export function visible(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

export function renderMarkdown(text: string, vault: string): ComponentChild {
  const lines = visible(text.replace(/\r\n?/g, "\n")).split("\n");
  // A note's frontmatter is shown as its YAML, not as a rule and a paragraph.
  const end = lines[0] === "---" ? lines.indexOf("---", 1) : -1;
  const properties = end > 0 ? h("pre", { class: "frontmatter" }, lines.slice(1, end).join("\n")) : null;
  return h("div", { class: "md" }, properties, blocks(end > 0 ? lines.slice(end + 1) : lines, vault));
}

function blocks(lines: string[], vault: string): ComponentChild[] {
  const out: ComponentChild[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? "";
    const fence = /^\s*(```|~~~)\s*([\w+-]*)/.exec(line);
    if (fence) {
      const body: string[] = [];
      i += 1;
      while (i < lines.length && !(lines[i] ?? "").trim().startsWith(fence[1] ?? "```")) body.push(lines[i++] ?? "");
      i += 1;
      out.push(h("pre", { class: "code", "data-lang": fence[2] || undefined }, h("code", null, body.join("\n"))));
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      const level = Math.min((heading[1] ?? "#").length + 2, 6);
      out.push(h(`h${level}`, null, inline(heading[2] ?? "", vault)));
      i += 1;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      out.push(h("hr", null));
      i += 1;
      continue;
    }
    if (/^\s*>/.test(line)) {
      const body: string[] = [];
      while (i < lines.length && /^\s*>/.test(lines[i] ?? "")) body.push((lines[i++] ?? "").replace(/^\s*>\s?/, ""));
      out.push(h("blockquote", null, blocks(body, vault)));
      continue;
    }
    const bullet = /^\s*([-*+]|\d+[.)])\s+/;
    if (bullet.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const entries: ComponentChildren[] = [];
      while (i < lines.length && bullet.test(lines[i] ?? "")) {
        const entry = (lines[i++] ?? "").replace(bullet, "");
        const task = /^\[([ xX])\]\s+(.*)$/.exec(entry);
        entries.push(
          task
            ? h("li", { class: "task" }, h("span", { class: "box", "aria-hidden": "true" }, task[1] === " " ? "☐ " : "☑ "), inline(task[2] ?? "", vault))
            : h("li", null, inline(entry, vault)),
        );
      }
      out.push(h(ordered ? "ol" : "ul", null, entries));
      continue;
    }
    if (line.trim() === "") {
      i += 1;
      continue;
    }
    const para: string[] = [];
    while (i < lines.length && (lines[i] ?? "").trim() !== "" && !startsBlock(lines[i] ?? "")) para.push(lines[i++] ?? "");
    if (para.length === 0) para.push(lines[i++] ?? "");
    const children: ComponentChildren[] = [];
    para.forEach((p, n) => {
      if (n > 0) children.push(h("br", null));
      children.push(...inline(p, vault));
    });
    out.push(h("p", null, children));
  }
  return out;
}

function startsBlock(line: string): boolean {
  return /^\s*(```|~~~|#{1,6}\s|>|[-*+]\s|\d+[.)]\s)/.test(line);
}

// One alternation, tried left to right; each match becomes a node, the rest stays text.
const INLINE =
  /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|!?\[\[([^\]\n]+)\]\]|!?\[([^\]\n]*)\]\(([^)\s]*(?:\s+"[^"]*")?)\)|\*\*([^*\n]+)\*\*|__([^_\n]+)__|\*([^*\n]+)\*|(?<![\w])_([^_\n]+)_(?![\w])|~~([^~\n]+)~~|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/

// Past this length a paragraph is shown as plain text: the link patterns are tried at every
// "[" and each try may scan to the end, so a long line of unclosed links would freeze the tab.
const INLINE_LIMIT = 16_000;

export function inline(text: string, vault: string): ComponentChildren[] {
  if (text.length > INLINE_LIMIT) return [text];
  const out: ComponentChildren[] = [];
  let last = 0;
  // A fresh regex per call: the recursion for **bold** must not move the caller's lastIndex.
  const re = new RegExp(INLINE.source, "g");
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[2] !== undefined) out.push(h("code", null, m[2]));
    else if (m[3] !== undefined) out.push(wikiLink(m[3], vault));
    else if (m[5] !== undefined) out.push(link(m[4] ?? "", m[5].replace(/\s+"[^"]*"$/, ""), vault));
    else if (m[6] !== undefined || m[7] !== undefined) out.push(h("strong", null, inline(m[6] ?? m[7] ?? "", vault)));
    else if (m[8] !== undefined || m[9] !== undefined) out.push(h("em", null, inline(m[8] ?? m[9] ?? "", vault)));
    else if (m[10] !== undefined) out.push(h("del", null, inline(m[10], vault)));
    else if (m[11] !== undefined) out.push(link(m[11], m[11], vault));
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

function wikiLink(inner: string, vault: string): ComponentChild {
  const [target = "", alias] = inner.replace(/\\\|/g, "|").split("|");
  const file = target.split("#")[0]?.trim() ?? "";
  const label = alias?.trim() || target.trim();
  if (!file) return h("span", { class: "wikilink" }, label);
  return h("a", { class: "wikilink", href: obsidianUri(vault, file), title: `Open ${file} in Obsidian` }, label);
}

function link(label: string, address: string, vault: string): ComponentChild {
  const href = safeHref(address, vault);
  const text = label || address;
  if (href === null) {
    return h("span", { class: "inert-link", title: `Link not opened: ${address}` }, text);
  }
  const external = /^https?:/i.test(href);
  return h("a", { href, title: address, ...(external ? { target: "_blank", rel: "noopener noreferrer" } : {}) }, inline(text, vault));
}
