/**
 * The agent view at narrow width (a phone, or the Obsidian pane): the sidebar and "This run"
 * fold into drawers opened from a slim top bar. `useNarrow` measures the view itself, not the
 * window, so the Obsidian pane (narrow inside a wide window) folds too. `useDrawers` keeps which
 * drawer is open and does what a drawer must: focus moves into it when it opens and back to its
 * button when it closes (the button, Escape, a click outside, or the host closing it).
 */

import { useEffect, useLayoutEffect, useState } from "preact/hooks";

/** At or under this width the view is one column with drawers (the web page's old breakpoint). */
export const NARROW_PX = 900;

export type DrawerName = "conversations" | "run";

/** Whether `el` is at most NARROW_PX wide, followed as it resizes. */
export function useNarrow(el: HTMLElement | null): boolean {
  const [narrow, setNarrow] = useState(
    () => typeof window !== "undefined" && typeof window.matchMedia === "function" && window.matchMedia(`(max-width: ${NARROW_PX}px)`).matches,
  );
  // A layout effect: the first paint already has the right layout, no flash of three columns.
  useLayoutEffect(() => {
    if (el === null) return;
    const measure = () => {
      const width = el.getBoundingClientRect().width;
      if (width > 0) setNarrow(width <= NARROW_PX); // 0: not laid out (hidden, or no layout at all)
    };
    measure();
    if (typeof ResizeObserver === "undefined") return;
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, [el]);
  return narrow;
}

let instances = 0;

export interface Drawers {
  open: DrawerName | null;
  /** Element ids, unique per mounted view (the plugin may mount several). */
  ids: Record<DrawerName, string>;
  toggle(name: DrawerName): void;
  /** Close, and give the focus back to the drawer's button. */
  close(): void;
}

export function useDrawers(narrow: boolean, root: HTMLElement | null): Drawers {
  const [open, setOpen] = useState<DrawerName | null>(null);
  const [ids] = useState(() => {
    instances += 1;
    return { conversations: `vp-conversations-${instances}`, run: `vp-this-run-${instances}` };
  });
  const find = (id: string) => root?.querySelector<HTMLElement>(`#${id}`) ?? null;
  const buttonOf = (name: DrawerName) => root?.querySelector<HTMLElement>(`[aria-controls="${ids[name]}"]`) ?? null;

  const close = () => {
    if (open === null) return;
    setOpen(null);
    buttonOf(open)?.focus();
  };

  // Wide again: there are no drawers, only columns.
  useEffect(() => {
    if (!narrow) setOpen(null);
  }, [narrow]);

  // A layout effect: the focus is in the drawer as soon as it shows, before any click can close it.
  useLayoutEffect(() => {
    if (open === null) return;
    const panel = find(ids[open]);
    // Into the drawer: the conversation shown, if it is listed; otherwise the drawer itself,
    // so the next Tab reaches its first control (not "Sign out" by accident).
    const current = panel?.querySelector<HTMLElement>('[aria-current="true"]');
    (current ?? panel)?.focus({ preventScroll: true });
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape" || e.defaultPrevented) return;
      // A note's preview opened from the drawer closes first, on its own Escape.
      if (panel?.querySelector('[role="dialog"]')) return;
      e.preventDefault();
      close();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [open]);

  return {
    open,
    ids,
    toggle(name) {
      if (open === name) close();
      else setOpen(name);
    },
    close,
  };
}

interface BarProps {
  drawers: Drawers;
  vaultName: string;
  running: boolean;
  onNew(): void;
}

/** The slim bar over the conversation at narrow width. */
export function TopBar({ drawers, vaultName, running, onNew }: BarProps) {
  const { open, ids } = drawers;
  return (
    <header class="topbar">
      <button
        type="button"
        class="bar-toggle"
        aria-expanded={open === "conversations"}
        aria-controls={ids.conversations}
        onClick={() => drawers.toggle("conversations")}
      >
        <span aria-hidden="true">☰</span> Conversations
      </button>
      <span class="vault-name" title={vaultName}>{vaultName}</span>
      <button type="button" class="bar-new" aria-label="New conversation" title="New conversation" onClick={onNew}>
        <span aria-hidden="true">+</span><span class="word"> New</span>
      </button>
      <button
        type="button"
        class="bar-toggle"
        aria-expanded={open === "run"}
        aria-controls={ids.run}
        title={running ? "A run is going" : undefined}
        onClick={() => drawers.toggle("run")}
      >
        This run{running && <span class="dot bar-dot" aria-hidden="true" />}
      </button>
    </header>
  );
}
