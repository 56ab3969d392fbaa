/**
 * vaultpilot for Obsidian: the agent view (web/src's components) in the right sidebar, as a thin
 * client of `vaultpilot serve`. The plugin adds what only Obsidian knows: the active note, the
 * selection, opening notes from answers and showing the notes a run changed.
 *
 * One connection is shared by the views and the commands; it exists while a view is open or a
 * command needs it, and is closed when the last user lets go (and on unload). The plugin reads
 * the connection's events through web/src's reducer too, to know each run's changed notes and
 * the last finished run (for "Undo the last agent run").
 *
 * Nothing here writes into the vault: the server's tools do, and only on the person's request.
 */

import { FileSystemAdapter, MarkdownView, Notice, Plugin, type WorkspaceLeaf, requestUrl } from "obsidian";
import { emptyState, reduce, type ViewState } from "../web/src/state";
import type { ServerFrame } from "../web/src/wire";
import { connectServer, probeSocket, type ServerConnection, type SocketFactory, type SocketLike } from "./src/connection";
import { showChanged } from "./src/notes";
import {
  getVaults,
  type HttpGet,
  keyMessage,
  matchVault,
  notServedMessage,
  originMessage,
} from "./src/server";
import { type VaultpilotSettings, DEFAULT_SETTINGS, httpBase, readSettings, serveCommand, wsUrl } from "./src/settings";
import { VaultpilotSettingTab } from "./src/settingsTab";
import { VIEW_TYPE, VaultpilotView, type ViewHost } from "./src/view";

/** Obsidian's requestUrl: no CORS and no Origin header, unlike the page's fetch. */
const obsidianGet: HttpGet = async (url, headers) => {
  const answer = await requestUrl({ url, method: "GET", headers, throw: false });
  let json: unknown = null;
  try {
    json = answer.json;
  } catch {
    // not JSON: the caller says the answer cannot be read
  }
  return { status: answer.status, json };
};

export default class VaultpilotPlugin extends Plugin implements ViewHost {
  settings: VaultpilotSettings = { ...DEFAULT_SETTINGS };
  /** How sockets and GETs are made; tests point these at a local server. */
  socketFactory: SocketFactory = (url) => new WebSocket(url) as unknown as SocketLike;
  httpGet: HttpGet = obsidianGet;
  /** Delays of the reconnect backoff (ms). */
  retryMs = 500;
  maxRetryMs = 10_000;
  /** How long a command waits for the connection before saying the server is not there. */
  commandWaitMs = 3000;

  private connection: ServerConnection | null = null;
  private readonly users = new Set<object>();
  private runs: ViewState = emptyState;

  override async onload(): Promise<void> {
    await this.loadSettings();
    this.registerView(VIEW_TYPE, (leaf) => new VaultpilotView(leaf, this));
    this.addRibbonIcon("bot", "Open vaultpilot", () => void this.activateView());
    this.addCommand({ id: "open", name: "Open vaultpilot", callback: () => void this.activateView() });
    this.addCommand({ id: "ask-note", name: "Ask about the current note", callback: () => void this.askAboutNote() });
    this.addCommand({ id: "ask-selection", name: "Ask about the selection", callback: () => void this.askAboutSelection() });
    this.addCommand({ id: "undo", name: "Undo the last agent run", callback: () => void this.undoLastRun() });
    this.addSettingTab(new VaultpilotSettingTab(this.app, this));
  }

  override onunload(): void {
    this.users.clear();
    this.dropConnection();
  }

  async loadSettings(): Promise<void> {
    this.settings = readSettings(await this.loadData());
  }

  async saveSettings(): Promise<void> {
    await this.saveData(this.settings);
  }

  /** The vault's folder on disk ("" if this is not a desktop vault). */
  vaultPath(): string {
    const adapter = this.app.vault.adapter;
    return adapter instanceof FileSystemAdapter ? adapter.getBasePath() : "";
  }

  vaultId(): string | null {
    return this.settings.vaultId || null;
  }

  // ----- the shared connection

  acquire(user: object): ServerConnection {
    this.users.add(user);
    return (this.connection ??= this.connect());
  }

  release(user: object): void {
    this.users.delete(user);
    if (this.users.size === 0) this.dropConnection();
  }

  /** Remake the connection with the current settings (address or key changed). */
  reconnect(): void {
    if (this.connection === null) return;
    this.dropConnection();
    const fresh = this.connect();
    this.connection = fresh;
    for (const view of this.views()) view.remount(fresh);
  }

  private connect(): ServerConnection {
    const target = httpBase(this.settings.address);
    const base = "base" in target ? target.base : "http://invalid";
    const connection = connectServer({
      base,
      wsUrl: wsUrl(base),
      key: this.settings.apiKey,
      socket: this.socketFactory,
      get: this.httpGet,
      down: () => ("error" in target ? target.error : `Cannot reach vaultpilot at ${base}. Start it with: ${serveCommand(this.vaultPath())}`),
      onKey: (key) => {
        this.settings.apiKey = key;
        void this.saveSettings();
      },
      retryMs: this.retryMs,
      maxRetryMs: this.maxRetryMs,
    });
    connection.subscribe((frame) => this.onFrame(frame));
    return connection;
  }

  private dropConnection(): void {
    this.connection?.close();
    this.connection = null;
  }

