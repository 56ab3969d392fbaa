/**
 * One agent run as a list of steps: step dividers with tokens, thoughts (dimmed, collapsible),
 * tool call cards with their results, approval cards, the streamed answer, errors. Long runs
 * render a window of the latest items (earlier ones on request), and each item re-renders only
 * when its own data changed, so a 1,000-step run stays responsive while it streams.
 */

import { Component } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { parseDiff } from "../diff";
import { obsidianUri, renderMarkdown, visible } from "../markdown";
import type { Approval, Decision, Item, Run } from "../state";
import { type ChangedFile, type StepKind, type ToolItem, changedFiles, notRun, stepLine, stepsOfKind } from "../steps";
import type { FileDiff, JsonObject, StepLabel } from "../wire";

export const WINDOW = 120;

export interface Actions {
  /** Answer an approval; resolves to whether the server took the answer. */
  approve(callId: string, approved: boolean, opts: { reason?: string; files?: string[]; forRun?: string }): Promise<boolean>;
  /** Undo the run's change set; resolves to what was restored once undone, null if not. */
  undo(runId: string): Promise<string | null>;
}

/** `status`: what the run is doing, as the page says it (its own status, or with a pause asked). */
export function RunView(props: { run: Run; status?: string; vault: string; actions: Actions; canUndo: boolean }) {
  const { run, vault, actions } = props;
  const [shown, setShown] = useState(WINDOW);
  const hidden = Math.max(0, run.items.length - shown);
  const items = hidden > 0 ? run.items.slice(hidden) : run.items;
  return (
    <article class="run" aria-label={`Run: ${run.goal || run.runId}`}>
      {run.goal ? (
        <div class="user-msg">
          <div class="bubble">{visible(run.goal)}</div>
          {run.chips.length > 0 && (
            <ul class="chips" aria-label="Attached notes">
              {run.chips.map((c) => (
                <li class="chip" key={c}>{c}</li>
              ))}
            </ul>
          )}
        </div>
      ) : null}
      {hidden > 0 && (
        <button type="button" class="earlier" onClick={() => setShown(shown + WINDOW * 4)}>
          Show {Math.min(hidden, WINDOW * 4)} earlier of {hidden} hidden items
        </button>
      )}
      <ol class="steps">
        {items.map((item) => (
          <ItemView
            key={item.key} item={item} vault={vault} actions={actions} run={run.runId} allowed={run.allowed} undone={run.undone}
          />
        ))}
      </ol>
      {run.finish === null ? <Working run={run} status={props.status ?? run.status} /> : <RunSummary run={run} vault={vault} actions={actions} canUndo={props.canUndo} />}
    </article>
  );
}

interface ItemProps {
  item: Item;
  vault: string;
  actions: Actions;
  run: string;
  allowed: string[];
  /** The run's changes were undone: the paths its results name are no longer links. */
  undone: boolean;
}

/** Re-renders only when its item (or the vault, or whether the run was undone) changed. */
class ItemView extends Component<ItemProps> {
  override shouldComponentUpdate(next: ItemProps): boolean {
    return next.item !== this.props.item || next.vault !== this.props.vault || next.undone !== this.props.undone;
  }
  override render() {
    const { item, vault, actions, run, undone } = this.props;
    switch (item.type) {
      case "step":
        return (
          <li class="step-divider">
            <span>Step {item.step}</span>
            {item.tokens !== null && (
              <span class="tokens" title={item.estimated ? "estimated" : "reported by the model server"}>
                {fmtTokens(item.tokens)} tokens{item.estimated ? " (est.)" : ""}
                {item.cost !== null ? ` · ${fmtCost(item.cost)}` : ""}
              </span>
            )}
          </li>
        );
      case "thought":
        return (
          <li class="thought">
            <details>
              <summary>
                {firstLine(visible(item.text))}
              </summary>
              <div class="thought-body">{visible(item.text)}</div>
            </details>
          </li>
        );
      case "answer":
        return <li class="answer" aria-label="Answer">{renderMarkdown(item.text, vault)}</li>;
      case "tool":
        return <ToolCard item={item} vault={vault} actions={actions} run={run} undone={undone} />;
      case "approval":
        return (
          <li class="approval-item">
            <ApprovalCard item={item} label={null} vault={vault} actions={actions} run={run} />
          </li>
        );
      case "attached":
        return (
          <li class="notice">
            Attached {item.notes.length ? item.notes.join(", ") : "no notes"}
            {item.unknown.length > 0 && <span class="warn"> · not attached: {item.unknown.join(", ")}</span>}
            {item.omitted.length > 0 && <span class="warn"> · over the budget: {item.omitted.join(", ")}</span>}
          </li>
        );
      case "error":
        return (
          <li class="error-item" role="alert">
            <span class="icon" aria-hidden="true">✗</span> {item.message}
          </li>
        );
    }
  }
}

