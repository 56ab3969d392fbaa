/**
 * How one tool call reads in the agent view: a verb, its object and what came back, e.g.
 * `Search "weekly review"` · `7 found`, `Read Inbox.md` · `170 words`, `Edit Inbox.md` `+1 −1`,
 * `Move Recipes/Dal.md → Archive` · `links updated in 2 notes`, with the kind that picks its icon.
 * The wording is the terminal's (src/vaultpilot/cli/steps.py), so both say a step the same way;
 * tests/web/test_step_lines.py checks that OPERATIONS names every operation of
 * src/vaultpilot/tools/operations.py with the terminal's verb.
 *
 * Also what the "This run" panel lists: the notes a run read (deduplicated) and the files it
 * changed with their +/- line counts, from the run's change set when the server gave it (see
 * `ChangeSetFile`), else from the diffs its events carried. Pure functions of a run's state.
 */

import { parseDiff } from "./diff";
import type { Item, Run } from "./state";
import type { FileDiff, Json, JsonObject } from "./wire";
import { isObject } from "./wire";

export type ToolItem = Extract<Item, { type: "tool" }>;
export type StepKind = "read" | "search" | "edit" | "create" | "move" | "delete" | "other";

/** Each operation of the three vault tools: the terminal's verb and the kind of its icon. */
export const OPERATIONS: Readonly<Record<string, { verb: string; kind: StepKind }>> = {
  // obsidian_get_context
  read_note: { verb: "Read", kind: "read" },
  read_multiple: { verb: "Read", kind: "read" },
  gather_related: { verb: "Gather", kind: "read" },
  daily_note: { verb: "Daily", kind: "read" },
  note_with_backlinks: { verb: "Read", kind: "read" },
  // obsidian_query_vault
  semantic_search: { verb: "Search", kind: "search" },
  list_structure: { verb: "List", kind: "search" },
  find_related: { verb: "Related", kind: "search" },
  search_by_metadata: { verb: "Filter", kind: "search" },
  recent_changes: { verb: "Recent", kind: "search" },
  // obsidian_vault_manager
  create_note: { verb: "Create", kind: "create" },
  update_note: { verb: "Write", kind: "edit" },
  edit_note: { verb: "Edit", kind: "edit" },
  append_note: { verb: "Append", kind: "edit" },
  delete_note: { verb: "Delete", kind: "delete" },
  move_note: { verb: "Move", kind: "move" },
  create_folder: { verb: "Mkdir", kind: "create" },
  delete_folder: { verb: "DeleteFolder", kind: "delete" },
  move_folder: { verb: "MoveFolder", kind: "move" },
  bulk_tag: { verb: "Tag", kind: "edit" },
  bulk_move: { verb: "Move", kind: "move" },
  bulk_update_metadata: { verb: "Properties", kind: "edit" },
};

const WRITES = new Set<StepKind>(["edit", "create", "move", "delete"]);
const CUT = 60;

/** One line for a tool call. `outcome` is empty while it runs; counts only for a write. */
export interface StepLine {
  kind: StepKind;
  verb: string;
  /** What it acted on: a path, `A → B`, a quoted query; may be empty. */
  object: string;
  /** The object is a path (shown in monospace). */
  isPath: boolean;
  outcome: string;
  counts: { added: number; removed: number } | null;
}

/** One file change of a run's change set (the server's ShowChangeSet, files and diffs zipped). */
export interface ChangeSetFile {
  kind: string;
  operation: string;
  from: string | null;
  to: string | null;
  added: number;
  removed: number;
}

/** A changed file as the panel lists it. `counts` is null when no diff said them. */
export interface ChangedFile {
  path: string;
  movedFrom: string | null;
  counts: { added: number; removed: number } | null;
}

export function operationOf(args: JsonObject | null): string | null {
  for (const key of ["operation", "contextType", "queryType"]) {
    const v = args?.[key];
    if (typeof v === "string" && v) return v;
  }
  return null;
}

export function kindOf(item: ToolItem): StepKind {
  const op = operationOf(item.args);
  return (op !== null ? OPERATIONS[op]?.kind : undefined) ?? "other";
}

/** The call changes the vault (by its operation's kind; an unknown tool: by its name). */
export function writes(item: ToolItem): boolean {
  const op = operationOf(item.args);
  if (op !== null && OPERATIONS[op] !== undefined) return WRITES.has(OPERATIONS[op].kind);
  return !["obsidian_query_vault", "obsidian_get_context", "GetVaultContext"].includes(item.name);
}

export function cut(text: string, limit = CUT): string {
  const flat = text.split(/\s+/).filter(Boolean).join(" ");
  return flat.length <= limit ? flat : `${flat.slice(0, limit - 1)}…`;
}

function str(v: Json | undefined): string | null {
  return typeof v === "string" && v ? v : null;
}

function targets(args: JsonObject): string {
  const many = args["targets"];
  if (Array.isArray(many) && many.length > 0) {
    const shown = many.slice(0, 2).map((t) => cut(String(t), 40)).join(", ");
    return shown + (many.length > 2 ? `, +${many.length - 2}` : "");
  }
  const target = args["target"];
  return target !== undefined && target !== null && target !== "" ? cut(String(target)) : "";
}

