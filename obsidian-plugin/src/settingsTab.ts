/**
 * The settings tab: server address, API key (masked), this vault's VaultID, whether to open the
 * notes a run changed, and "Test connection", whose result names the exact fix (the command
 * that starts the server, where the key is, the config line that lets Obsidian connect).
 *
 * Every change is saved at once; the connection is remade when a field is left (its `change`
 * event), not on every keystroke.
 */

import { type App, type Plugin, PluginSettingTab, Setting, type TextComponent } from "obsidian";
import { DEFAULT_ADDRESS, type VaultpilotSettings } from "./settings";

export interface SettingsHost extends Plugin {
  settings: VaultpilotSettings;
  saveSettings(): Promise<void>;
  reconnect(): void;
  testConnection(): Promise<{ ok: boolean; message: string }>;
}

export class VaultpilotSettingTab extends PluginSettingTab {
  /** The last "Test connection" result, shown under the button. */
  resultEl: HTMLElement | null = null;

  constructor(app: App, private readonly host: SettingsHost) {
    super(app, host);
  }

  override display(): void {
    const { containerEl } = this;
    containerEl.replaceChildren();
    const s = this.host.settings;
    const save = async (change: Partial<VaultpilotSettings>) => {
      Object.assign(s, change);
      await this.host.saveSettings();
    };

    new Setting(containerEl)
      .setName("Server address")
      .setDesc(`host:port of \`vaultpilot serve\` (default ${DEFAULT_ADDRESS}).`)
      .addText((text) => {
        text.setPlaceholder(DEFAULT_ADDRESS).setValue(s.address).onChange((value) => save({ address: value.trim() }));
        text.inputEl.addEventListener("change", () => this.host.reconnect());
      });

    new Setting(containerEl)
      .setName("API key")
      .setDesc("The server's key: `vaultpilot serve --show-key` prints it (it is kept in server.key in vaultpilot's data folder).")
      .addText((text) => {
        text.inputEl.type = "password";
        text.inputEl.autocomplete = "off";
        text.setPlaceholder("paste the key").setValue(s.apiKey).onChange((value) => save({ apiKey: value.trim() }));
        text.inputEl.addEventListener("change", () => this.host.reconnect());
      });

    let vaultText: TextComponent | null = null;
    new Setting(containerEl)
      .setName("Vault ID")
      .setDesc("The server's VaultID for this vault. Test connection fills it in by matching this vault's folder.")
      .addText((text) => {
        vaultText = text;
        text.setPlaceholder("detected on Test connection").setValue(s.vaultId).onChange((value) => save({ vaultId: value.trim() }));
        text.inputEl.addEventListener("change", () => this.host.reconnect());
      });

    new Setting(containerEl)
      .setName("Open the notes the agent changed")
      .setDesc("After a run, open the notes it changed in background tabs (notes already open always refresh).")
      .addToggle((toggle) => toggle.setValue(s.openChanged).onChange((value) => save({ openChanged: value })));

    const result = document.createElement("div");
    result.className = "vaultpilot-test-result";
    result.setAttribute("role", "status");
    new Setting(containerEl)
      .setName("Test connection")
      .setDesc("Checks the address, the key, this vault on the server and the live connection.")
      .addButton((button) =>
        button.setButtonText("Test connection").onClick(async () => {
          result.textContent = "Testing…";
          result.className = "vaultpilot-test-result";
          const outcome = await this.host.testConnection();
          result.textContent = outcome.message;
          result.classList.add(outcome.ok ? "is-ok" : "is-error");
          (vaultText as TextComponent | null)?.setValue(s.vaultId); // the test may have detected it
        }),
      );
    containerEl.appendChild(result);
    this.resultEl = result;
  }
}
