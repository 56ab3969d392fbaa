/**
 * How one tool call reads in the agent view: a verb, its object and what came back, e.g.
 * `Search "weekly review"` · `7 found`, `Read Inbox.md` · `170 words`, `Edit Inbox.md` `+1 −1`,
 * `Move Recipes/Dal.md → Archive` · `links updated in 2 notes`, with the kind that picks its icon.
 * The server says all of it (src/vaultpilot/agent/steps.py, the terminal's wording too): the
 * `tool_call` event's `label`, the `tool_result` event's `outcome` and `files` (each changed file
 * with its +/- line counts). Events that do not carry them (an external agent's) show the tool's
 * raw name and arguments, and the result's preview.
 *
 * Also what the "This run" panel lists: the notes a run read (deduplicated) and the files it
 * changed with their +/- line counts, summed per file. Pure functions of a run's state.
 */

import { parseDiff } from "./diff";
import type { Item, Run } from "./state";
import type { FileCount, FileDiff, Json, JsonObject, StepLabel } from "./wire";
import { isObject } from "./wire";

export type ToolItem = Extract<Item, { type: "tool" }>;
export type StepKind = StepLabel["kind"];

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

/** A changed file as the panel lists it. `counts` is null when nothing said them. */
export interface ChangedFile {
  path: string;
  movedFrom: string | null;
  counts: { added: number; removed: number } | null;
}

export function cut(text: string, limit = CUT): string {
  const flat = text.split(/\s+/).filter(Boolean).join(" ");
  return flat.length <= limit ? flat : `${flat.slice(0, limit - 1)}…`;
}

function str(v: Json | undefined): string | null {
  return typeof v === "string" && v ? v : null;
}

/** A call the server did not describe: the tool's name and its arguments as they are. */
function rawLabel(item: ToolItem): StepLabel {
  const shown = item.args === null
    ? item.raw
    : Object.entries(item.args).map(([k, v]) => `${k}=${cut(JSON.stringify(v), 30)}`).join(", ");
  return { kind: "other", verb: item.name, object: cut(shown), object_is_path: false };
}

export function labelOf(item: ToolItem): StepLabel {
  return item.label ?? rawLabel(item);
}

function sum(changes: readonly { added: number; removed: number }[]): { added: number; removed: number } {
  return changes.reduce((a, c) => ({ added: a.added + c.added, removed: a.removed + c.removed }), { added: 0, removed: 0 });
}

/** The line of one tool call. */
export function stepLine(item: ToolItem): StepLine {
  const label = labelOf(item);
  let text = "";
  let counts: StepLine["counts"] = null;
  if (item.status === "failed") {
    text = item.outcome || item.preview || "failed";
  } else if (item.status === "ok") {
    text = item.outcome ?? item.preview;
    // A move's line says whose links it rewrote; other writes show their line counts.
    const files = item.files ?? (item.label === null ? item.diffs.map(countDiff) : []);
    if (files.length > 0 && label.kind !== "move") counts = sum(files);
  }
  return { kind: label.kind, verb: label.verb, object: label.object, isPath: label.object_is_path, outcome: text, counts };
}

/** A step that did not run, as the person reads it: their rejection (and the reason they gave),
 * the approval policy's refusal, or an interruption, as the terminal says it
 * (src/vaultpilot/cli/agent_view.py). Null for a step that ran, or failed while running. The
 * words the model got instead ("… Don't retry it …") stay in the step's result. */
export interface NotRun {
  text: string;
  /** What the person said when they rejected it ("" when nothing). */
  reason: string;
}

export function notRun(item: ToolItem): NotRun | null {
  if (item.source === "interrupted") return { text: "Interrupted", reason: "" };
  if (item.source !== "denied") return null;
  const d = item.decision;
  switch (d?.by) {
    case "user":
      return { text: "Rejected by you", reason: d.reason };
    case "policy":
      return { text: "Refused by the approval policy", reason: "" };
    case "nobody":
      return { text: "Not run: nobody could approve it", reason: "" };
    default:
      return { text: "Not run", reason: "" };
  }
}

