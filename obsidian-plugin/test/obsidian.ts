/**
 * A small stand-in for the parts of Obsidian's API the plugin uses (vitest aliases "obsidian" to
 * this file). It keeps Obsidian's behaviour where the plugin depends on it: a leaf opens a view
 * by calling its factory and onOpen, detaching calls onClose, an ItemView's contentEl is the
 * second child of its containerEl, Setting builds real inputs and buttons, requestUrl rejects
 * when nothing listens. It records what the plugin asked for (notices, links opened, tabs) so
 * tests can check it. Everything else about Obsidian is left out on purpose.
 */

import { request as httpRequest } from "node:http";

export class Events {}

export class Component {
  private cleanups: (() => void)[] = [];
  register(cb: () => void): void {
    this.cleanups.push(cb);
  }
  registerDomEvent(el: HTMLElement, type: string, cb: (e: Event) => void): void {
    el.addEventListener(type, cb);
    this.register(() => el.removeEventListener(type, cb));
  }
  load(): void {}
  unload(): void {
    for (const cb of this.cleanups.splice(0)) cb();
  }
}

export class TAbstractFile {
  name: string;
  constructor(public path: string) {
    this.name = path.split("/").pop() ?? path;
  }
}

export class TFile extends TAbstractFile {
  get basename(): string {
    return this.name.replace(/\.[^.]*$/, "");
  }
  get extension(): string {
    return this.name.includes(".") ? (this.name.split(".").pop() ?? "") : "";
  }
}

export class FileSystemAdapter {
  constructor(private readonly basePath: string, readonly files: Map<string, string>) {}
  getBasePath(): string {
    return this.basePath;
  }
  async read(path: string): Promise<string> {
    const text = this.files.get(path);
    if (text === undefined) throw new Error(`ENOENT: ${path}`);
    return text;
  }
}

export class Vault extends Events {
  readonly files = new Map<string, string>();
  readonly adapter: FileSystemAdapter;
  constructor(private readonly name: string, basePath: string) {
    super();
    this.adapter = new FileSystemAdapter(basePath, this.files);
  }
  getName(): string {
    return this.name;
  }
  getAbstractFileByPath(path: string): TAbstractFile | null {
    return this.files.has(path) ? new TFile(path) : null;
  }
}

export class View extends Component {
  app: App;
  containerEl: HTMLElement;
  constructor(public leaf: WorkspaceLeaf) {
    super();
    this.app = leaf.app;
    this.containerEl = document.createElement("div");
    this.containerEl.append(document.createElement("div"), document.createElement("div"));
  }
  getViewType(): string {
    return "empty";
  }
  getDisplayText(): string {
    return "";
  }
  getIcon(): string {
    return "";
  }
  async onOpen(): Promise<void> {}
  async onClose(): Promise<void> {}
}

export class ItemView extends View {
  get contentEl(): HTMLElement {
    return this.containerEl.children[1] as HTMLElement;
  }
}

export class MarkdownView extends ItemView {
  file: TFile | null = null;
  data = "";
  selection = "";
  readonly editor = { getSelection: () => this.selection };
  override getViewType(): string {
    return "markdown";
  }
  getViewData(): string {
    return this.data;
  }
  setViewData(data: string, _clear: boolean): void {
    this.data = data;
  }
}

export class WorkspaceLeaf {
  view: View;
  constructor(public app: App, public side: "main" | "right") {
    this.view = new View(this);
  }
  async setViewState(state: { type: string; active?: boolean }): Promise<void> {
    const factory = this.app.viewFactories.get(state.type);
    if (factory === undefined) throw new Error(`no view registered for ${state.type}`);
    await this.view.onClose();
    this.view = factory(this);
    await this.view.onOpen();
  }
  async openFile(file: TFile, _state?: unknown): Promise<void> {
    await this.view.onClose();
    const view = new MarkdownView(this);
    view.file = file;
    view.data = this.app.vault.files.get(file.path) ?? "";
    this.view = view;
  }
  async detach(): Promise<void> {
    this.app.workspace.leaves = this.app.workspace.leaves.filter((l) => l !== this);
    await this.view.onClose();
  }
}

export class Workspace extends Events {
  leaves: WorkspaceLeaf[] = [];
  activeLeaf: WorkspaceLeaf | null = null;
  activeEditor: { editor?: { getSelection(): string }; file: TFile | null } | null = null;
  readonly revealed: WorkspaceLeaf[] = [];
  readonly linksOpened: { linktext: string; newLeaf: unknown }[] = [];
  constructor(private readonly app: App) {
    super();
  }
  getLeavesOfType(type: string): WorkspaceLeaf[] {
    return this.leaves.filter((l) => l.view.getViewType() === type);
  }
  getRightLeaf(_split: boolean): WorkspaceLeaf {
    const leaf = new WorkspaceLeaf(this.app, "right");
    this.leaves.push(leaf);
    return leaf;
  }
  getLeaf(_newLeaf?: unknown): WorkspaceLeaf {
    const leaf = new WorkspaceLeaf(this.app, "main");
    this.leaves.push(leaf);
    return leaf;
  }
  async revealLeaf(leaf: WorkspaceLeaf): Promise<void> {
    this.revealed.push(leaf);
  }
  getActiveFile(): TFile | null {
    const view = this.activeLeaf?.view;
    return view instanceof MarkdownView ? view.file : null;
  }
  getActiveViewOfType<T>(type: new (...args: never[]) => T): T | null {
    const view = this.activeLeaf?.view;
    return view instanceof type ? view : null;
  }
  async openLinkText(linktext: string, _sourcePath: string, newLeaf?: unknown): Promise<void> {
    this.linksOpened.push({ linktext, newLeaf });
  }
  /** Test helper: a note open in the main area, made the active leaf. */
  async openNote(path: string, text: string): Promise<MarkdownView> {
    this.app.vault.files.set(path, text);
    const leaf = this.getLeaf("tab");
    await leaf.openFile(new TFile(path));
    this.activeLeaf = leaf;
    return leaf.view as MarkdownView;
  }
}