function objectOf(op: string, args: JsonObject): { text: string; isPath: boolean } {
  const target = targets(args);
  switch (op) {
    case "semantic_search":
      return { text: JSON.stringify(cut(String(args["query"] ?? ""))), isPath: false };
    case "list_structure":
      return { text: cut(str(args["path"]) ?? "/"), isPath: true };
    case "find_related":
      return { text: cut(str(args["referenceNote"]) ?? target), isPath: true };
    case "search_by_metadata":
      return { text: args["filters"] ? cut(JSON.stringify(args["filters"])) : "", isPath: false };
    case "recent_changes":
      return { text: "", isPath: false };
    case "daily_note":
      return { text: cut(str(args["date"]) ?? "today"), isPath: false };
    case "move_note":
    case "move_folder":
    case "bulk_move":
      return { text: `${target} → ${cut(String(args["destination"] ?? "?"))}`, isPath: true };
  }
  return { text: target, isPath: true };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** A few words on what a tool returned (the terminal's `outcome`). */
export function outcome(result: JsonObject): string {
  const error = str(result["error"]);
  if (result["success"] === false || error) return cut(error ?? str(result["message"]) ?? "failed", 160);
  const results = result["results"];
  if (Array.isArray(results)) {
    const total = result["totalFound"];
    return `${typeof total === "number" ? total : results.length} found`;
  }
  const primary = result["primaryNote"];
  if (isObject(primary)) {
    const words = primary["wordCount"];
    const related = Array.isArray(result["relatedNotes"]) ? result["relatedNotes"].length : 0;
    const text = primary["exists"] === false ? "no such note" : typeof words === "number" ? plural(words, "word") : "read";
    return text + (related ? `, +${plural(related, "note")}` : "");
  }
  const notes = result["notes"];
  if (Array.isArray(notes)) return plural(notes.length, "note");
  const message = str(result["message"]);
  return message ? cut(message, 100) : "";
}

/** The line of one tool call, given the file changes it made (`runChanges`). */
export function stepLine(item: ToolItem, changes: readonly ChangeSetFile[]): StepLine {
  const args = item.args ?? {};
  const op = operationOf(item.args);
  const known = op !== null ? OPERATIONS[op] : undefined;
  let verb: string;
  let object: { text: string; isPath: boolean };
  if (op !== null && known !== undefined) {
    verb = known.verb;
    object = objectOf(op, args);
  } else if (item.name === "git_agent") {
    verb = "Git";
    object = { text: String(args["type"] ?? args["action"] ?? "?"), isPath: false };
  } else {
    verb = item.name;
    const shown = Object.entries(args).map(([k, v]) => `${k}=${cut(JSON.stringify(v), 30)}`).join(", ");
    object = { text: cut(shown), isPath: false };
  }
  const kind = known?.kind ?? "other";
  const done = item.status === "ok" || item.status === "failed";
  let text = "";
  let counts: StepLine["counts"] = null;
  if (item.status === "failed") {
    text = item.preview || outcome(item.result ?? {}) || "failed";
  } else if (item.status === "ok") {
    const result = item.result ?? {};
    if (WRITES.has(kind) && result["dryRun"] !== true) {
      if (kind === "move") {
        // Notes whose links it rewrote: the updates of other notes than the ones it moved.
        const moved = new Set(changes.filter((c) => c.kind === "move").map((c) => c.to));
        const links = new Set(changes.filter((c) => c.kind === "update" && !moved.has(c.to)).map((c) => c.to)).size;
        text = links > 0 ? `links updated in ${plural(links, "note")}` : "";
      } else {
        counts = changes.length > 0 ? sum(changes) : null;
      }
      // A partial change (some files left out at approval) says so in the tool's own words.
      if (/left as they were|skipped/i.test(str(result["message"]) ?? "")) text = cut(str(result["message"]) ?? "", 100);
    } else {
      text = outcome(result);
    }
  }
  return { kind, verb, object: object.text, isPath: object.isPath, outcome: done ? text : "", counts };
}

function sum(changes: readonly { added: number; removed: number }[]): { added: number; removed: number } {
  return changes.reduce((a, c) => ({ added: a.added + c.added, removed: a.removed + c.removed }), { added: 0, removed: 0 });
}

function countDiff(d: FileDiff): ChangeSetFile {
  const parsed = parseDiff(d.diff);
  const moved = d.from && d.to && d.from !== d.to;
  return {
    kind: moved ? "move" : "update", operation: "", from: d.from ?? null, to: d.to ?? d.path,
    added: parsed.added, removed: parsed.removed,
  };
}

function pathsOf(item: ToolItem): string[] {
  const affected = item.result?.["affectedPaths"];
  const out = Array.isArray(affected) ? affected.filter((p): p is string => typeof p === "string") : [];
  const args = item.args ?? {};
  for (const k of ["target", "targets", "destination"]) {
    const v = args[k];
    for (const p of Array.isArray(v) ? v : [v]) if (typeof p === "string" && p) out.push(p);
  }
  return out;
}

function matches(change: ChangeSetFile, paths: string[]): boolean {
  return paths.some((p) => [change.to, change.from].some((c) => c !== null && (c === p || c === `${p}.md` || c.startsWith(`${p}/`))));
}

/**
 * The file changes each successful write of a run made, by call id: the diffs its result
 * carried; else, when the run's change set is known, its changes matched to the run's writes in
 * order (a change set is the run's writes as they happened, each change naming its operation):
 * a call takes the next changes of its operation that name its paths, and for a move the link
 * rewrites that follow; else the diffs shown when it was approved. One pass over the run.
 */
export function runChanges(run: Run): Map<string, ChangeSetFile[]> {
  const out = new Map<string, ChangeSetFile[]>();
  const set = run.changeSet;
  let next = 0;
  for (const it of run.items) {
    if (it.type !== "tool" || it.status !== "ok" || !writes(it) || it.result?.["dryRun"] === true) continue;
    if (it.diffs.length > 0) {
      out.set(it.callId, it.diffs.map(countDiff));
      continue;
    }
    if (set === null) {
      // The files shown at approval (a per-file approval may have left some out: the change
      // set, once read, says what was written).
      if (it.approval?.resolved?.approved) out.set(it.callId, it.approval.diffs.map(countDiff));
      continue;
    }
    const op = operationOf(it.args) ?? "";
    const paths = pathsOf(it);
    const isMove = OPERATIONS[op]?.kind === "move";
    let i = next;
    while (i < set.length && !(set[i]?.operation === op && matches(set[i] as ChangeSetFile, paths))) i++;
    if (i >= set.length) continue;
    let end = i + 1;
    while (end < set.length) {
      const c = set[end] as ChangeSetFile;
      if (c.operation !== op || !(matches(c, paths) || (isMove && c.kind === "update"))) break;
      end++;
    }
    out.set(it.callId, set.slice(i, end));
    next = end;
  }
  return out;
}

/** A ShowChangeSet result as the run's change set (files and diffs are in the same order). */
export function parseChangeSet(result: Json): ChangeSetFile[] | null {
  if (!isObject(result) || !Array.isArray(result["files"])) return null;
  const diffs = Array.isArray(result["diffs"]) ? result["diffs"] : [];
  return result["files"].filter(isObject).map((f, i) => {
    const d = diffs[i];
    const parsed = isObject(d) && typeof d["diff"] === "string" ? parseDiff(d["diff"]) : { added: 0, removed: 0 };
    return {
      kind: String(f["kind"] ?? ""), operation: String(f["operation"] ?? ""),
      from: str(f["from"]), to: str(f["to"]), added: parsed.added, removed: parsed.removed,
    };
  });
}

/**
 * The files a run changed, each once under its latest path with its summed +/- counts: from
 * the change set when known (a note edited then moved is one entry), else the run's changed
 * paths with the counts of the diffs its events carried.
 */
export function changedFiles(run: Run): ChangedFile[] {
  if (run.changeSet !== null && run.changeSet.length > 0) {
    const byPath = new Map<string, ChangedFile>();
    for (const c of run.changeSet) {
      if (c.kind === "mkdir") continue;
      const path = (c.kind === "delete" ? c.from : c.to) ?? c.from ?? "";
      const earlier = c.kind === "move" && c.from !== null ? byPath.get(c.from) : undefined;
      if (earlier !== undefined && c.from !== null) byPath.delete(c.from);
      const prev = earlier ?? byPath.get(path);
      const counts = prev?.counts ?? { added: 0, removed: 0 };
      byPath.set(path, {
        path,
        movedFrom: c.kind === "move" ? prev?.movedFrom ?? c.from : prev?.movedFrom ?? null,
        counts: { added: counts.added + c.added, removed: counts.removed + c.removed },
      });
    }
    return [...byPath.values()];
  }
  const counted = new Map<string, { added: number; removed: number }>();
  for (const changes of runChanges(run).values()) {
    for (const c of changes) {
      const path = c.to ?? c.from ?? "";
      const prev = counted.get(path) ?? { added: 0, removed: 0 };
      counted.set(path, { added: prev.added + c.added, removed: prev.removed + c.removed });
    }
  }
  return run.changed.map((path) => ({ path, movedFrom: null, counts: counted.get(path) ?? null }));
}

/** The notes a run read (a note read twice is listed once), in the order first read. */
export function notesRead(run: Run): string[] {
  const seen = new Set<string>();
  for (const it of run.items) {
    if (it.type !== "tool" || it.status !== "ok" || kindOf(it) !== "read" || it.result === null) continue;
    const primary = it.result["primaryNote"];
    const notes = [
      ...(isObject(primary) && primary["exists"] !== false ? [primary] : []),
      ...(Array.isArray(it.result["relatedNotes"]) ? it.result["relatedNotes"] : []),
      ...(Array.isArray(it.result["notes"]) ? it.result["notes"] : []),
    ];
    for (const n of notes) {
      const path = isObject(n) ? str(n["path"]) : null;
      if (path !== null) seen.add(path);
    }
  }
  return [...seen];
}
