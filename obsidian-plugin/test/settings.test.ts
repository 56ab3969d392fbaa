import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { matchVault } from "../src/server";
import { DEFAULT_SETTINGS, httpBase, readSettings, serveCommand, wsUrl } from "../src/settings";
import type { VaultpilotSettingTab } from "../src/settingsTab";
import { VAULT_PATH, loadFor, loadPlugin, settle, until } from "./helpers";
import { FakeServer, freePort } from "./server";

// happy-dom's URL is not node's: paths are made from the file's own path instead.
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const servers: FakeServer[] = [];
async function serve(options: ConstructorParameters<typeof FakeServer>[0] = {}): Promise<FakeServer> {
  const server = new FakeServer(options);
  await server.start();
  servers.push(server);
  return server;
}
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});

function tabOf(plugin: unknown): VaultpilotSettingTab {
  const tab = (plugin as { settingTabs: VaultpilotSettingTab[] }).settingTabs[0];
  if (!tab) throw new Error("no settings tab");
  tab.display();
  return tab;
}

function input(tab: VaultpilotSettingTab, label: string): HTMLInputElement {
  const el = tab.containerEl.querySelector<HTMLInputElement>(`input[aria-label="${label}"]`);
  if (!el) throw new Error(`no input ${label}`);
  return el;
}

async function testConnection(tab: VaultpilotSettingTab): Promise<string> {
  const button = [...tab.containerEl.querySelectorAll("button")].find((b) => b.textContent === "Test connection");
  button?.click();
  const result = tab.containerEl.querySelector(".vaultpilot-test-result");
  await until("the test's result", () => (result?.textContent ?? "") !== "" && result?.textContent !== "Testing…");
  return result?.textContent ?? "";
}

describe("settings values", () => {
  it("keeps only well-typed fields of stored data, with the defaults", () => {
    expect(readSettings(null)).toEqual(DEFAULT_SETTINGS);
    expect(readSettings({ address: 7, apiKey: " abc ", vaultId: ["x"], openChanged: "no", extra: 1 })).toEqual({
      ...DEFAULT_SETTINGS, apiKey: "abc",
    });
    expect(DEFAULT_SETTINGS.address).toBe("127.0.0.1:34700");
  });

  it("turns an address into the server's origins, or says what to type", () => {
    expect(httpBase("127.0.0.1:34700")).toEqual({ base: "http://127.0.0.1:34700" });
    expect(httpBase("http://localhost:9000/")).toEqual({ base: "http://localhost:9000" });
    expect(wsUrl("http://localhost:9000")).toBe("ws://localhost:9000/ws");
    const bad = httpBase("localhost:9000/vaults");
    expect("error" in bad && bad.error).toContain("type host:port");
    expect("error" in httpBase("ftp://x") && "ftp").toBeTruthy();
  });

  it("quotes the vault's path in the command that starts the server", () => {
    expect(serveCommand("/home/me/My Notes")).toBe('vaultpilot serve --vault "/home/me/My Notes"');
    expect(serveCommand('/a/"$x`')).toBe('vaultpilot serve --vault "/a/\\"\\$x\\`"');
  });

  it("finds this vault by path, else by a unique folder name", () => {
    const embedding = { state: "", chunksEmbedded: 0, chunks: 0, notesPending: 0, model: null, rate: 0, problem: null };
    const v = (vaultId: string, name: string, path?: string) => ({ vaultId, name, embedding, ...(path ? { path } : {}) });
    expect(matchVault([v("a", "Notes", "/other/Notes"), v("b", "Notes", "/home/me/Notes/")], VAULT_PATH)).toBe("b");
    expect(matchVault([v("work", "Work"), v("notes", "Notes")], VAULT_PATH)).toBe("notes");
    expect(matchVault([v("a", "Notes"), v("b", "Notes")], VAULT_PATH)).toBeNull();
    expect(matchVault([v("w", "Work")], VAULT_PATH)).toBeNull();
  });

  it("has the Python package's version in the manifest and package.json", () => {
    const pyproject = readFileSync(join(root, "..", "pyproject.toml"), "utf8");
    const version = /^version\s*=\s*"([^"]+)"/m.exec(pyproject)?.[1];
    const manifest = JSON.parse(readFileSync(join(root, "manifest.json"), "utf8")) as Record<string, unknown>;
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as Record<string, unknown>;
    expect(manifest["version"]).toBe(version);
    expect(pkg["version"]).toBe(version);
    expect(manifest["id"]).toBe("vaultpilot");
    expect(manifest["isDesktopOnly"]).toBe(true);
  });
});

