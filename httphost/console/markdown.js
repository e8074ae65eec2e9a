// A small Markdown renderer for agy's replies. It builds DOM nodes and
// sets text through textContent / text nodes only: agy's text is never
// parsed as HTML. Links keep http and https URLs alone, and open with
// rel="noopener noreferrer".
//
// Blocks: fenced code (```), headings (#), lists (-, *, +, 1.), quotes (>),
// rules (---), paragraphs. Inline: `code`, **strong**, *em* / _em_,
// [text](url), and bare http(s) URLs.

export function safeURL(raw) {
  try {
    const u = new URL(raw);
    return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
  } catch {
    return null;
  }
}

function el(tag, cls) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  return e;
}

function link(href, parent) {
  const a = el("a");
  a.href = href;
  a.rel = "noopener noreferrer";
  a.target = "_blank";
  parent.append(a);
  return a;
}

const INLINE = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\*\*(?=\S)([\s\S]*?\S)\*\*|__(?=\S)([\s\S]*?\S)__|\*(?=[^\s*])([^*]*?[^\s*])\*|(?<![\w])_(?=[^\s_])([^_]*?[^\s_])_(?![\w])|\[([^\]\n]+)\]\(([^()\s]+)\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/g;

// inline appends text's inline Markdown to parent.
export function inline(text, parent) {
  let last = 0;
  const re = new RegExp(INLINE.source, "g");
  let m;
  while ((m = re.exec(text)) !== null) {
    if (m.index > last) parent.append(text.slice(last, m.index));
    last = re.lastIndex;
    if (m[1] !== undefined) {
      const c = el("code");
      c.textContent = m[2];
      parent.append(c);
    } else if (m[3] !== undefined || m[4] !== undefined) {
      const s = el("strong");
      inline(m[3] ?? m[4], s);
      parent.append(s);
    } else if (m[5] !== undefined || m[6] !== undefined) {
      const e = el("em");
      inline(m[5] ?? m[6], e);
      parent.append(e);
    } else if (m[7] !== undefined) {
      const href = safeURL(m[8]);
      if (href) inline(m[7], link(href, parent));
      else parent.append(m[0]);
    } else if (m[9] !== undefined) {
      const href = safeURL(m[9]);
      if (href) link(href, parent).textContent = m[9];
      else parent.append(m[9]);
    }
  }
  if (last < text.length) parent.append(text.slice(last));
}

const FENCE = /^\s{0,3}(```+|~~~+)\s*([\w+-]*)\s*$/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const BULLET = /^(\s*)([-*+])\s+(.*)$/;
const ORDERED = /^(\s*)(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;

// render turns Markdown text into a DocumentFragment.
export function render(text) {
  const frag = document.createDocumentFragment();
  blocks(String(text ?? "").replace(/\r\n?/g, "\n").split("\n"), frag);
  return frag;
}

function blocks(lines, parent) {
  let i = 0;
  let para = [];
  const flush = () => {
    if (para.length) {
      const p = el("p");
      para.forEach((l, j) => {
        if (j) p.append(el("br"));
        inline(l, p);
      });
      parent.append(p);
      para = [];
    }
  };
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if ((m = FENCE.exec(line))) {
      flush();
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence)) body.push(lines[i++]);
      i++; // the closing fence (or the end)
      const pre = el("pre", "code");
      const code = el("code");
      if (m[2]) code.dataset.lang = m[2];
      code.textContent = body.join("\n");
      pre.append(code);
      parent.append(pre);
      continue;
    }
    if (line.trim() === "") {
      flush();
      i++;
      continue;
    }
    if ((m = HEADING.exec(line))) {
      flush();
      const h = el("h" + Math.min(m[1].length + 2, 6));
      inline(m[2], h);
      parent.append(h);
      i++;
      continue;
    }
    if (RULE.test(line)) {
      flush();
      parent.append(el("hr"));
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      flush();
      const body = [];
      while (i < lines.length && (m = QUOTE.exec(lines[i]))) {
        body.push(m[1]);
        i++;
      }
      const q = el("blockquote");
      blocks(body, q);
      parent.append(q);
      continue;
    }
    if (BULLET.test(line) || ORDERED.test(line)) {
      flush();
      i = list(lines, i, parent);
      continue;
    }
    para.push(line.trim());
    i++;
  }
  flush();
}

// list renders the list that starts at lines[i]; it returns the next line.
function list(lines, i, parent) {
  const first = BULLET.exec(lines[i]) || ORDERED.exec(lines[i]);
  const ordered = !BULLET.test(lines[i]);
  const indent = first[1].length;
  const l = el(ordered ? "ol" : "ul");
  if (ordered && first[2] !== "1") l.start = Number(first[2]);
  let item = null;
  let body = [];
  const end = () => {
    if (item) {
      if (body.length === 1) inline(body[0], item);
      else blocks(body, item);
      l.append(item);
    }
  };
  while (i < lines.length) {
    const line = lines[i];
    const m = (ordered ? ORDERED : BULLET).exec(line);
    if (m && m[1].length === indent) {
      end();
      item = el("li");
      body = [m[3]];
      i++;
      continue;
    }
    if (line.trim() === "") {
      // A blank line ends the list unless the next line goes on with it.
      const next = lines[i + 1];
      if (next === undefined || !(/^\s+\S/.test(next) || (ordered ? ORDERED : BULLET).test(next))) break;
      body.push("");
      i++;
      continue;
    }
    if (/^\s+\S/.test(line) && line.search(/\S/) > indent) {
      body.push(line.slice(Math.min(line.search(/\S/), indent + 4)));
      i++;
      continue;
    }
    if (!m && !BULLET.test(line) && !ORDERED.test(line) && body.length && body[body.length - 1] !== "") {
      body[body.length - 1] += " " + line.trim(); // a lazy continuation
      i++;
      continue;
    }
    break;
  }
  end();
  parent.append(l);
  return i;
}
