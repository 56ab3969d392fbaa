/** Shared by the tests: a loaded plugin in the stand-in app, pointed at a local server. */

import VaultpilotPlugin from "../main";
import type { SocketFactory } from "../src/connection";
import { App, Notice, WorkspaceLeaf } from "./obsidian";
import { type FakeServer, nodeSocket } from "./server";

export const VAULT_PATH = "/home/me/Notes";

export async function loadPlugin(address: string, key: string, data: Record<string, unknown> = {}) {
  const app = new App("Notes", VAULT_PATH);
  app.pluginData = { address, apiKey: key, ...data };
  const plugin = new VaultpilotPlugin(app as never, { id: "vaultpilot", version: "0.1.0" } as never);
  plugin.socketFactory = nodeSocket as unknown as SocketFactory;
  plugin.retryMs = 50;
  plugin.maxRetryMs = 200;
  plugin.commandWaitMs = 2000;
  await plugin.onload();
  return { app, plugin };
}

export function loadFor(server: FakeServer, data: Record<string, unknown> = {}) {
  return loadPlugin(server.base, server.key, data);
}

/** Run a command by the name the palette shows. */
export async function run(plugin: VaultpilotPlugin, name: string): Promise<void> {
  const command = (plugin as unknown as { commands: { name: string; callback?: () => unknown }[] }).commands.find((c) => c.name === name);
  if (!command?.callback) throw new Error(`no command named ${name}`);
  command.callback();
  await settle();
}

/** Let promises, timers and Preact's effects run. */
export async function settle(ms = 30): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

export async function until(what: string, check: () => boolean, ms = 4000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export function viewLeaf(app: App): WorkspaceLeaf | undefined {
  return app.workspace.getLeavesOfType("vaultpilot")[0];
}

export function pane(app: App): HTMLElement {
  const leaf = viewLeaf(app);
  if (!leaf) throw new Error("the vaultpilot view is not open");
  return (leaf.view as unknown as { contentEl: HTMLElement }).contentEl;
}

export function resetNotices(): string[] {
  Notice.shown = [];
  return Notice.shown;
}
