import { afterEach, describe, expect, it } from "vitest";
import { VaultpilotView } from "../src/view";
import { VAULT_PATH, loadFor, loadPlugin, pane, run, settle, until, viewLeaf } from "./helpers";
import { FakeServer, freePort } from "./server";

const servers: FakeServer[] = [];
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  for (const s of servers.splice(0)) await s.stop();
});

async function serve(options: ConstructorParameters<typeof FakeServer>[0] = {}, port?: number): Promise<FakeServer> {
  const server = new FakeServer(options);
  await server.start(port);
  servers.push(server);
  return server;
}

function banner(el: HTMLElement): string {
  return el.querySelector('.banner[role="status"]')?.textContent ?? "";
}

function sendButton(el: HTMLElement): HTMLButtonElement | null {
  return el.querySelector<HTMLButtonElement>("form.composer button[type=submit]");
}

describe("the view's lifecycle", () => {
  it("registers the view and the four commands", async () => {
    const { plugin } = await loadPlugin("127.0.0.1:1", "k");
    cleanups.push(() => plugin.onunload());
    const names = (plugin as unknown as { commands: { name: string }[] }).commands.map((c) => c.name);
    expect(names).toEqual(["Open vaultpilot", "Ask about the current note", "Ask about the selection", "Undo the last agent run"]);
  });

  it("opens in the right sidebar, mounts the shared view, connects, and unmounts on close", async () => {
    const server = await serve();
    const { app, plugin } = await loadFor(server);
    cleanups.push(() => plugin.onunload());
    await run(plugin, "Open vaultpilot");
    const leaf = viewLeaf(app);
    expect(leaf?.side).toBe("right");
    expect(app.workspace.revealed).toContain(leaf);
    const el = pane(app);
    expect(el.classList.contains("vaultpilot-view")).toBe(true);
    expect(el.querySelector('textarea[aria-label="Message"]')).not.toBeNull();
    await until("the socket", () => server.sockets.size === 1);
    await until("Send to be enabled by the hello", () => sendButton(el) !== null && banner(el) === "");
    // Opening again reveals the same leaf: one view, one connection.
    await run(plugin, "Open vaultpilot");
    expect(app.workspace.getLeavesOfType("vaultpilot")).toHaveLength(1);
    expect(server.sockets.size).toBe(1);

    await leaf?.detach();
    expect((leaf?.view as unknown as VaultpilotView).mounted).toBe(false);
    expect(el.childElementCount).toBe(0);
    expect(el.classList.contains("vaultpilot-view")).toBe(false);
    await until("the socket to close with the last view", () => server.sockets.size === 0);
    await settle(300); // longer than the reconnect delay: a closed view must not reconnect
    expect(server.sockets.size).toBe(0);
  });

  it("closes the connection when the plugin unloads", async () => {
    const server = await serve();
    const { plugin } = await loadFor(server);
    await run(plugin, "Open vaultpilot");
    await until("the socket", () => server.sockets.size === 1);
    plugin.onunload();
    await until("the socket to close", () => server.sockets.size === 0);
  });
});

