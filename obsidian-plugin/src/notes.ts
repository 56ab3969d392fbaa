/**
 * Showing what a run changed: notes already open are refreshed from disk, the others are opened
 * in background tabs (at most `limit`, so a bulk edit of fifty notes does not open fifty tabs).
 *
 * Paths are the vault-relative paths the tools reported (`.md` may be missing). A path Obsidian
 * does not know (yet: its file watcher may not have seen a new note) is returned as missing, so
 * the caller can try once more a moment later; a deleted note is simply never found.
 */

import { type App, MarkdownView, TFile } from "obsidian";

export interface Shown {
  refreshed: string[];
  opened: string[];
  missing: string[];
}

export async function showChanged(app: App, paths: string[], options: { open: boolean; limit?: number }): Promise<Shown> {
  const shown: Shown = { refreshed: [], opened: [], missing: [] };
  const limit = options.limit ?? 5;
  for (const raw of new Set(paths)) {
    const path = raw.replace(/^\/+/, "");
    const found = app.vault.getAbstractFileByPath(path) ?? app.vault.getAbstractFileByPath(`${path}.md`);
    if (!(found instanceof TFile)) {
      shown.missing.push(path);
      continue;
    }
    const views = app.workspace
      .getLeavesOfType("markdown")
      .map((leaf) => leaf.view)
      .filter((view): view is MarkdownView => view instanceof MarkdownView && view.file?.path === found.path);
    if (views.length > 0) {
      const disk = await app.vault.adapter.read(found.path);
      for (const view of views) {
        // Obsidian also reloads on its own when it notices the change; this makes it immediate.
        if (view.getViewData() !== disk) view.setViewData(disk, false);
      }
      shown.refreshed.push(found.path);
    } else if (options.open && shown.opened.length < limit) {
      await app.workspace.getLeaf("tab").openFile(found, { active: false });
      shown.opened.push(found.path);
    }
  }
  return shown;
}