/** A small line icon per kind of step (stroke in the text colour, hidden from screen readers:
 * the verb says the kind). */
function KindIcon({ kind }: { kind: StepKind }) {
  const paths: Record<StepKind, string> = {
    read: "M4 2h6l3 3v9H4z M10 2v3h3 M6 8h5 M6 11h5",
    search: "M7 3a4 4 0 1 0 0 8a4 4 0 1 0 0-8z M10 10l4 4",
    edit: "M3 13l1-3 7-7 2 2-7 7z M9.5 4.5l2 2",
    create: "M4 2h6l3 3v9H4z M8.5 7v5 M6 9.5h5",
    move: "M2 8h10 M9 5l3 3-3 3 M14 3v10",
    delete: "M3 4h10 M6 4V2h4v2 M4.5 4l1 10h5l1-10",
    other: "M8 5a3 3 0 1 0 0 6a3 3 0 1 0 0-6z M8 1v2 M8 13v2 M1 8h2 M13 8h2",
  };
  return (
    <svg class={`kind-icon kind-${kind}`} viewBox="0 0 16 16" width="14" height="14" aria-hidden="true" focusable="false">
      <path d={paths[kind]} fill="none" stroke="currentColor" stroke-width="1.4" stroke-linecap="round" stroke-linejoin="round" />
    </svg>
  );
}

const STATUS_WORD = { running: "running", awaiting: "waiting for approval", ok: "done", failed: "failed", declined: "not run" } as const;

/** A tool call as one line (icon, verb, object, outcome, status); the line is a disclosure
 * button that shows the full arguments and result. */