  private onFrame(frame: ServerFrame): void {
    this.runs = reduce(this.runs, frame, Date.now());
    if (frame.type !== "event" || frame.event.kind !== "run_finished" || !this.isMine(frame.vaultId)) return;
    const run = this.runs.runs.find((r) => r.runId === frame.runId);
    if (run && run.changed.length > 0) void this.showChanged(run.changed, true);
  }

  private isMine(vaultId: string | null): boolean {
    return vaultId === null || this.settings.vaultId === "" || vaultId === this.settings.vaultId;
  }

  private async showChanged(paths: string[], again: boolean): Promise<void> {
    const shown = await showChanged(this.app, paths, { open: this.settings.openChanged });
    // A note the run created may not be known to Obsidian yet: its watcher catches up quickly.
    if (again && shown.missing.length > 0) window.setTimeout(() => void this.showChanged(shown.missing, false), 1000);
  }

  // ----- the view and the commands

  views(): VaultpilotView[] {
    return this.app.workspace
      .getLeavesOfType(VIEW_TYPE)
      .map((leaf) => leaf.view)
      .filter((view): view is VaultpilotView => view instanceof VaultpilotView);
  }

  async activateView(): Promise<VaultpilotView | null> {
    const { workspace } = this.app;
    let leaf: WorkspaceLeaf | null = workspace.getLeavesOfType(VIEW_TYPE)[0] ?? null;
    if (leaf === null) {
      leaf = workspace.getRightLeaf(false);
      if (leaf === null) return null;
      await leaf.setViewState({ type: VIEW_TYPE, active: true });
    }
    await workspace.revealLeaf(leaf);
    return leaf.view instanceof VaultpilotView ? leaf.view : null;
  }

  async askAboutNote(): Promise<void> {
    const file = this.app.workspace.getActiveFile();
    if (file === null) {
      new Notice("vaultpilot: open a note first, then ask about it.");
      return;
    }
    (await this.activateView())?.setDraft("", [file.path]);
  }

  async askAboutSelection(): Promise<void> {
    const info = this.app.workspace.getActiveViewOfType(MarkdownView) ?? this.app.workspace.activeEditor;
    const selection = info?.editor?.getSelection() ?? "";
    if (selection.trim() === "") {
      new Notice("vaultpilot: select some text in a note first, then ask about it.");
      return;
    }
    const quoted = selection.replace(/\r\n?/g, "\n").trimEnd().split("\n").map((line) => `> ${line}`).join("\n");
    const attach = info?.file ? [info.file.path] : [];
    (await this.activateView())?.setDraft(`${quoted}\n\n`, attach);
  }

  async undoLastRun(): Promise<void> {
    const token = {};
    const connection = this.acquire(token);
    try {
      if (!(await waitOpen(connection, this.commandWaitMs))) {
        new Notice(`vaultpilot: not connected, so nothing was undone. ${this.notConnectedHint(connection.state)}`);
        return;
      }
      if (!(connection.hello?.commands ?? []).includes("UndoRun")) {
        new Notice(`vaultpilot: undo is not available on this server (version ${connection.hello?.version ?? "?"}): it does not offer UndoRun.`);
        return;
      }
      const last = [...this.runs.runs].reverse().find((r) => r.finish !== null && this.isMine(r.vaultId));
      if (last === undefined) {
        new Notice("vaultpilot: no finished agent run to undo since Obsidian started.");
        return;
      }
      const reply = await connection.send("UndoRun", { runId: last.runId });
      if (reply.success) {
        new Notice("vaultpilot: the last agent run's changes were undone.");
        void this.showChanged(last.changed, true);
      } else {
        new Notice(`vaultpilot: undo failed: ${reply.error?.message ?? "the server gave no reason."}`);
      }
    } finally {
      this.release(token);
    }
  }

  private notConnectedHint(state: string): string {
    if (state === "signin") return keyMessage(this.settings.apiKey !== "");
    return `Start the server: ${serveCommand(this.vaultPath())}`;
  }

  /** Check every step to a working connection; the message names the fix when one fails. */
  async testConnection(): Promise<{ ok: boolean; message: string }> {
    const target = httpBase(this.settings.address);
    if ("error" in target) return { ok: false, message: target.error };
    const path = this.vaultPath();
    const answer = await getVaults(this.httpGet, target.base, this.settings.apiKey, path);
    if (answer.kind !== "ok") return { ok: false, message: answer.message };
    const id = matchVault(answer.vaults, path);
    if (id === null) return { ok: false, message: notServedMessage(target.base, answer.vaults, path) };
    if (id !== this.settings.vaultId) {
      this.settings.vaultId = id;
      await this.saveSettings();
    }
    const probe = await probeSocket(this.socketFactory, wsUrl(target.base), this.settings.apiKey);
    if (probe.kind === "key") return { ok: false, message: keyMessage(true) };
    if (probe.kind === "refused") return { ok: false, message: originMessage(target.base) };
    this.reconnect();
    return { ok: true, message: `Connected to vaultpilot ${probe.hello.version}: this vault is "${id}" on the server.` };
  }
}

/** Resolves true once the connection is open, false when it is not within `ms` (or wants a key). */
function waitOpen(connection: ServerConnection, ms: number): Promise<boolean> {
  if (connection.state === "open") return Promise.resolve(true);
  if (connection.state === "signin") return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = window.setTimeout(() => {
      stop();
      resolve(false);
    }, ms);
    let stop: () => void = () => undefined;
    stop = connection.onState((state) => {
      if (state === "open" || state === "signin") {
        window.clearTimeout(timer);
        stop();
        resolve(state === "open");
      }
    });
  });
}
