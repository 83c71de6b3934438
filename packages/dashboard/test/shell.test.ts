import { describe, expect, it } from "vitest";
import { html } from "../src/html.js";
import { notFoundPage, shell } from "../src/shell.js";

const opts = { title: "t", refreshOff: "x?refresh=0", refreshOn: "x", up: "../" };

describe("the page shell", () => {
  it("has a viewport, an inline favicon and no script, font or address of another host", () => {
    const page = shell({ ...opts, refresh: 5 }, html`<p>body</p>`);
    expect(page).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
    expect(page).toContain('<link rel="icon" href="data:,">');
    expect(page).not.toMatch(/<script|@import|@font-face|url\(|https?:\/\//i);
  });

  it("reloads itself with a meta refresh and offers to stop; with 0 it does not reload and offers to turn it on", () => {
    const on = shell({ ...opts, refresh: 5 }, html``);
    expect(on).toContain('<meta http-equiv="refresh" content="5">');
    expect(on).toContain('<a href="x?refresh=0" id="refresh-off">stop</a>');
    const off = shell({ ...opts, refresh: 0 }, html``);
    expect(off).not.toContain("http-equiv");
    expect(off).toContain('<a href="x" id="refresh-on">turn on</a>');
  });

  it("scrolls wide tables inside their box, never the page (the 390 px rule)", () => {
    const page = shell({ ...opts, refresh: 0 }, html``);
    expect(page).toContain(".scroll{overflow-x:auto;max-width:100%}");
    expect(page).toMatch(/@media \(max-width:600px\)\{[^}]*\}dl\{grid-template-columns:minmax\(0,1fr\)\}/);
  });

  it("the not-found page names what is missing, links back and escapes it", () => {
    const page = notFoundPage("no space <b> on this root", "../");
    expect(page).toContain('<p id="not-found">no space &lt;b&gt; on this root</p>');
    expect(page).toContain('<a href="../tenants" id="back">back to the tenants</a>');
    expect(page).not.toContain("http-equiv");
  });
});
