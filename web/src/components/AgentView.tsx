/**
 * The agent view: everything a person sees, mounted with a Connection (the web page passes a
 * WebSocket connection; the Obsidian plugin can pass its own). Frames are queued and applied
 * once per animation frame, so a burst of streamed tokens costs one render. A host may pass
 * `vaultId` (the vault to select when the server serves it) and `draft` (see Composer).
 * Three columns when the view is wide; at most 900 px wide (a phone, the Obsidian pane) the
 * sidebar and "This run" fold into drawers opened from a top bar (see Narrow).
 */

import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { Connection, ConnectionState } from "../connection";
import { allowForRun, emptyState, loadTranscript, markStopped, markUndone, reduce, rememberReason, startRun, type ViewState } from "../state";
import type { Run } from "../state";
import type { ConversationSummary, HelloFrame, JsonObject, ServerFrame, VaultInfo } from "../wire";
import { isObject } from "../wire";
import { Composer, type Draft, type Suggestion } from "./Composer";
import { NoModelPanel, SignInPanel } from "./Panels";
import { Sidebar } from "./Sidebar";
import { type Actions, RunView } from "./Steps";
import { TopBar, useDrawers, useNarrow } from "./Narrow";
import { ThisRun } from "./ThisRun";

/** The agent loop's status while a run waits at a step boundary (vaultpilot.agent.loop). */
function isPaused(status: string): boolean {
  return status.startsWith("Paused before step");
}

interface Notice {
  text: string;
  ok: boolean;
}