function ToolCard(props: { item: ToolItem; vault: string; actions: Actions; run: string; undone: boolean }) {
  const { item, vault } = props;
  const line = stepLine(item);
  const text = `${line.verb}${line.object ? ` ${line.object}` : ""}`;
  const counts = line.counts ? ` +${line.counts.added} −${line.counts.removed}` : "";
  const decided = item.approval?.resolved ?? null;
  // A step the person rejected (or the policy refused) is their choice, not a failure.
  const refused = notRun(item);
  const status = refused !== null ? "declined" : item.status;
  const said = refused !== null
    ? `${text}, ${refused.text}${refused.reason ? `: ${refused.reason}` : ""}`
    : `${text}${counts}${line.outcome ? `, ${line.outcome}` : ""}${decided ? `, ${decided.approved ? "approved" : "rejected"}` : ""}`;
  // The approval card shows the diff while it waits; once decided, the expanded step does.
  const diffs = item.diffs.length > 0 ? item.diffs : item.status === "ok" && item.approval?.resolved?.approved ? item.approval.diffs : [];
  return (
    <li class={`tool tool-${status} kind-${line.kind}`}>
      <details class="step">
        <summary class="step-line" aria-label={`${said} (${STATUS_WORD[status]})`}>
          <span class={`mark mark-${status}`} aria-hidden="true">
            {status === "running" ? <span class="spinner" /> : { awaiting: "?", ok: "✓", failed: "✗", declined: "⊘" }[status]}
          </span>
          <KindIcon kind={line.kind} />
          <span class="verb">{line.verb}</span>
          {line.object && <span class={line.isPath ? "object path" : "object"}>{line.object}</span>}
          {line.counts && (
            <span class="counts">
              <span class="plus">+{line.counts.added}</span> <span class="minus">−{line.counts.removed}</span>
            </span>
          )}
          {line.outcome && item.status !== "failed" && <span class="outcome" title={visible(line.outcome)}>{visible(line.outcome)}</span>}
          {refused !== null && <span class="not-run">{refused.text}</span>}
          {refused !== null && refused.reason && <span class="not-run-reason">“{refused.reason}”</span>}
          {decided && refused === null && (
            <span class={`decided ${decided.approved ? "yes" : "no"}`}>
              {decided.approved ? "approved" : "rejected"}{decided.by !== "user" ? ` (${decided.by})` : ""}
            </span>
          )}
          {item.durationMs !== null && refused === null && <span class="dur">{Math.round(item.durationMs)} ms</span>}
        </summary>
        <div class="step-body">
          <h4>Arguments <span class="muted">{item.name}</span></h4>
          {item.args === null ? (
            <div class="warn">Arguments were not a JSON object: <code>{item.raw.slice(0, 300)}</code></div>
          ) : (
            <pre class="json">{prettyJson(item.args)}</pre>
          )}
          {Object.keys(item.added).length > 0 && <p class="muted">Added by vaultpilot: <code>{JSON.stringify(item.added)}</code></p>}
          {/* Once answered, the approval is part of the step's record, between the call and its result. */}
          {decided && item.approval !== null && (
            <ApprovalCard item={item.approval} label={item.label} vault={vault} actions={props.actions} run={props.run} />
          )}
          {item.result !== null && (
            <>
              <h4>{refused !== null ? "What the model was told" : "Result"}</h4>
              {item.preview && <p class={`result result-${item.status}`}>{item.preview}</p>}
              <pre class="json">{prettyJson(item.result)}</pre>
            </>
          )}
          {diffs.map((d) => (
            <DiffView key={d.path} diff={d} vault={vault} linked={!props.undone} />
          ))}
        </div>
      </details>
      {status === "failed" && (
        <p class="step-failure" role="note">
          <span class="sr">Failure: </span>
          {visible(line.outcome)}
        </p>
      )}
      {item.approval !== null && !decided && (
        <ApprovalCard item={item.approval} label={item.label} vault={vault} actions={props.actions} run={props.run} />
      )}
    </li>
  );
}

/** JSON with long strings cut (the full text stays in the result the model got). */
function prettyJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === "string" && v.length > 400 ? `${v.slice(0, 400)}… (${v.length} characters)` : v), 2);
}

/** One sentence for what a change will do, when the tool's diffs (or arguments) say more than
 * its generic description: a move's from and to and the notes whose links it rewrites. */
export function approvalSummary(item: Approval): string | null {
  const moved = item.diffs.find((d) => d.from && d.to && d.from !== d.to);
  if (moved) {
    const others = item.diffs.filter((d) => d !== moved && parseDiff(d.diff).added > 0).length;
    const links = others === 0 ? "no other note's links change" : `rewrites the links in ${others} other note${others === 1 ? "" : "s"}`;
    return `Moves ${moved.from} to ${moved.to}; ${links}.`;
  }
  const target = str(item.args["target"]);
  const destination = str(item.args["destination"]) ?? str(item.args["newPath"]);
  if (target && destination && /move|rename/.test(item.operation ?? "")) return `Moves ${target} to ${destination}.`;
  return null;
}

/** A field the person types into (by tag: an Obsidian pop-out window has its own classes). */
function isTextField(el: Element | null): boolean {
  if (el === null) return false;
  const tag = el.tagName;
  if (tag === "TEXTAREA" || tag === "SELECT") return true;
  if (tag === "INPUT") return !["checkbox", "radio", "button", "submit", "reset"].includes((el as HTMLInputElement).type);
  return (el as HTMLElement).isContentEditable === true;
}

/** What the card asks about: the step's own label (`Delete Inbox.md`), else the operation's name
 * (a call the server did not describe). */
