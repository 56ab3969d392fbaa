import { describe, expect, it } from "vitest";
import { safeHref } from "../../web/src/markdown";

describe("links in answers and notes", () => {
  it("opens notes in Obsidian but no other obsidian:// address", () => {
    const open = "obsidian://open?vault=Notes&file=Plan";
    expect(safeHref(open, "Notes")).toBe(open);
    expect(safeHref("obsidian://advanced-uri?vault=Notes&commandid=app%3Areload", "Notes")).toBeNull();
    expect(safeHref("OBSIDIAN://new?name=x", "Notes")).toBeNull();
    expect(safeHref("java\tscript:alert(1)", "Notes")).toBeNull();
    expect(safeHref("https://example.com/a", "Notes")).toBe("https://example.com/a");
  });
});

describe("long text", () => {
  it("renders a long line of unclosed links at once, as text", async () => {
    const { inline } = await import("../../web/src/markdown");
    const text = "[a](".repeat(40_000);
    const started = performance.now();
    const out = inline(text, "Notes");
    expect(performance.now() - started).toBeLessThan(500);
    expect(out).toEqual([text]);
  });
});
