import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadFor, loadPlugin, pane, resetNotices, run, settle, until } from "./helpers";
import { MarkdownView } from "./obsidian";
import { FakeServer, freePort } from "./server";

const servers: FakeServer[] = [];
const cleanups: (() => unknown)[] = [];
let notices: string[] = [];
beforeEach(() => {
  notices = resetNotices();
});
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  for (const s of servers.splice(0)) await s.stop();
});

async function setup(options: ConstructorParameters<typeof FakeServer>[0] = {}, data: Record<string, unknown> = {}) {
  const server = new FakeServer(options);
  await server.start();
  servers.push(server);
  const loaded = await loadFor(server, data);
  cleanups.push(() => loaded.plugin.onunload());
  return { server, ...loaded };
}

function chips(el: HTMLElement): string[] {
  return [...el.querySelectorAll("form.composer .chip")].map((c) => c.firstChild?.textContent ?? "");
}

function message(el: HTMLElement): HTMLTextAreaElement {
  const box = el.querySelector<HTMLTextAreaElement>('textarea[aria-label="Message"]');
  if (!box) throw new Error("no message box");
  return box;
}

/** A finished run that updated `path`, as the server's events tell it. */
function finishRun(server: FakeServer, runId: string, path: string, answer = "Done."): void {
  server.emit(runId, { kind: "run_started", run_id: runId, model: "m", tools: [], max_steps: 5, token_budget: null });
  server.emit(runId, {
    kind: "tool_call", call_id: "c1", name: "obsidian_vault_manager", step: 1,
    arguments: { operation: "update", target: path, content: "new" }, raw_arguments: "{}",
  });
  server.emit(runId, {
    kind: "tool_result", call_id: "c1", name: "obsidian_vault_manager", success: true,
    result: { success: true }, preview: "updated", source: "builtin", duration_ms: 3,
  });
  server.emit(runId, { kind: "text_chunk", text: answer, step: 2 });
  server.emit(runId, {
    kind: "run_finished", reason: "done", steps: 2, prompt_tokens: 1, completion_tokens: 1, total_tokens: 2,
    text: answer, message: "Done", undo: true,
  });
}

describe("Ask about the current note", () => {
  it("opens the view with the active note attached", async () => {
    const { app, plugin } = await setup();
    await app.workspace.openNote("Projects/Plan.md", "# Plan");
    await run(plugin, "Ask about the current note");
    const el = pane(app);
    await until("the chip", () => chips(el).length === 1);
    expect(chips(el)).toEqual(["Projects/Plan.md"]);
    // Asking twice does not attach the note twice.
    await run(plugin, "Ask about the current note");
    expect(chips(el)).toEqual(["Projects/Plan.md"]);
  });

  it("says to open a note when none is active", async () => {
    const { app, plugin } = await setup();
    await run(plugin, "Ask about the current note");
    expect(notices).toEqual(["vaultpilot: open a note first, then ask about it."]);
    expect(app.workspace.getLeavesOfType("vaultpilot")).toHaveLength(0);
  });
});

describe("Ask about the selection", () => {
  it("quotes the selection in the message box and attaches its note", async () => {
    const { app, plugin, server } = await setup();
    const view = await app.workspace.openNote("Daily/2024-05-01.md", "text");
    view.selection = "first line\nsecond line";
    await run(plugin, "Ask about the selection");
    const el = pane(app);
    await until("the draft", () => message(el).value !== "");
    expect(message(el).value).toBe("> first line\n> second line\n\n");
    expect(chips(el)).toEqual(["Daily/2024-05-01.md"]);
    // What the person then sends carries both.
    await until("the connection", () => server.sockets.size === 1);
    const box = message(el);
    box.value += "Summarise this";
    box.dispatchEvent(new Event("input"));
    await settle();
    el.querySelector<HTMLFormElement>("form.composer")?.dispatchEvent(new Event("submit", { cancelable: true }));
    await until("StartAgent", () => server.received.some((r) => r.commandName === "StartAgent"));
    const start = server.received.find((r) => r.commandName === "StartAgent");
    expect(start?.arguments).toMatchObject({
      goal: '> first line\n> second line\n\nSummarise this\n\n@"Daily/2024-05-01.md"', vaultId: "notes",
    });
  });

  it("says to select text when nothing is selected", async () => {
    const { app, plugin } = await setup();
    await app.workspace.openNote("A.md", "text");
    await run(plugin, "Ask about the selection");
    expect(notices).toEqual(["vaultpilot: select some text in a note first, then ask about it."]);
  });
});

