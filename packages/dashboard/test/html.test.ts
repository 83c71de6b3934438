import { describe, expect, it } from "vitest";
import { escapeHtml, html } from "../src/html.js";

describe("html tag", () => {
  it("escapes every interpolated value", () => {
    const evil = `<script>alert("x")</script>&'`;
    expect(html`<p>${evil}</p>`.text).toBe("<p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;</p>");
    expect(html`<a title="${'"onmouseover="x'}">`.text).toBe('<a title="&quot;onmouseover=&quot;x">');
  });

  it("keeps nested markup built by the tag as is, once, and escapes arrays item by item", () => {
    const inner = html`<b>${"<i>"}</b>`;
    expect(html`<p>${inner}</p>`.text).toBe("<p><b>&lt;i&gt;</b></p>");
    expect(html`${["<a>", inner]}`.text).toBe("&lt;a&gt;<b>&lt;i&gt;</b>");
  });

  it("renders nothing for null, undefined and false, and numbers as text", () => {
    expect(html`${null}${undefined}${false}${0}${true}`.text).toBe("0true");
    expect(escapeHtml(42)).toBe("42");
  });
});