describe("the settings tab", () => {
  it("loads stored settings, masks the key and saves each change", async () => {
    const { app, plugin } = await loadPlugin("127.0.0.1:1", "secret-key", { vaultId: "notes" });
    expect(plugin.settings).toMatchObject({ address: "127.0.0.1:1", apiKey: "secret-key", vaultId: "notes", openChanged: true });
    const tab = tabOf(plugin);
    const key = input(tab, "API key");
    expect(key.type).toBe("password");
    expect(key.value).toBe("secret-key");
    expect(input(tab, "Server address").value).toBe("127.0.0.1:1");
    key.value = " new-key ";
    key.dispatchEvent(new Event("input"));
    const toggle = input(tab, "Open the notes the agent changed");
    toggle.checked = false;
    toggle.dispatchEvent(new Event("change"));
    await settle();
    expect(app.pluginData).toEqual({ address: "127.0.0.1:1", apiKey: "new-key", vaultId: "notes", openChanged: false });
    await plugin.loadSettings();
    expect(plugin.settings.apiKey).toBe("new-key");
  });

  it("says how to start the server when none runs", async () => {
    const port = await freePort();
    const { plugin } = await loadPlugin(`127.0.0.1:${port}`, "whatever");
    const message = await testConnection(tabOf(plugin));
    expect(message).toBe(`No vaultpilot server answers at http://127.0.0.1:${port}. Start it for this vault: vaultpilot serve --vault "${VAULT_PATH}"`);
  });

  it("says where the key is when the server refuses it", async () => {
    const server = await serve();
    const { plugin } = await loadPlugin(server.base, "wrong");
    const message = await testConnection(tabOf(plugin));
    expect(message).toContain("The server refused this API key");
    expect(message).toContain("server.key in vaultpilot's data folder");
    expect(message).toContain("vaultpilot serve --show-key");
  });

  it("says so when the server does not serve this vault", async () => {
    const server = await serve({ vaults: [{ vaultId: "work", name: "Work", path: "/home/me/Work" }] });
    const { plugin } = await loadFor(server);
    const message = await testConnection(tabOf(plugin));
    expect(message).toContain('serves "work" but not this vault (/home/me/Notes)');
    expect(message).toContain('vaultpilot serve --vault "/home/me/Notes"');
    expect(plugin.settings.vaultId).toBe("");
  });

  it("detects and stores this vault's id, and checks the live connection", async () => {
    const server = await serve({ vaults: [{ vaultId: "work", name: "Work" }, { vaultId: "mine", name: "Other", path: VAULT_PATH }] });
    const { app, plugin } = await loadFor(server);
    const tab = tabOf(plugin);
    const message = await testConnection(tab);
    expect(message).toBe('Connected to vaultpilot 0.1.0: this vault is "mine" on the server.');
    expect(plugin.settings.vaultId).toBe("mine");
    expect((app.pluginData as Record<string, unknown>)["vaultId"]).toBe("mine");
    expect(input(tab, "Vault ID").value).toBe("mine");
  });

  it("names the config line when the server refuses Obsidian's WebSocket", async () => {
    const server = await serve({ refuseSockets: true });
    const { plugin } = await loadFor(server);
    const message = await testConnection(tabOf(plugin));
    expect(message).toContain('allowed_origins = ["app://obsidian.md"] under [server]');
  });
});