function approvalSubject(item: Approval, label: StepLabel | null): string {
  return label === null ? item.operation ?? item.name : `${label.verb}${label.object ? ` ${label.object}` : ""}`;
}

/** The card's question: `Delete Inbox.md?`, or `Approve delete_note?` without a label. */
export function approvalTitle(item: Approval, label: StepLabel | null): string {
  return label === null ? `Approve ${approvalSubject(item, label)}?` : `${approvalSubject(item, label)}?`;
}

/** How an answered card says what was decided, in the person's words. */
function decisionText(d: Decision): string {
  if (d.approved) return `Approved${d.by === "override" ? " (with a result you gave)" : ""}`;
  if (d.by === "nobody") return "Not run: nobody could approve it";
  if (d.by === "stopped") return "Not answered: the run stopped";
  if (d.by === "policy") return "Refused by the approval policy";
  return `Rejected by you${d.reason ? `: “${d.reason}”` : ""}`;
}

/**
 * A call waiting for the person: what it does, its diff, Approve / Reject. Keys: `y` approves;
 * `n` rejects, but first puts the cursor in the (empty) reason box so a reason can be given:
 * Enter there rejects, with or without one, and Esc goes back to the card.
 */
function ApprovalCard(props: { item: Approval; label: StepLabel | null; vault: string; actions: Actions; run: string }) {
  const { item, label, vault, actions } = props;
  // Checkboxes only for a change that can be approved file by file; any other card approves
  // (or rejects) the call whole, so Approve never depends on a ticked file it does not show.
  const files = choosableFiles(item, label);
  // What a move_note or move_folder is for, the notes it moves, goes with it: only the link
  // rewrites in other notes may be left out (the server refuses the move without them).
  const moves = new Map(
    item.operation === "move_note" || item.operation === "move_folder"
      ? item.diffs.filter((d) => d.from && d.to && d.from !== d.to).map((d) => [d.path, `${d.from} → ${d.to}`])
      : [],
  );
  const [picked, setPicked] = useState<string[]>(files);
  const [noneTicked, setNoneTicked] = useState(false);
  const [forRun, setForRun] = useState(false);
  const [reason, setReason] = useState("");
  const [asking, setAsking] = useState(false);
  const [sent, setSent] = useState<null | boolean>(null);
  const card = useRef<HTMLDivElement>(null);
  const reasonBox = useRef<HTMLInputElement>(null);
  const operation = `${item.name}${item.operation ? `.${item.operation}` : ""}`;
  const decided: Decision | null = item.resolved ?? (sent === null ? null : { approved: sent, by: "user", reason: sent ? "" : reason });
  const decide = (approved: boolean) => {
    if (approved && files.length > 1 && picked.length === 0) {
      setNoneTicked(true); // approving no file at all is a rejection: say so, send nothing
      return;
    }
    setSent(approved);
    const subset = approved && files.length > 1 && picked.length < files.length;
    // A refused answer leaves the card open (the server's reason is shown as a notice).
    void actions
      .approve(item.callId, approved, {
        ...(reason && !approved ? { reason } : {}),
        ...(subset ? { files: picked } : {}),
        ...(approved && forRun ? { forRun: operation } : {}),
      })
      .then((taken) => {
        if (!taken) setSent(null);
      });
  };
  // y approves; n rejects at once when a reason is already typed, else asks for one first.
  const onKey = (yes: boolean) => {
    if (yes || reason.trim() !== "") {
      decide(yes);
      return;
    }
    setAsking(true);
    reasonBox.current?.focus();
  };
  const keyRef = useRef(onKey);
  keyRef.current = onKey;
  const pending = decided === null;
  useEffect(() => {
    if (!pending) return;
    // Keys y / n answer the first waiting card, unless the person is typing in a text field.
    const listener = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.repeat) return;
      if (e.key !== "y" && e.key !== "n") return;
      if (isTextField(document.activeElement)) return;
      if (card.current === null || card.current !== document.querySelector(".approval.pending")) return;
      // Not while a drawer covers the conversation (narrow width): the card is out of sight.
      if (card.current.closest("[inert]") !== null) return;
      e.preventDefault();
      keyRef.current(e.key === "y");
    };
    // Take the keyboard when nothing is being typed (an empty message box), so y / n work at once.
    const active = document.activeElement;
    const idle = active === null || active === document.body || (isTextField(active) && (active as HTMLTextAreaElement).value === "");
    if (idle) card.current?.focus({ preventScroll: true });
    document.addEventListener("keydown", listener);
    return () => document.removeEventListener("keydown", listener);
  }, [pending]);
  const summary = approvalSummary(item);
  const kinds = stepsOfKind(label, item.operation ?? item.name);
  return (
    <div
      ref={card}
      tabIndex={-1}
      class={`approval ${decided ? (decided.approved ? "approved" : "rejected") : "pending"}`}
      role="group"
      aria-label={`Approval: ${approvalSubject(item, label)}`}
      aria-keyshortcuts={pending ? "y n" : undefined}
    >
      <div class="approval-head">
        <strong class="question">{approvalTitle(item, label)}</strong>{" "}
        {summary !== null ? (
          <span class="what">{summary}</span>
        ) : (
          <span class="reason">{item.reason}</span>
        )}
      </div>
      {item.diffs.length === 0 && summary === null && <pre class="json">{JSON.stringify(item.args, null, 2)}</pre>}
      {files.length > 1 && !decided && (
        <fieldset class="files">
          <legend>Files to change</legend>
          {files.map((f) => (
            <label key={f}>
              <input
                type="checkbox"
                checked={moves.has(f) || picked.includes(f)}
                disabled={moves.has(f)}
                onChange={(e) => {
                  setNoneTicked(false);
                  setPicked((e.currentTarget as HTMLInputElement).checked ? [...picked, f] : picked.filter((p) => p !== f));
                }}
              />{" "}
              {moves.has(f) ? (
                <>
                  <code>{moves.get(f)}</code> <span class="muted">(the move itself)</span>
                </>
              ) : (
                <code>{f}</code>
              )}
            </label>
          ))}
          {noneTicked && picked.length === 0 && (
            <p class="warn" role="alert">No file is ticked: tick the files to change, or Reject.</p>
          )}
        </fieldset>
      )}
      {/* Once approved, the tool's result shows the change; the diff is not repeated here. */}
      {!decided?.approved &&
        item.diffs.map((d) => {
          // A file left unticked is shown faded: it will not be changed.
          const out = files.length > 1 && !moves.has(d.path) && !picked.includes(d.path);
          return (
            <div key={d.path} class={out ? "left-out" : undefined} title={out ? "Not ticked: left as it is" : undefined}>
              <DiffView diff={d} vault={vault} linked={false} />
            </div>
          );
        })}
      {decided ? (
        <div class="decision" role="status">{decisionText(decided)}</div>
      ) : (
        <>
          <div class="approval-actions">
            <button type="button" class="primary" aria-keyshortcuts="y" onClick={() => decide(true)}>
              Approve <kbd aria-hidden="true">y</kbd>
            </button>
            <button type="button" class="danger" aria-keyshortcuts="n" onClick={() => decide(false)}>
              Reject <kbd aria-hidden="true">n</kbd>
            </button>
            <label class="for-run">
              <input type="checkbox" checked={forRun} onChange={(e) => setForRun((e.currentTarget as HTMLInputElement).checked)} /> Allow {kinds} for the rest of the run
            </label>
            <input
              ref={reasonBox}
              class={`reject-reason${asking ? " asking" : ""}`}
              type="text"
              aria-label="Reason for rejecting (optional)"
              placeholder={asking ? "Why not? (optional) Enter rejects, Esc goes back" : "Reason for rejecting (optional)"}
              value={reason}
              onInput={(e) => setReason((e.currentTarget as HTMLInputElement).value)}
              onKeyDown={(e) => {
                if (e.key === "Enter" && !e.isComposing) {
                  e.preventDefault();
                  decide(false);
                } else if (e.key === "Escape") {
                  e.preventDefault();
                  setAsking(false);
                  card.current?.focus({ preventScroll: true });
                }
              }}
            />
          </div>
          <p class="keys" aria-hidden="true">
            <kbd>y</kbd> approves · <kbd>n</kbd> rejects: type a reason if you like, then <kbd>Enter</kbd>
          </p>
        </>
      )}
    </div>
  );
}