export class App {
  readonly vault: Vault;
  readonly workspace: Workspace;
  readonly viewFactories = new Map<string, (leaf: WorkspaceLeaf) => View>();
  /** What the plugin's data.json holds. */
  pluginData: unknown = null;
  constructor(name = "Notes", basePath = "/home/me/Notes") {
    this.vault = new Vault(name, basePath);
    this.workspace = new Workspace(this);
  }
}

export interface Command {
  id: string;
  name: string;
  callback?: () => unknown;
}

export abstract class Plugin extends Component {
  readonly commands: Command[] = [];
  readonly settingTabs: PluginSettingTab[] = [];
  constructor(public app: App, public manifest: { id: string; version: string }) {
    super();
  }
  async loadData(): Promise<unknown> {
    return this.app.pluginData === null ? null : structuredClone(this.app.pluginData);
  }
  async saveData(data: unknown): Promise<void> {
    this.app.pluginData = structuredClone(data);
  }
  addCommand(command: Command): Command {
    this.commands.push(command);
    return command;
  }
  registerView(type: string, factory: (leaf: WorkspaceLeaf) => View): void {
    this.app.viewFactories.set(type, factory);
  }
  addSettingTab(tab: PluginSettingTab): void {
    this.settingTabs.push(tab);
  }
  addRibbonIcon(_icon: string, title: string, cb: (e: MouseEvent) => unknown): HTMLElement {
    const el = document.createElement("div");
    el.setAttribute("aria-label", title);
    el.addEventListener("click", (e) => cb(e));
    return el;
  }
  async onload(): Promise<void> {}
  onunload(): void {}
}

export abstract class PluginSettingTab {
  containerEl: HTMLElement = document.createElement("div");
  constructor(public app: App, public plugin: Plugin) {}
  abstract display(): void;
  hide(): void {}
}

export class TextComponent {
  inputEl: HTMLInputElement = document.createElement("input");
  setValue(value: string): this {
    this.inputEl.value = value;
    return this;
  }
  getValue(): string {
    return this.inputEl.value;
  }
  setPlaceholder(text: string): this {
    this.inputEl.placeholder = text;
    return this;
  }
  onChange(cb: (value: string) => unknown): this {
    this.inputEl.addEventListener("input", () => cb(this.inputEl.value));
    return this;
  }
}

export class ToggleComponent {
  toggleEl: HTMLInputElement = document.createElement("input");
  constructor() {
    this.toggleEl.type = "checkbox";
  }
  setValue(on: boolean): this {
    this.toggleEl.checked = on;
    return this;
  }
  getValue(): boolean {
    return this.toggleEl.checked;
  }
  onChange(cb: (value: boolean) => unknown): this {
    this.toggleEl.addEventListener("change", () => cb(this.toggleEl.checked));
    return this;
  }
}

export class ButtonComponent {
  buttonEl: HTMLButtonElement = document.createElement("button");
  setButtonText(text: string): this {
    this.buttonEl.textContent = text;
    return this;
  }
  onClick(cb: (e: MouseEvent) => unknown): this {
    this.buttonEl.addEventListener("click", (e) => cb(e as MouseEvent));
    return this;
  }
}

export class Setting {
  settingEl = document.createElement("div");
  nameEl = document.createElement("div");
  descEl = document.createElement("div");
  controlEl = document.createElement("div");
  constructor(containerEl: HTMLElement) {
    this.settingEl.className = "setting-item";
    this.settingEl.append(this.nameEl, this.descEl, this.controlEl);
    containerEl.appendChild(this.settingEl);
  }
  setName(name: string): this {
    this.nameEl.textContent = name;
    return this;
  }
  setDesc(desc: string): this {
    this.descEl.textContent = desc;
    return this;
  }
  addText(cb: (text: TextComponent) => unknown): this {
    const text = new TextComponent();
    text.inputEl.setAttribute("aria-label", this.nameEl.textContent ?? "");
    this.controlEl.appendChild(text.inputEl);
    cb(text);
    return this;
  }
  addToggle(cb: (toggle: ToggleComponent) => unknown): this {
    const toggle = new ToggleComponent();
    toggle.toggleEl.setAttribute("aria-label", this.nameEl.textContent ?? "");
    this.controlEl.appendChild(toggle.toggleEl);
    cb(toggle);
    return this;
  }
  addButton(cb: (button: ButtonComponent) => unknown): this {
    const button = new ButtonComponent();
    this.controlEl.appendChild(button.buttonEl);
    cb(button);
    return this;
  }
}

export class Notice {
  static shown: string[] = [];
  constructor(public message: string) {
    Notice.shown.push(message);
  }
}

/** Like Obsidian's requestUrl: no CORS, no Origin; rejects when nothing answers. */
export function requestUrl(param: { url: string; method?: string; headers?: Record<string, string>; throw?: boolean }) {
  return new Promise<{ status: number; text: string; readonly json: unknown }>((resolve, reject) => {
    const req = httpRequest(param.url, { method: param.method ?? "GET", headers: param.headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => {
        const status = res.statusCode ?? 0;
        if (param.throw !== false && status >= 400) reject(new Error(`Request failed, status ${status}`));
        else resolve({ status, text, get json() { return JSON.parse(text) as unknown; } });
      });
    });
    req.on("error", reject);
    req.end();
  });
}
