/**
 * "This run": the latest run's status, approval mode, time, tokens, cost, and the notes it read
 * and changed. The right column when the view is wide, a drawer from the top bar when narrow.
 */

import { useMemo } from "preact/hooks";
import { obsidianUri } from "../markdown";
import type { Run } from "../state";
import { notesRead } from "../steps";
import type { ApprovalMode } from "../wire";
import { ChangedList, Elapsed, fmtCost, fmtTokens } from "./Steps";

/** What a run's approval mode (run_started.approval_mode) means for the person. */
const MODE_WORDS: Record<ApprovalMode, string> = {
  "read-only": "Read-only: nothing may change",
  ask: "Every change asks first",
  auto: "Destructive changes ask first",
  "auto-approve": "Nothing asks",
};

interface Props {
  last: Run | null;
  status: string;
  vaultName: string;
  id?: string;
  open?: boolean;
}

export function ThisRun({ last, status, vaultName, id, open }: Props) {
  const read = useMemo(() => (last === null ? [] : notesRead(last)), [last?.items]);
  return (
    <aside id={id} class={open ? "this-run open" : "this-run"} aria-label="This run" tabIndex={-1}>
      <h2>This run</h2>
      {last === null ? (
        <p class="muted">Nothing yet.</p>
      ) : (
        <dl>
          <dt>Status</dt>
          <dd>{status}</dd>
          {last.mode !== null && (<><dt>Approvals</dt><dd class="run-mode" data-mode={last.mode}>{MODE_WORDS[last.mode] ?? last.mode}</dd></>)}
          <dt>Elapsed</dt>
          <dd class="elapsed"><Elapsed run={last} /></dd>
          <dt>Tokens</dt>
          <dd>{fmtTokens(last.totalTokens)}</dd>
          {last.costUsd !== null && (<><dt>Cost</dt><dd>{fmtCost(last.costUsd)}</dd></>)}
          {last.allowed.length > 0 && (<><dt>Allowed without asking</dt><dd>{last.allowed.map((a) => a.split(".").pop()).join(", ")}</dd></>)}
          <dt>Notes read</dt>
          <dd>
            {read.length === 0 ? "none" : (
              <ul class="read-list" aria-label="Notes read">
                {read.map((p) => <li key={p}><a class="path" href={obsidianUri(vaultName, p)}>{p}</a></li>)}
              </ul>
            )}
          </dd>
          <dt>Notes changed</dt>
          <dd>
            {last.changed.length === 0 ? "none" : <ChangedList run={last} vault={vaultName} />}
            {last.undone && <span class="muted">Undone</span>}
          </dd>
        </dl>
      )}
    </aside>
  );
}