/**
 * The files a person may pick from, or [] when the call is approved whole. Only a change whose
 * files the card shows (its diffs) and whose operation applies file by file: the event's
 * `per_file` says so when the server sends it; otherwise the step's kind decides (a delete, e.g.
 * of a folder, is applied whole; the moves and bulk edits that touch several notes take a
 * subset). A call without a label (an external agent's, a shell command) is approved whole.
 */
export function choosableFiles(item: Approval, label: StepLabel | null): string[] {
  const paths = [...new Set(item.diffs.map((d) => d.path).filter((p) => p !== ""))];
  const perFile = item.perFile ?? (label !== null && label.kind !== "delete");
  return perFile && paths.length > 1 ? paths : [];
}

/** A diff longer than this many rows is folded behind a one-line summary, and a delete's (a
 * note's every line, removed) beyond a few: the card's question and buttons stay in sight. */
export const FOLD_ROWS = 60;
const FOLD_DELETE_ROWS = 12;

/** A file's diff; `linked`: its path opens the note in Obsidian (not for a note that is not
 * there: a change waiting for approval, or one undone since). A long one is folded: a summary
 * ("Deletes 6,002 lines") that opens it; its rows are only rendered once opened. */
export function DiffView({ diff, vault, linked = true }: { diff: FileDiff; vault: string; linked?: boolean }) {
  const parsed = parseDiff(diff.diff);
  const [open, setOpen] = useState(false);
  const moved = diff.from && diff.to && diff.from !== diff.to ? `${diff.from} → ${diff.to}` : null;
  const deletes = moved === null && parsed.added === 0 && parsed.removed > 0;
  const fold = parsed.lines.length > (deletes ? FOLD_DELETE_ROWS : FOLD_ROWS);
  const n = (k: number) => `${k.toLocaleString("en-US")} line${k === 1 ? "" : "s"}`;
  const said = deletes ? `Deletes ${n(parsed.removed)}` : `Changes ${n(parsed.lines.length)}`;
  return (
    <figure class="diff" aria-label={`Changes to ${diff.path}`}>
      <figcaption>
        {moved ?? (diff.path ? linked ? <a href={obsidianUri(vault, diff.path)}>{diff.path}</a> : diff.path : "Changes")}{" "}
        <span class="plus">+{parsed.added}</span> <span class="minus">−{parsed.removed}</span>
      </figcaption>
      {fold ? (
        <details class="diff-fold" onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
          <summary>{said} <span class="muted">{open ? "(hide them)" : "(show them)"}</span></summary>
          {open && <DiffRows lines={parsed.lines} />}
        </details>
      ) : (
        <DiffRows lines={parsed.lines} />
      )}
    </figure>
  );
}