describe("Undo the last agent run", () => {
  it("says undo is not available when the server does not offer it", async () => {
    const { plugin, server } = await setup();
    await run(plugin, "Undo the last agent run");
    await until("the notice", () => notices.length === 1);
    expect(notices[0]).toBe("vaultpilot: undo is not available on this server (version 0.1.0): it does not offer UndoRun.");
    expect(server.received).toEqual([]);
  });

  it("sends UndoRun for the last finished run when the server offers it", async () => {
    const { app, plugin, server } = await setup({ commands: ["StartAgent", "UndoRun"] }, { vaultId: "notes" });
    await run(plugin, "Undo the last agent run");
    await until("the notice", () => notices.length === 1);
    expect(notices[0]).toBe("vaultpilot: no finished agent run to undo since Obsidian started.");

    await run(plugin, "Open vaultpilot");
    await until("the connection", () => server.sockets.size === 1);
    app.vault.files.set("A.md", "new");
    finishRun(server, "r1", "A.md");
    finishRun(server, "r2", "A.md");
    await until("the runs", () => pane(app).querySelectorAll("article.run").length === 2);
    await run(plugin, "Undo the last agent run");
    await until("the reply", () => notices.length === 2);
    expect(server.received).toEqual([{ commandName: "UndoRun", arguments: { runId: "r2" } }]);
    expect(notices[1]).toBe("vaultpilot: the last agent run's changes were undone.");
  });

  it("says how to start the server when it is not running", async () => {
    const port = await freePort();
    const { plugin } = await loadPlugin(`127.0.0.1:${port}`, "k".repeat(43));
    plugin.commandWaitMs = 200;
    cleanups.push(() => plugin.onunload());
    await run(plugin, "Undo the last agent run");
    await until("the notice", () => notices.length === 1);
    expect(notices[0]).toBe('vaultpilot: not connected, so nothing was undone. Start the server: vaultpilot serve --vault "/home/me/Notes"');
  });
});

describe("notes and links", () => {
  it("opens the notes a run changed, and refreshes those already open", async () => {
    const { app, plugin, server } = await setup({}, { vaultId: "notes" });
    const open = await app.workspace.openNote("Open.md", "old text");
    await run(plugin, "Open vaultpilot");
    await until("the connection", () => server.sockets.size === 1);
    app.vault.files.set("Open.md", "text the agent wrote");
    app.vault.files.set("Closed.md", "also changed");
    finishRun(server, "r1", "Open.md");
    finishRun(server, "r2", "Closed");
    await until("the open note to refresh", () => open.getViewData() === "text the agent wrote");
    const opened = () => app.workspace.getLeavesOfType("markdown").map((l) => (l.view as MarkdownView).file?.path);
    await until("the closed note to open", () => opened().includes("Closed.md"));
    expect(opened().filter((p) => p === "Open.md")).toHaveLength(1);
  });

  it("ignores the runs of the server's other vaults", async () => {
    const { app, plugin, server } = await setup({}, { vaultId: "notes" });
    await run(plugin, "Open vaultpilot");
    await until("the connection", () => server.sockets.size === 1);
    app.vault.files.set("C.md", "same path, other vault");
    server.emit("w1", { kind: "tool_call", call_id: "c1", name: "obsidian_vault_manager", step: 1, arguments: { target: "C.md" }, raw_arguments: "{}" }, "work");
    server.emit("w1", { kind: "tool_result", call_id: "c1", name: "obsidian_vault_manager", success: true, result: {}, preview: "", source: "builtin", duration_ms: 1 }, "work");
    server.emit("w1", { kind: "run_finished", reason: "done", steps: 1, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, text: "", message: "Done" }, "work");
    finishRun(server, "r1", "Mine.md"); // a run of this vault right after: its note opens, C.md does not
    app.vault.files.set("Mine.md", "x");
    const opened = () => app.workspace.getLeavesOfType("markdown").map((l) => (l.view as MarkdownView).file?.path);
    await until("this vault's note", () => opened().includes("Mine.md"));
    expect(opened()).toEqual(["Mine.md"]);
  });

  it("leaves changed notes closed when the setting is off", async () => {
    const { app, plugin, server } = await setup({}, { vaultId: "notes", openChanged: false });
    await run(plugin, "Open vaultpilot");
    await until("the connection", () => server.sockets.size === 1);
    app.vault.files.set("B.md", "changed");
    finishRun(server, "r1", "B.md");
    await until("the run", () => pane(app).querySelectorAll("article.run").length === 1);
    await settle(100);
    expect(app.workspace.getLeavesOfType("markdown")).toHaveLength(0);
  });

  it("opens [[links]] of answers in the app", async () => {
    const { app, plugin, server } = await setup({}, { vaultId: "notes" });
    await run(plugin, "Open vaultpilot");
    await until("the connection", () => server.sockets.size === 1);
    const el = pane(app);
    await until("the vault list", () => el.querySelector("option") !== null);
    finishRun(server, "r1", "X.md", "See [[Projects/Plan|the plan]] and [a note](Inbox.md).");
    await until("the answer's links", () => el.querySelectorAll(".answer a").length === 2);
    const [wiki, relative] = [...el.querySelectorAll<HTMLAnchorElement>(".answer a")];
    expect(wiki?.getAttribute("href")).toBe("obsidian://open?vault=Notes&file=Projects%2FPlan");
    const click = new MouseEvent("click", { bubbles: true, cancelable: true });
    wiki?.dispatchEvent(click);
    expect(click.defaultPrevented).toBe(true);
    relative?.dispatchEvent(new MouseEvent("click", { bubbles: true, cancelable: true, ctrlKey: true }));
    expect(app.workspace.linksOpened).toEqual([
      { linktext: "Projects/Plan", newLeaf: false },
      { linktext: "Inbox.md", newLeaf: "tab" },
    ]);
  });
});