/** What "Allow … for the rest of the run" names, in words: the kind of step the label's verb
 * says (`deletes`, `moves`, `edits`), else its kind; the operation's name when neither says. */
const RUN_WORDS: Record<string, string> = {
  Delete: "deletes",
  "Delete folder": "folder deletes",
  Move: "moves",
  "Move folder": "folder moves",
  Edit: "edits",
  Append: "appends",
  Write: "rewrites",
  Create: "new notes",
  "New folder": "new folders",
  Stage: "stages (git add)",
  Commit: "commits",
  Tag: "tag changes",
  Properties: "property changes",
};
const KIND_WORDS: Record<StepKind, string | null> = {
  delete: "deletes", move: "moves", edit: "edits", create: "new notes", read: "reads", search: "searches", other: null,
};

export function stepsOfKind(label: StepLabel | null, fallback: string): string {
  if (label === null) return fallback;
  return RUN_WORDS[label.verb] ?? KIND_WORDS[label.kind] ?? fallback;
}

function countDiff(d: FileDiff): FileCount {
  const parsed = parseDiff(d.diff);
  const moved = d.from && d.to && d.from !== d.to ? { from: d.from } : {};
  return { path: d.to ?? d.path, added: parsed.added, removed: parsed.removed, ...moved };
}

/**
 * The files a run changed, each once under its latest path with its summed +/- counts (a note
 * edited then moved is one entry): from the files its results said they changed, else (events
 * without them) the run's changed paths with the counts of the diffs its events carried.
 */
export function changedFiles(run: Run): ChangedFile[] {
  const byPath = new Map<string, ChangedFile>();
  let said = false;
  for (const it of run.items) {
    if (it.type !== "tool" || it.files === null) continue;
    said = true;
    for (const f of it.files) {
      const earlier = f.from !== undefined ? byPath.get(f.from) : undefined;
      if (earlier !== undefined && f.from !== undefined) byPath.delete(f.from);
      const prev = earlier ?? byPath.get(f.path);
      const counts = prev?.counts ?? { added: 0, removed: 0 };
      byPath.set(f.path, {
        path: f.path,
        movedFrom: prev?.movedFrom ?? f.from ?? null,
        counts: { added: counts.added + f.added, removed: counts.removed + f.removed },
      });
    }
  }
  if (said) return [...byPath.values()];
  const counted = new Map<string, { added: number; removed: number }>();
  for (const it of run.items) {
    if (it.type !== "tool" || it.status !== "ok") continue;
    const diffs = it.diffs.length > 0 ? it.diffs : it.approval?.resolved?.approved ? it.approval.diffs : [];
    for (const c of diffs.map(countDiff)) {
      const prev = counted.get(c.path) ?? { added: 0, removed: 0 };
      counted.set(c.path, { added: prev.added + c.added, removed: prev.removed + c.removed });
    }
  }
  return run.changed.map((path) => ({ path, movedFrom: null, counts: counted.get(path) ?? null }));
}

function readsNotes(it: ToolItem): boolean {
  return it.label !== null ? it.label.kind === "read" : isObject(it.result?.["primaryNote"]);
}

/** The notes a run read (a note read twice is listed once), in the order first read. */
export function notesRead(run: Run): string[] {
  const seen = new Set<string>();
  for (const it of run.items) {
    if (it.type !== "tool" || it.status !== "ok" || it.result === null || !readsNotes(it)) continue;
    const result: JsonObject = it.result;
    const primary = result["primaryNote"];
    const notes = [
      ...(isObject(primary) && primary["exists"] !== false ? [primary] : []),
      ...(Array.isArray(result["relatedNotes"]) ? result["relatedNotes"] : []),
      ...(Array.isArray(result["notes"]) ? result["notes"] : []),
    ];
    for (const n of notes) {
      const path = isObject(n) ? str(n["path"]) : null;
      if (path !== null) seen.add(path);
    }
  }
  return [...seen];
}