function DiffRows({ lines }: { lines: ReturnType<typeof parseDiff>["lines"] }) {
  return (
      <table>
        <tbody>
          {lines.map((l, i) => (
            <tr class={`dl-${l.kind}`} key={i}>
              <td class="ln">{l.oldNo ?? ""}</td>
              <td class="ln">{l.newNo ?? ""}</td>
              <td class="sign">{l.kind === "add" ? "+" : l.kind === "del" ? "−" : ""}</td>
              <td class="code">{visible(l.text)}</td>
            </tr>
          ))}
        </tbody>
      </table>
  );
}

/** The run's time so far, counting each second while it runs. */
export function Elapsed({ run }: { run: Run }) {
  const running = run.finish === null;
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!running) return;
    const t = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(t);
  }, [running]);
  return <>{fmtElapsed((running ? now : run.finishedAt ?? run.startedAt) - run.startedAt)}</>;
}

function Working({ run, status }: { run: Run; status: string }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(t);
  }, []);
  return (
    <div class="working" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" /> {status || "Working"} · {fmtElapsed(now - run.startedAt)}
      {run.totalTokens > 0 && ` · ${fmtTokens(run.totalTokens)} tokens`}
      {run.costUsd !== null && ` · ${fmtCost(run.costUsd)}`}
    </div>
  );
}

