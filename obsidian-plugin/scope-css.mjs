// Scopes a stylesheet to one element: every selector is prefixed with `scope`, and the page-level
// selectors (:root, html, body, #app) become the scope itself, so the agent view's styles apply
// inside the plugin's pane and nowhere else in Obsidian. Handles what web/src/styles.css uses:
// plain rules and @media/@supports blocks (comments dropped).

const PAGE = /^(:root|html|body|#app)(?![\w-])/;

export function scopeCss(css, scope) {
  return rules(css.replace(/\/\*[\s\S]*?\*\//g, ""), scope).join("\n");
}

function rules(css, scope) {
  const out = [];
  let i = 0;
  while (i < css.length) {
    const open = css.indexOf("{", i);
    if (open < 0) break;
    const prelude = css.slice(i, open).trim();
    const close = matching(css, open);
    const body = css.slice(open + 1, close);
    if (prelude.startsWith("@media") || prelude.startsWith("@supports") || prelude.startsWith("@container")) {
      out.push(`${prelude} {\n${rules(body, scope).join("\n")}\n}`);
    } else if (prelude.startsWith("@")) {
      out.push(`${prelude} {${body}}`); // @keyframes and the like are not selectors
    } else {
      const selectors = splitTop(prelude).map((s) => scoped(s.trim(), scope));
      out.push(`${[...new Set(selectors)].join(", ")} {${body}}`);
    }
    i = close + 1;
  }
  return out;
}

function scoped(selector, scope) {
  if (PAGE.test(selector)) return selector.replace(PAGE, scope);
  return `${scope} ${selector}`;
}

function matching(css, open) {
  let depth = 0;
  for (let i = open; i < css.length; i++) {
    if (css[i] === "{") depth++;
    else if (css[i] === "}" && --depth === 0) return i;
  }
  throw new Error("unbalanced braces in the stylesheet");
}

function splitTop(prelude) {
  const parts = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < prelude.length; i++) {
    const c = prelude[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) {
      parts.push(prelude.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(prelude.slice(start));
  return parts;
}