export function AgentView({ connection, vaultId, draft }: { connection: Connection; vaultId?: string | null; draft?: Draft | null }) {
  const [conn, setConn] = useState<{ state: ConnectionState; detail: string; hello: HelloFrame | null }>({
    state: connection.state, detail: "", hello: connection.hello,
  });
  // The server start the view is mounted on, when the connection was greeted before it mounted
  // (the plugin's view opens on a live connection): a later hello then tells a restart.
  const [view, setView] = useState<ViewState>(() => ({ ...emptyState, serverId: connection.hello?.server_id ?? null }));
  const viewRef = useRef(view);
  viewRef.current = view;
  const [vaults, setVaults] = useState<VaultInfo[]>([]);
  const [vault, setVault] = useState<string | null>(null);
  const [noModel, setNoModel] = useState<string | null>(null);
  const [configPath, setConfigPath] = useState<string | null>(null);
  const [notices, setNotices] = useState<Notice[]>([]);
  // undefined: not loaded yet; null: the server does not keep conversations.
  const [conversations, setConversations] = useState<ConversationSummary[] | null | undefined>(undefined);
  // Runs a pause was asked for that has not been taken yet (it waits for the next step).
  const [pausing, setPausing] = useState<string[]>([]);
  const [continuing, setContinuing] = useState<string | null>(null);
  const [since, setSince] = useState(0); // runs before this index belong to an earlier conversation
  const scroller = useRef<HTMLDivElement>(null);
  // At narrow width (a phone, the Obsidian pane) the sidebar and "This run" are drawers.
  const [shell, setShell] = useState<HTMLDivElement | null>(null);
  const narrow = useNarrow(shell);
  const drawers = useDrawers(narrow, shell);
  const [pinned, setPinned] = useState(true);

  // A problem is an alert; "ok" news (a pause taken) is a quiet status line that goes by itself.
  const notify = (text: string, ok = false) => {
    const notice = { text, ok };
    setNotices((n) => [...n.slice(-3), notice]);
    if (ok) window.setTimeout(() => setNotices((n) => n.filter((x) => x !== notice)), 6000);
  };

  useEffect(() => {
    const off = connection.onState((state, detail) => setConn({ state, detail, hello: connection.hello }));
    // The hello can arrive between the first render and this subscription: catch up with it.
    setConn((c) => (c.state === connection.state && c.hello === connection.hello ? c : { ...c, state: connection.state, hello: connection.hello }));
    return off;
  }, [connection]);

  useEffect(() => {
    let queue: ServerFrame[] = [];
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      const frames = queue;
      queue = [];
      let next = viewRef.current;
      const now = Date.now();
      for (const f of frames) next = reduce(next, f, now);
      viewRef.current = next;
      setView(next);
      for (const f of frames) autoApprove(f, next);
    };
    // A hello that came between the first render and this subscription is not replayed to it:
    // take its server start now, so the next hello from another start is seen as a restart.
    const greeting = connection.hello?.server_id;
    if (typeof greeting === "string" && (viewRef.current.serverId ?? null) === null) {
      viewRef.current = { ...viewRef.current, serverId: greeting };
      setView(viewRef.current);
    }
    return connection.subscribe((frame) => {
      // A hello says which server start the events come from (a restart stops the runs here).
      if (frame.type !== "event" && frame.type !== "hello") return;
      queue.push(frame);
      if (!scheduled) {
        scheduled = true;
        // rAF is paused in hidden tabs; the timeout keeps the state current there.
        const t = window.setTimeout(flush, 100);
        requestAnimationFrame(() => { window.clearTimeout(t); if (scheduled) flush(); });
      }
    });
  }, [connection]);

  useEffect(() => {
    if (conn.state !== "open") return;
    if (conn.hello?.model === null) setNoModel("");
    const load = () => void connection.vaults().then((list) => {
      setVaults(list);
      const preferred = list.some((x) => x.vaultId === vaultId) ? vaultId ?? null : null;
      setVault((v) => (v !== null && list.some((x) => x.vaultId === v) ? v : preferred ?? list[0]?.vaultId ?? null));
    });
    load();
    const t = window.setInterval(load, 15000);
    return () => window.clearInterval(t);
  }, [conn.state, connection]);

  useEffect(() => {
    // The no-model panel names the config file the server reads.
    if (noModel !== null && configPath === null) void connection.modelSetup().then((m) => setConfigPath(m?.configPath ?? null));
  }, [noModel !== null, connection]);

  useEffect(() => {
    if (vaultId && vaults.some((x) => x.vaultId === vaultId)) setVault(vaultId);
  }, [vaultId]);

  const runs = useMemo(() => view.runs.slice(since).filter((r) => vault === null || r.vaultId === null || r.vaultId === vault), [view, vault, since]);
  const active = runs.find((r) => r.finish === null) ?? null;
  const finishedCount = view.runs.filter((r) => r.finish !== null).length;
  const startedCount = view.runs.length;

  // Listed again when a run starts (its conversation is in the list from its first message)
  // and when one finishes (its title and time).
  useEffect(() => {
    if (vault !== null && conn.state === "open") void connection.conversations(vault).then(setConversations);
  }, [vault, conn.state, startedCount, finishedCount]);

  useEffect(() => {
    const el = scroller.current;
    if (el && pinned) el.scrollTop = el.scrollHeight;
  }, [view, pinned]);

  function autoApprove(frame: ServerFrame, state: ViewState) {
    if (frame.type !== "event" || frame.event.kind !== "approval_required") return;
    const run = state.runs.find((r) => r.runId === frame.runId);
    const e = frame.event;
    const op = `${e.name}${e.operation ? `.${e.operation}` : ""}`;
    if (run?.allowed.includes(op)) void connection.send("ApproveToolCall", { callId: e.call_id, approved: true });
  }

  const actions: Actions = {
    approve(callId, approved, opts) {
      const args: JsonObject = { callId, approved };
      if (opts.reason) args["reason"] = opts.reason;
      if (opts.files) args["files"] = opts.files;
      if (opts.forRun && active) setView((v) => (viewRef.current = allowForRun(v, active.runId, opts.forRun ?? "")));
      if (!approved && opts.reason) setView((v) => (viewRef.current = rememberReason(v, callId, opts.reason ?? "")));
      return connection.send("ApproveToolCall", args).then((r) => {
        if (!r.success) notify(r.error?.message ?? "The approval was not taken.");
        return r.success;
      });
    },
    async undo(runId) {
      // An agent run is one change set, named by the run id; the server knows the run's vault.
      const args: JsonObject = { runId };
      if (vault !== null) args["vaultId"] = vault;
      const r = await connection.send("UndoRun", args);
      const restored = isObject(r.result) && Array.isArray(r.result["restored"]) ? r.result["restored"].length : 0;
      if (!r.success) {
        notify(r.error?.message ?? "Undo failed.");
        return null;
      }
      // Said in the run's summary, where the person clicked, not in a banner over the conversation.
      setView((v) => (viewRef.current = markUndone(v, runId)));
      const said = isObject(r.result) && typeof r.result["summary"] === "string" ? r.result["summary"] : null;
      return said ?? `${restored} file${restored === 1 ? "" : "s"} restored`;
    },
  };

  const send = async (text: string, attached: string[]) => {
    const goal = attached.length ? `${text}\n\n${attached.map((p) => `@"${p}"`).join(" ")}` : text;
    const args: JsonObject = { goal };
    if (vault !== null) args["vaultId"] = vault;
    if (continuing !== null) args["conversationId"] = continuing;
    setPinned(true);
    const reply = await connection.send("StartAgent", args);
    if (reply.success && isObject(reply.result) && typeof reply.result["runId"] === "string") {
      const runId = reply.result["runId"];
      setView((v) => (viewRef.current = startRun(v, runId, vault, text, attached, Date.now())));
      // The next message continues this conversation, until "New conversation".
      const conv = reply.result["conversationId"];
      if (typeof conv === "string") setContinuing(conv);
    } else if (reply.error?.code === "setup_required") {
      setNoModel(reply.error.message);
    } else {
      notify(reply.error?.message ?? "The run did not start.");
    }
  };

  const stop = () => {
    if (active === null) return;
    const runId = active.runId;
    void connection.send("InterruptAgent", { runId, force: true }).then((r) => {
      if (r.success) return;
      notify(r.error?.message ?? "The run could not be stopped.");
      // The server does not run it (any more): nothing will finish it, so it ends here.
      if (r.error?.code === "not_found") {
        setView((v) => (viewRef.current = markStopped(v, runId, "Stopped: the server was no longer running it.", Date.now())));
      }
    });
  };
  // InterruptAgent without force pauses at the next step; the run's status says when it has.
  // Until then (e.g. while an approval waits) the pause is pending, and Resume cancels it.
  const canPause = conn.hello?.commands?.includes("ResumeAgent") ?? false;
  const pauseAsked = active !== null && pausing.includes(active.runId);
  const paused = active === null || !canPause ? null : isPaused(active.status) || pauseAsked;
  const pause = () => {
    if (active === null) return;
    const runId = active.runId;
    void connection.send("InterruptAgent", { runId, force: false }).then((r) => {
      if (r.success) setPausing((p) => (p.includes(runId) ? p : [...p, runId]));
      else notify(r.error?.message ?? "The run could not be paused.");
    });
  };
  const resume = () => {
    if (active === null) return;
    const runId = active.runId;
    void connection.send("ResumeAgent", { runId }).then((r) => {
      if (r.success) setPausing((p) => p.filter((x) => x !== runId));
      else notify(r.error?.message ?? "The run could not be resumed.");
    });
  };
  // What the run is doing, with a pause asked for and not yet taken.
  useEffect(() => {
    // Once the pause is taken, the run's status says so; Resume then continues it.
    if (active !== null && isPaused(active.status) && pausing.includes(active.runId)) setPausing((p) => p.filter((x) => x !== active.runId));
  }, [active?.status]);
  const statusOf = (run: Run) =>
    run.finish === null && pausing.includes(run.runId) && !isPaused(run.status) ? `${run.status} · pauses before its next step` : run.status;

  const suggest = async (query: string): Promise<Suggestion[]> => {
    const args: JsonObject = query.trim()
      ? { queryType: "semantic_search", query, limit: 8 }
      : { queryType: "recent_changes", limit: 8 };
    if (vault !== null) args["VaultID"] = vault;
    const reply = await connection.send("obsidian_query_vault", args);
    const rows = isObject(reply.result) && Array.isArray(reply.result["results"]) ? reply.result["results"] : [];
    return rows.filter(isObject).map((r) => ({ path: String(r["path"] ?? ""), title: String(r["title"] ?? r["path"] ?? "") })).filter((s) => s.path);
  };

  // The model is read when the server starts: the panel stays until the server has one.
  const checkModel = () => void connection.modelSetup().then((m) => {
    if (m === null || m.model !== null) setNoModel(null);
    else notify(`Still no model: set one in ${m.configPath} or the environment, then restart the server.`);
  });

  // A past conversation: its runs read back from the server, and the next message continues it.
  const openConversation = async (id: string) => {
    if (vault === null) return;
    setContinuing(id);
    const transcript = await connection.conversation(vault, id);
    if ("error" in transcript) {
      notify(transcript.error);
      return;
    }
    const loaded = loadTranscript(viewRef.current, transcript);
    const runs = loaded.state.runs.map((r, i) => (i >= loaded.first && r.vaultId === null ? { ...r, vaultId: vault } : r));
    viewRef.current = { ...loaded.state, runs };
    setView(viewRef.current);
    setSince(loaded.first);
    setPinned(true);
  };

  // Web page only (the connection can sign out): end the session, forget what it showed.
  const signOut = connection.signOut === undefined ? undefined : () => void connection.signOut?.().then((why) => {
    if (why !== null) {
      notify(why);
      return;
    }
    viewRef.current = emptyState;
    setView(emptyState);
    setSince(0);
    setContinuing(null);
    setConversations(undefined);
    setNotices([]);
  });

  // Approvals still waiting on this page (the message box takes the keys once none is).
  const waiting = runs.reduce((n, r) => n + r.items.filter((it) =>
    (it.type === "approval" && it.resolved === null) || (it.type === "tool" && it.approval !== null && it.approval.resolved === null)).length, 0);
  const vaultName = vaults.find((v) => v.vaultId === vault)?.name ?? vault ?? "";
  const canUndo = conn.hello?.commands?.includes("UndoRun") ?? false;
  const last = runs[runs.length - 1] ?? null;

  if (conn.state === "signin") {
    return (
      <main class="shell single">
        <SignInPanel detail={conn.detail} keyKept={connection.keyKept} onSignIn={(key) => connection.signIn(key)} />
      </main>
    );
  }

  const startNew = () => {
    drawers.close();
    setSince(view.runs.length);
    setContinuing(null);
  };
  return (
    <div class={narrow ? "shell narrow" : "shell"} ref={setShell}>
      {narrow && <TopBar drawers={drawers} vaultName={vaultName} running={active !== null} onNew={startNew} />}
      <Sidebar
        connection={connection}
        vaults={vaults}
        vault={vault}
        onVault={(id) => setVault(id)}
        onNew={startNew}
        conversations={conversations}
        current={continuing}
        onContinue={(id) => { drawers.close(); void openConversation(id); }}
        onSignOut={signOut}
        id={narrow ? drawers.ids.conversations : undefined}
        open={drawers.open === "conversations"}
      />
      {drawers.open !== null && <div class="drawer-backdrop" aria-hidden="true" onClick={drawers.close} />}
      <main class="conversation" aria-label="Conversation" inert={drawers.open !== null}>
        {conn.state !== "open" && (
          <div class="banner" role="status">
            {conn.state === "connecting" ? "Connecting to the server…" : `The server is not answering. ${conn.detail}`}
          </div>
        )}
        {notices.map((n, i) => (
          <div class={n.ok ? "banner ok" : "banner warn"} role={n.ok ? "status" : "alert"} key={i}>
            {n.text}
            <button type="button" aria-label="Dismiss" onClick={() => setNotices(notices.filter((_, j) => j !== i))}>×</button>
          </div>
        ))}
        <div
          class="scroller"
          ref={scroller}
          // Only the person unpins (scrolling up); content growing or the window moving must not.
          onScroll={(e) => {
            const el = e.currentTarget as HTMLDivElement;
            if (el.scrollHeight - el.scrollTop - el.clientHeight < 40) setPinned(true);
          }}
          onWheel={(e) => { if (e.deltaY < 0) setPinned(false); }}
          onKeyDown={(e) => { if (["PageUp", "ArrowUp", "Home"].includes(e.key)) setPinned(false); }}
        >
          {noModel !== null && <NoModelPanel detail={noModel} configPath={configPath} onCheckAgain={checkModel} />}
          {runs.length === 0 && noModel === null && (
            <div class="empty">
              <h1>Ask your vault</h1>
              <p>The agent searches, reads and edits notes, showing each step. By default it asks before it deletes or moves a note.</p>
            </div>
          )}
          {runs.map((run) => (
            <RunView key={run.runId} run={run} status={statusOf(run)} vault={vaultName} actions={actions} canUndo={canUndo} />
          ))}
        </div>
        {!pinned && (
          <button type="button" class="jump" onClick={() => setPinned(true)}>Jump to latest</button>
        )}
        <Composer
          focusKey={`${waiting}:${active?.runId ?? ""}`}
          draft={draft ?? null} running={active !== null} disabled={conn.state !== "open"} suggest={suggest}
          onSend={(t, a) => void send(t, a)} onStop={stop} paused={paused} pausing={pauseAsked && active !== null && !isPaused(active.status)}
          onPause={pause} onResume={resume}
        />
      </main>
      <ThisRun last={last} status={last === null ? "" : statusOf(last)} vaultName={vaultName} id={narrow ? drawers.ids.run : undefined} open={drawers.open === "run"} />
    </div>
  );
}
