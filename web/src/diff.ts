/**
 * Unified diffs parsed into lines with old and new line numbers, for the coloured diff view.
 * `parseDiff` never throws: text that is not a diff becomes context lines.
 */

export interface DiffLine {
  kind: "add" | "del" | "ctx" | "hunk" | "fold";
  text: string;
  oldNo: number | null;
  newNo: number | null;
}

export interface ParsedDiff {
  lines: DiffLine[];
  added: number;
  removed: number;
}

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$/;
/** Unchanged stretches longer than this are folded, keeping FOLD_KEEP lines at each end. */
const FOLD_OVER = 8;
const FOLD_KEEP = 3;

export function parseDiff(text: string): ParsedDiff {
  const lines: DiffLine[] = [];
  let oldNo = 1;
  let newNo = 1;
  let added = 0;
  let removed = 0;
  let inHunk = false; // file headers come before the first hunk; inside one, "--- x" is a removed "-- x"
  for (const raw of text.replace(/\r\n?/g, "\n").split("\n")) {
    if (!inHunk && (raw.startsWith("--- ") || raw.startsWith("+++ ") || raw.startsWith("diff ") || raw.startsWith("index "))) continue;
    const hunk = HUNK.exec(raw);
    if (hunk) {
      inHunk = true;
      oldNo = Number(hunk[1]);
      newNo = Number(hunk[2]);
      lines.push({ kind: "hunk", text: raw, oldNo: null, newNo: null });
    } else if (raw.startsWith("+")) {
      lines.push({ kind: "add", text: raw.slice(1), oldNo: null, newNo: newNo++ });
      added += 1;
    } else if (raw.startsWith("-")) {
      lines.push({ kind: "del", text: raw.slice(1), oldNo: oldNo++, newNo: null });
      removed += 1;
    } else if (raw.startsWith("\\")) {
      continue; // "\ No newline at end of file"
    } else {
      lines.push({ kind: "ctx", text: raw.startsWith(" ") ? raw.slice(1) : raw, oldNo: oldNo++, newNo: newNo++ });
    }
  }
  while (lines.length && lines[lines.length - 1]?.kind === "ctx" && lines[lines.length - 1]?.text === "") lines.pop();
  return { lines: fold(lines), added, removed };
}

function fold(lines: DiffLine[]): DiffLine[] {
  const out: DiffLine[] = [];
  let i = 0;
  while (i < lines.length) {
    if (lines[i]?.kind !== "ctx") {
      out.push(lines[i] as DiffLine);
      i += 1;
      continue;
    }
    let j = i;
    while (j < lines.length && lines[j]?.kind === "ctx") j += 1;
    const run = lines.slice(i, j);
    if (run.length > FOLD_OVER) {
      out.push(...run.slice(0, FOLD_KEEP));
      out.push({ kind: "fold", text: `${run.length - 2 * FOLD_KEEP} unchanged lines`, oldNo: null, newNo: null });
      out.push(...run.slice(-FOLD_KEEP));
    } else {
      out.push(...run);
    }
    i = j;
  }
  return out;
}