describe("a run while the server goes and comes back", () => {
  const started = { kind: "run_started", run_id: "r1", model: "m", tools: [], max_steps: 5, token_budget: null };
  const thinking = { kind: "status", message: "Thinking (step 1)", step: 1 };
  const call = { kind: "tool_call", call_id: "c1", name: "obsidian_query_vault", step: 1, arguments: { queryType: "recent_changes" }, raw_arguments: "{}" };

  async function following(options: ConstructorParameters<typeof FakeServer>[0]) {
    const server = await serve(options);
    const { app, plugin } = await loadFor(server);
    cleanups.push(() => plugin.onunload());
    await run(plugin, "Open vaultpilot");
    await until("the socket", () => server.sockets.size === 1);
    const el = pane(app);
    await until("the view to be greeted", () => banner(el) === "");
    for (const event of [started, thinking, call]) server.emit("r1", event);
    await until("the running step", () => el.querySelector(".working")?.textContent?.includes("Thinking (step 1)") ?? false);
    return { server, el };
  }

  it("shows the run once after a reconnect to the same server, which sends its frames again", async () => {
    const { server, el } = await following({ serverId: "s1", replay: true });
    server.drop();
    await until("the banner", () => banner(el).includes("vaultpilot serve"));
    await until("the reconnect", () => server.sockets.size === 1 && banner(el) === "", 3000);
    await settle(100);
    expect(el.querySelectorAll(".tool")).toHaveLength(1); // the replayed frames were not applied twice
    expect(el.querySelector(".working")?.textContent).toContain("Thinking (step 1)");
  });

  it("stops the run it followed when the server restarted, and offers Send again", async () => {
    const { server, el } = await following({ serverId: "s1", replay: true });
    await server.restart();
    await until("the run to stop", () => el.querySelector(".summary")?.textContent?.includes("Stopped: the server restarted.") ?? false, 4000);
    expect(el.querySelector(".working")).toBeNull();
    expect(el.querySelector(".tool .not-run")?.textContent).toBe("Interrupted");
    expect(sendButton(el)).not.toBeNull();
    // The new server's first event (seq 1 again) is not dropped as seen before.
    server.emit("r2", started);
    server.emit("r2", thinking);
    await until("the new server's run", () => el.querySelector(".working")?.textContent?.includes("Thinking (step 1)") ?? false);
  });
});

describe("without a server", () => {
  it("says how to start it, and connects by itself once it runs", async () => {
    const port = await freePort();
    const { app, plugin } = await loadPlugin(`127.0.0.1:${port}`, "k".repeat(43));
    cleanups.push(() => plugin.onunload());
    await run(plugin, "Open vaultpilot");
    const el = pane(app);
    await until("the not-running banner", () => banner(el).includes("vaultpilot serve"));
    expect(banner(el)).toContain(`Cannot reach vaultpilot at http://127.0.0.1:${port}. Start it with: vaultpilot serve --vault "${VAULT_PATH}"`);
    expect(banner(el)).toMatch(/retrying in [\d.]+ s/);
    await settle(400); // a few failed attempts, with the delay growing

    const server = await serve({}, port);
    await until("the reconnect", () => server.sockets.size === 1 && banner(el) === "", 3000);

    // The server goes away and comes back: the view follows both ways.
    await server.stop();
    await until("the banner again", () => banner(el).includes("vaultpilot serve"));
    await server.start(port);
    await until("the second reconnect", () => server.sockets.size === 1 && banner(el) === "", 3000);
  });

  it("asks for the key in the pane when it is wrong, and stores the one typed there", async () => {
    const server = await serve();
    const { app, plugin } = await loadPlugin(server.base, "wrong");
    cleanups.push(() => plugin.onunload());
    await run(plugin, "Open vaultpilot");
    const el = pane(app);
    await until("the sign-in panel", () => el.querySelector(".signin") !== null);
    expect(el.querySelector(".signin")?.textContent).toContain("The server refused this API key");
    expect(el.querySelector(".signin")?.textContent).toContain("saved in this plugin's settings");
    const field = el.querySelector<HTMLInputElement>('input[aria-label="API key"]');
    if (!field) throw new Error("no key field");
    field.value = server.key;
    field.dispatchEvent(new Event("input"));
    await settle();
    el.querySelector<HTMLFormElement>(".signin form")?.dispatchEvent(new Event("submit", { cancelable: true }));
    await until("the connection with the typed key", () => server.sockets.size === 1);
    await until("the conversation to replace the panel", () => el.querySelector(".signin") === null);
    expect(plugin.settings.apiKey).toBe(server.key);
    expect((app.pluginData as Record<string, unknown>)["apiKey"]).toBe(server.key);
  });
});
