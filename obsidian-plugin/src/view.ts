/**
 * The right-sidebar view ("vaultpilot"): the shared AgentView (web/src) mounted in the pane.
 *
 * Lifecycle: `onOpen` takes the plugin's connection and renders; `onClose` unmounts the Preact
 * tree (its effects unsubscribe from the connection) and gives the connection back, so the
 * plugin can close it when no view is left. `setDraft` re-renders with a draft (a note to attach,
 * a quoted selection). A click on an `obsidian://open` link of this vault (what `[[links]]` in
 * answers become) opens the note in the app instead of going through the operating system.
 */

import { ItemView, type WorkspaceLeaf } from "obsidian";
import { h, render } from "preact";
import { AgentView } from "../../web/src/components/AgentView";
import type { Draft } from "../../web/src/components/Composer";
import type { ServerConnection } from "./connection";

export const VIEW_TYPE = "vaultpilot";

/** What the view needs from the plugin. */
export interface ViewHost {
  acquire(view: VaultpilotView): ServerConnection;
  release(view: VaultpilotView): void;
  vaultId(): string | null;
}

export class VaultpilotView extends ItemView {
  private connection: ServerConnection | null = null;
  private draft: Draft | null = null;
  private root: HTMLElement | null = null;

  constructor(leaf: WorkspaceLeaf, private readonly host: ViewHost) {
    super(leaf);
  }

  override getViewType(): string {
    return VIEW_TYPE;
  }

  override getDisplayText(): string {
    return "vaultpilot";
  }

  override getIcon(): string {
    return "bot";
  }

  /** Whether the shared view is mounted (between onOpen and onClose). */
  get mounted(): boolean {
    return this.root !== null;
  }

  override async onOpen(): Promise<void> {
    const root = this.contentEl;
    root.replaceChildren();
    root.classList.add("vaultpilot-view");
    root.addEventListener("click", this.onClick, true);
    this.root = root;
    this.connection = this.host.acquire(this);
    this.rerender();
  }

  override async onClose(): Promise<void> {
    const root = this.root;
    this.root = null;
    if (root) {
      root.removeEventListener("click", this.onClick, true);
      render(null, root); // unmounts: every effect's cleanup unsubscribes from the connection
      root.classList.remove("vaultpilot-view");
    }
    if (this.connection) {
      this.connection = null;
      this.host.release(this);
    }
  }

  setDraft(text: string, attach: string[]): void {
    this.draft = { id: (this.draft?.id ?? 0) + 1, text, attach };
    this.rerender();
  }

  /** Render again, e.g. after the settings changed the connection or the vault. */
  remount(connection: ServerConnection): void {
    if (this.root === null) return;
    render(null, this.root);
    this.connection = connection;
    this.rerender();
  }

  private rerender(): void {
    if (this.root === null || this.connection === null) return;
    render(h(AgentView, { connection: this.connection, vaultId: this.host.vaultId(), draft: this.draft }), this.root);
  }

  private readonly onClick = (event: MouseEvent): void => {
    const target = event.target instanceof Element ? event.target.closest("a") : null;
    const href = target?.getAttribute("href") ?? "";
    if (!href.startsWith("obsidian://open?")) return;
    const params = new URLSearchParams(href.slice("obsidian://open?".length));
    const file = params.get("file");
    const vault = params.get("vault");
    // A link into another vault is left to Obsidian's own URI handler.
    if (!file || (vault !== null && vault !== this.app.vault.getName())) return;
    event.preventDefault();
    event.stopPropagation();
    void this.app.workspace.openLinkText(file, "", event.ctrlKey || event.metaKey ? "tab" : false);
  };
}