/** The run summary's separator: a no-break space before the dot keeps it on the line of the
 * figure it follows. */
const DOT = "\u00a0· ";

function RunSummary({ run, vault, actions, canUndo }: { run: Run; vault: string; actions: Actions; canUndo: boolean }) {
  const [undoing, setUndoing] = useState(false);
  const [told, setTold] = useState("");
  const f = run.finish;
  if (f === null) return null;
  const elapsed = (run.finishedAt ?? run.startedAt) - run.startedAt;
  return (
    <section class={`summary summary-${f.reason}`} aria-label="Run summary">
      <div class="summary-line">
        {/* One run of text, each "·" tied to the word before it (no-break space), so a wrapped
            line never begins with one. */}
        <span>
          <span class="summary-message">{f.message}</span>
          {/step/i.test(f.message) ? "" : `${DOT}${f.steps} step${f.steps === 1 ? "" : "s"}`}{DOT}{fmtTokens(run.totalTokens)} tokens
          {run.costUsd !== null && `${DOT}${fmtCost(run.costUsd)}`}{DOT}{fmtElapsed(elapsed)}{DOT}{run.changed.length} note
          {run.changed.length === 1 ? "" : "s"} changed
        </span>
        {(f.undo || canUndo) && run.changed.length > 0 && !run.undone && (
          <button
            type="button"
            disabled={undoing}
            onClick={() => {
              setUndoing(true);
              void actions.undo(run.runId).then((outcome) => {
                setUndoing(false);
                setTold(outcome ?? "");
              });
            }}
          >
            Undo
          </button>
        )}
      </div>
      {/* A line of its own: inside the wrapping line above it began a line with a stray "·". */}
      {run.undone && <p class="undone" role="status">Undone{told ? `: ${told}` : ""}</p>}
      {run.changed.length > 0 && <ChangedList run={run} vault={vault} />}
    </section>
  );
}

/** The files a run changed, each with its +/- line counts, a link to the note while it is in
 * the vault, and where it came from when the run moved it. */
export function ChangedList({ run, vault }: { run: Run; vault: string }) {
  const files: ChangedFile[] = changedFiles(run);
  return (
    <ul class="changed" aria-label="Notes changed">
      {files.map((f) => {
        const gone = run.undone || run.gone.includes(f.path);
        return (
          <li key={f.path}>
            {gone ? (
              <span class="gone">
                <span class="path">{f.path}</span> <span class="muted">({run.undone ? "undone" : "no longer in the vault"})</span>
              </span>
            ) : (
              <a class="path" href={obsidianUri(vault, f.path)}>{f.path}</a>
            )}
            {f.counts && !(f.movedFrom && f.counts.added === 0 && f.counts.removed === 0) && (
              <span class="counts">
                {" "}<span class="plus">+{f.counts.added}</span> <span class="minus">−{f.counts.removed}</span>
              </span>
            )}
            {f.movedFrom && <span class="muted moved-from"> (moved from {f.movedFrom})</span>}
          </li>
        );
      })}
    </ul>
  );
}

function str(v: unknown): string | null {
  return typeof v === "string" && v ? v : null;
}

function firstLine(text: string): string {
  const line = text.trim().split("\n")[0] ?? "";
  return line.length > 140 ? `${line.slice(0, 137)}…` : line;
}

export function fmtTokens(n: number): string {
  return n >= 10000 ? `${(n / 1000).toFixed(1)}k` : n.toLocaleString("en-US");
}

export function fmtCost(usd: number): string {
  return `$${usd < 0.01 ? usd.toFixed(4) : usd.toFixed(2)}`;
}

export function fmtElapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}
