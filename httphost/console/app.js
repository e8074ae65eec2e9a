// The agyharness console: a board of the host's sessions and a page per
// session, over the host's public HTTP API (docs/HTTP.md) alone.
//
// The token is asked once and kept for the tab (sessionStorage), sent as
// the Bearer header; event streams take a single-use ticket minted with
// it (POST /v1/tickets), since an EventSource cannot send a header.
// Everything agy or a session says reaches the page as text nodes.
import { render as markdown } from "./markdown.js";

const TOKEN_KEY = "agyharness.token";
const $ = (sel, root = document) => root.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k in e && typeof v !== "string") e[k] = v;
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

// ---- the API ----

class Unauthorized extends Error {}

const api = {
  token: sessionStorage.getItem(TOKEN_KEY) || "",
  async call(method, path, body) {
    const init = { method, headers: { Authorization: "Bearer " + this.token } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(path, init);
    if (res.status === 401) throw new Unauthorized("wrong token");
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch { data = null; }
    if (!res.ok) {
      const err = new Error((data && data.error) || res.status + " " + res.statusText);
      err.status = res.status;
      err.code = data && data.code;
      throw err;
    }
    return data;
  },
};

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  api.token = "";
  stopAll();
  location.hash = "#/";
  route();
}

// stream is an EventSource over a fresh ticket. When the connection drops,
// the browser reopens it itself (the same URL and ticket, with
// Last-Event-ID: the host lets a ticket reopen its own stream); when the
// browser gives up (the ticket's time is over, or the first open failed),
// the stream reopens with another ticket, after the last id it saw.
class Stream {
  constructor(path, handlers, lastId) {
    this.path = path;
    this.handlers = handlers;
    this.lastId = lastId;
    this.closed = false;
    this.retry = 250;
    this.open();
  }
  async open() {
    if (this.closed) return;
    let ticket;
    try {
      ticket = (await api.call("POST", "/v1/tickets")).ticket;
    } catch (e) {
      if (e instanceof Unauthorized) return signOut();
      return this.again();
    }
    if (this.closed) return;
    const q = new URLSearchParams({ ticket });
    if (this.lastId !== undefined && this.lastId !== null) q.set("after", String(this.lastId));
    const es = new EventSource(this.path + "?" + q);
    this.es = es;
    let wasOpen = false;
    es.onopen = () => {
      this.retry = 250; opened++; setConn("");
      if (wasOpen) resumed++;
      wasOpen = true;
      this.handlers.open?.();
    };
    es.onmessage = (m) => {
      if (m.lastEventId) this.lastId = m.lastEventId;
      this.handlers.message?.(JSON.parse(m.data));
    };
    for (const name of ["session", "gone", "ready"]) {
      es.addEventListener(name, (m) => this.handlers[name]?.(JSON.parse(m.data)));
    }
    es.addEventListener("end", () => { this.close(); this.handlers.end?.(); });
    es.onerror = () => {
      if (this.closed) return;
      setConn("reconnecting…");
      if (es.readyState === EventSource.CLOSED) this.again();
    };
  }
  again() {
    if (this.closed) return;
    setTimeout(() => this.open(), this.retry);
    this.retry = Math.min(this.retry * 2, 5000);
  }
  // drop closes the connection from the page (the stream reopens with a
  // fresh ticket).
  drop() { if (this.es) { this.es.close(); this.again(); } }
  close() { this.closed = true; if (this.es) this.es.close(); }
}

let streams = [];
let opened = 0; // event streams opened, reopenings included
let resumed = 0; // of those, reopened by the browser itself (Last-Event-ID)
function stopAll() { streams.forEach((s) => s.close()); streams = []; }
function setConn(text) { $("#conn").textContent = text; }

// For tests and the benchmark: cut the event streams as a network would.
window.agyharnessConsole = {
  dropStreams: () => streams.forEach((s) => s.drop()), opened: () => opened, resumed: () => resumed,
  // the page's event streams open now
  live: () => streams.filter((s) => s.es && s.es.readyState === EventSource.OPEN).length,
};

// ---- routing ----

function route() {
  stopAll();
  const main = $("#main");
  main.replaceChildren();
  $("#signout").hidden = !api.token;
  if (!api.token) return signIn(main);
  const m = /^#\/s\/(.+)$/.exec(location.hash);
  if (m) return sessionPage(main, decodeURIComponent(m[1]));
  return boardPage(main);
}

// ---- sign-in ----

async function exchangeCode() {
  // A one-time sign-in link (agyharness sim --web) carries a code in the
  // fragment, which no server sees; the code is exchanged for the token.
  const m = /^#code=([A-Za-z0-9]+)$/.exec(location.hash);
  if (!m) return;
  history.replaceState(null, "", location.pathname + "#/");
  try {
    const res = await fetch("/v1/signin", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ code: m[1] }),
    });
    if (res.ok) {
      const { token } = await res.json();
      sessionStorage.setItem(TOKEN_KEY, token);
      api.token = token;
    }
  } catch { /* sign in by hand */ }
}

function signIn(main, message) {
  const input = el("input", { type: "password", id: "token", name: "token", autocomplete: "current-password", required: true });
  const msg = el("p", { class: "error", id: "signin-error", role: "alert", text: message || "" });
  const form = el("form", { class: "signin", id: "signin" },
    el("h1", { text: "Sign in" }),
    el("label", { for: "token", text: "The host's token (serve prints it, or reads it from --token-file)" }),
    input, el("button", { class: "primary", type: "submit", text: "Sign in" }), msg);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    api.token = input.value.trim();
    try {
      await api.call("GET", "/v1/sessions");
      sessionStorage.setItem(TOKEN_KEY, api.token);
      route();
    } catch (err) {
      api.token = "";
      msg.textContent = err instanceof Unauthorized ? "Wrong token." : "Cannot reach the host: " + err.message;
    }
  });
  main.append(form);
  input.focus();
}

// ---- the board ----

const STATE_TEXT = { waiting: "waiting on you", node_lost: "node lost", no_conversation: "no conversation yet" };
const stateText = (s) => STATE_TEXT[s] || s;

function ago(iso) {
  const t = Date.parse(iso);
  if (!t || t < 0) return "";
  const s = Math.max(0, Math.round((Date.now() - t) / 1000));
  if (s < 60) return s + " s ago";
  if (s < 3600) return Math.round(s / 60) + " min ago";
  return Math.round(s / 3600) + " h ago";
}

function boardPage(main) {
  const rows = new Map();
  const list = el("ul", { class: "board", id: "board", "aria-live": "polite" });
  const empty = el("p", { class: "muted", id: "board-empty", text: "Loading…" });
  const err = el("p", { class: "error", role: "alert" });
  const pid = el("input", { id: "attach-pid", name: "pid", inputmode: "numeric", pattern: "[0-9]*", placeholder: "pid" });
  const port = el("input", { id: "attach-port", name: "port", inputmode: "numeric", pattern: "[0-9]*", placeholder: "port" });
  const node = el("input", { id: "attach-node", name: "node", placeholder: "node (cluster)" });
  const attach = el("form", { class: "attach", id: "attach" },
    el("label", {}, "agy's pid", pid), el("label", {}, "or its port", port), el("label", {}, "node", node),
    el("button", { type: "submit", text: "Attach" }));
  attach.addEventListener("submit", async (e) => {
    e.preventDefault();
    err.textContent = "";
    const body = {};
    if (pid.value.trim()) body.pid = Number(pid.value);
    if (port.value.trim()) body.port = Number(port.value);
    if (node.value.trim()) body.node = node.value.trim();
    try {
      await api.call("POST", "/v1/sessions", body);
      pid.value = port.value = "";
    } catch (x) {
      if (x instanceof Unauthorized) return signOut();
      err.textContent = "Attach: " + x.message;
    }
  });
  main.append(el("h1", { text: "Sessions" }), attach, err, empty, list);

  const draw = () => {
    const all = [...rows.values()].sort((a, b) =>
      (b.state === "waiting") - (a.state === "waiting") || (a.created < b.created ? -1 : a.created > b.created ? 1 : a.id < b.id ? -1 : 1));
    const items = all.map((r) => rowItem(r));
    list.replaceChildren(...items);
    empty.textContent = all.length ? "" : "No sessions. Attach one: give agy's pid or its language server's port.";
  };
  let pending = false;
  const schedule = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; draw(); });
  };
  const rowItem = (r) => {
    const waiting = r.state === "waiting" || r.open_prompts > 0;
    const detach = el("button", { type: "button", class: "danger", text: "Detach", "aria-label": "Detach " + r.id });
    detach.addEventListener("click", async () => {
      if (!confirm("Detach session " + r.id + "? agy keeps running.")) return;
      try { await api.call("DELETE", "/v1/sessions/" + encodeURIComponent(r.id)); } catch (x) { err.textContent = "Detach: " + x.message; }
    });
    const meta = el("div", { class: "meta" },
      r.node ? el("span", { class: "node", text: "node " + r.node }) : null,
      r.model ? el("span", { class: "model", text: r.model }) : null,
      el("span", { class: "prompts", text: r.open_prompts === 1 ? "1 open prompt" : r.open_prompts + " open prompts" }),
      el("span", { text: "port " + r.port }),
      el("span", { class: "activity", text: ago(r.last_activity) }));
    return el("li", { class: "row" + (waiting ? " waiting" : ""), "data-id": r.id, "data-state": r.state },
      el("a", { class: "title", href: "#/s/" + encodeURIComponent(r.id), text: r.title || r.id }),
      el("span", { class: "badge " + r.state, text: stateText(r.state) }),
      meta, el("div", {}, detach));
  };

  const stream = new Stream("/v1/board", {
    session: (r) => { rows.set(r.id, r); schedule(); },
    gone: ({ id }) => { rows.delete(id); schedule(); },
    ready: () => schedule(),
    // On every (re)opening, the browser's own included, the host sends
    // every row again: start from them.
    open: () => rows.clear(),
  });
  streams.push(stream);
  const tick = setInterval(() => { if (!document.hidden) schedule(); }, 15000);
  streams.push({ close: () => clearInterval(tick), drop() {} });
}

// ---- a session ----

function sessionPage(main, id) {
  const path = "/v1/sessions/" + encodeURIComponent(id);
  const state = el("span", { class: "badge", id: "state" });
  const model = el("span", { class: "muted", id: "model" });
  const interrupt = el("button", { type: "button", id: "interrupt", text: "Interrupt" });
  const err = el("p", { class: "error", id: "session-error", role: "alert" });
  const transcript = el("div", { class: "transcript", id: "transcript", "aria-live": "polite" });
  const prompts = el("div", { id: "prompts" });
  const text = el("textarea", { id: "turn-text", name: "text", "aria-label": "Your turn", placeholder: "Ask agy…", required: true });
  const picker = el("select", { id: "model-picker", name: "model", "aria-label": "Model" },
    el("option", { value: "", text: "Model: as before" }));
  const send = el("button", { type: "submit", class: "primary", id: "send", text: "Send" });
  const box = el("form", { class: "turnbox", id: "turnbox" }, text, el("div", { class: "bar" }, picker, send));
  main.append(
    el("div", { class: "session-head" }, el("h1", { id: "session-title", text: id }), state, model, interrupt),
    el("p", {}, el("a", { href: "#/", text: "← all sessions" })),
    err, transcript, prompts, box);

  const fail = (what) => (x) => {
    if (x instanceof Unauthorized) return signOut();
    err.textContent = what + ": " + x.message;
  };
  box.addEventListener("submit", async (e) => {
    e.preventDefault();
    const t = text.value;
    if (!t.trim()) return;
    err.textContent = "";
    send.disabled = true;
    try {
      await api.call("POST", path + "/turns", picker.value ? { text: t, model: picker.value } : { text: t });
      text.value = "";
    } catch (x) { fail("Send")(x); } finally { send.disabled = false; }
  });
  text.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); box.requestSubmit(); }
  });
  interrupt.addEventListener("click", async () => {
    interrupt.disabled = true;
    try { await api.call("POST", path + "/interrupt"); } catch (x) { fail("Interrupt")(x); } finally { interrupt.disabled = false; }
  });
  api.call("GET", path + "/models").then(({ models }) => {
    for (const m of models) picker.append(el("option", { value: m.model, text: (m.display_name || m.model) + (m.recommended ? " (recommended)" : "") }));
  }).catch(() => {});

  const view = new SessionView({ transcript, prompts, state, model, title: $("#session-title", main), path, fail });
  api.call("GET", path + "/transcript").then((tr) => {
    for (const ev of tr.events) view.event(ev);
    if (tr.state) view.setState(tr.state);
    if (tr.truncated) transcript.prepend(el("p", { class: "note", text: "The start of this conversation is no longer kept by the host." }));
    view.lastSeq = Math.max(view.lastSeq, tr.through);
    streams.push(new Stream(path + "/events", { message: (ev) => view.event(ev), end: () => view.ended() }, tr.through));
  }).catch((x) => {
    if (x.status === 404 && x.code === "no_transcript") {
      streams.push(new Stream(path + "/events", { message: (ev) => view.event(ev), end: () => view.ended() }, 0));
      return;
    }
    fail("Load")(x);
  });
}

// SessionView draws a session's events. Every event is drawn once: an
// event whose seq it has seen is skipped (a reconnect resumes after the
// last id, and the transcript's events carry theirs), but for the open
// prompts a stream re-sends, which are drawn once by their id.
class SessionView {
  constructor(parts) {
    Object.assign(this, parts);
    this.lastSeq = 0;
    this.items = new Map(); // item key -> { node, text }
    this.tools = new Map(); // call_id -> parts
    this.asked = new Map(); // elicitation_id -> form
    this.closed = new Set(); // elicitation ids resolved
    this.titled = false;
  }

  setState(s) {
    this.state.textContent = stateText(s);
    this.state.className = "badge " + s;
    this.state.dataset.state = s;
  }

  ended() {
    this.setState("ended");
    this.fail("Session")(new Error("the session ended"));
  }

  event(ev) {
    if (ev.seq && ev.seq <= this.lastSeq) {
      if (ev.type === "elicitation_request") this.ask(ev);
      return;
    }
    if (ev.seq) this.lastSeq = ev.seq;
    switch (ev.type) {
      case "status":
        if (!ev.parent_conversation_id) this.setState(ev.state);
        break;
      case "user_message":
        if (!this.titled) { this.titled = true; this.title.textContent = ev.text.split("\n")[0].slice(0, 120); }
        this.add(el("div", { class: "turn user", "data-seq": ev.seq, text: ev.text }));
        break;
      case "reasoning_delta":
        this.grow("r:" + ev.item_id, ev, () => {
          const body = el("div");
          const d = el("details", { class: "turn reasoning" }, el("summary", { text: "Thinking" }), body);
          return { node: d, body, draw: (t) => { body.textContent = t; } };
        });
        break;
      case "output_text_delta":
        this.grow("m:" + ev.item_id, ev, () => this.replyNode());
        break;
      case "message": {
        const key = "m:" + ev.item_id;
        let it = this.items.get(key);
        if (!it) { it = this.replyNode(); this.items.set(key, it); this.add(it.node); }
        it.text = ev.text;
        it.draw(ev.text, true);
        break;
      }
      case "function_call":
        this.call(ev);
        break;
      case "function_call_output_delta": {
        const t = this.tool(ev);
        t.text = ev.snapshot ? ev.snapshot : (t.text || "") + (ev.delta || "");
        t.out.hidden = false;
        t.out.textContent = t.text;
        break;
      }
      case "function_call_output":
        this.output(ev);
        break;
      case "elicitation_request":
        this.ask(ev);
        break;
      case "elicitation_resolved":
        this.resolved(ev);
        break;
      case "usage": {
        if (ev.model) this.model.textContent = ev.model;
        const n = (v) => (v === undefined || v === null ? "–" : v);
        this.add(el("div", { class: "usage", text: `${ev.model || ""} · in ${n(ev.input_tokens)} · out ${n(ev.output_tokens)}` }));
        break;
      }
      case "model_changed":
        this.model.textContent = ev.display_name || ev.to;
        this.add(el("div", { class: "note", text: `Model: ${ev.from || "–"} → ${ev.display_name || ev.to}` }));
        break;
      case "conversation_rotated":
        this.add(el("div", { class: "note", text: "agy started a new conversation." }));
        break;
      case "error":
        // agy's own errors carry a code (quota_exhausted, ...), and so
        // does a turn agy dropped (turn_not_taken); a retry agy makes
        // itself is not final.
        this.add(el("div", { class: ev.final === false ? "note" : "turn error", role: ev.final === false ? null : "alert",
          text: ev.code ? `${ev.message} (${ev.code})` : ev.message }));
        break;
      case "conversation_rewound":
        this.add(el("div", { class: "note rewound", text: `agy's conversation was rewound to step ${ev.to_step}: the turns from there on are gone.` }));
        break;
      case "unknown_step":
        this.add(el("div", { class: "note", text: `agy sent a step this version does not show (${ev.step_type}).` }));
        break;
    }
  }

  add(node) { this.transcript.append(node); }

  replyNode() {
    const node = el("div", { class: "turn reply" });
    return { node, draw: (t) => { node.replaceChildren(markdown(t)); } };
  }

  // grow adds a delta to its item, drawn by make's parts.
  grow(key, ev, make) {
    let it = this.items.get(key);
    if (!it) {
      it = make();
      it.text = "";
      this.items.set(key, it);
      this.add(it.node);
    }
    it.text = ev.snapshot ? ev.snapshot : it.text + (ev.delta || "");
    it.draw(it.text);
  }

  tool(ev) {
    let t = this.tools.get(ev.call_id);
    if (!t) {
      const head = el("div", { class: "head" });
      const body = el("div");
      const out = el("pre", { class: "out", hidden: true });
      const node = el("div", { class: "turn tool", "data-call": ev.call_id }, head, body, out);
      t = { node, head, body, out, text: "" };
      this.tools.set(ev.call_id, t);
      this.add(node);
    }
    return t;
  }

  call(ev) {
    const t = this.tool(ev);
    t.head.replaceChildren(
      el("span", { class: "kind", text: ev.kind || "tool" }),
      el("span", { class: "name", text: ev.title || ev.name }));
    if (ev.diffs) t.body.replaceChildren(...ev.diffs.map(diffNode));
  }

  output(ev) {
    const t = this.tool(ev);
    if (!t.head.firstChild) t.head.append(el("span", { class: "kind", text: ev.kind || "tool" }), el("span", { class: "name", text: ev.call_id }));
    if (ev.exit_code !== undefined && ev.exit_code !== 0) t.head.append(el("span", { class: "exit", text: "exit " + ev.exit_code }));
    if (ev.diffs) t.body.replaceChildren(...ev.diffs.map(diffNode));
    if (ev.hits) {
      const more = ev.hit_count && ev.hit_count > ev.hits.length ? ` (${ev.hit_count} in all)` : "";
      t.body.append(el("div", { class: "note", text: ev.hits.length + " hits" + more }),
        el("ul", { class: "hits" }, ...ev.hits.map((h) => el("li", { text: h.path + (h.line ? ":" + h.line : "") + (h.text ? "  " + h.text : "") }))));
    }
    const text = ev.output || "";
    if (text && ev.kind !== "edit") {
      t.text = text;
      t.out.hidden = false;
      t.out.textContent = text;
    }
  }

  ask(ev) {
    const eid = ev.elicitation_id;
    if (this.asked.has(eid) || this.closed.has(eid)) return;
    const form = promptForm(ev, async (body) => {
      try {
        await api.call("POST", this.path + "/elicitations/" + encodeURIComponent(eid) + "/resolve", body);
      } catch (x) {
        this.fail("Answer")(x);
      }
    });
    this.asked.set(eid, form);
    this.prompts.append(form);
    if (!this.transcript.querySelector(`[data-eid="${CSS.escape(eid)}"]`)) {
      this.add(el("div", { class: "note", "data-eid": eid, text: ev.kind === "permission" ? "agy asks for permission." : "agy asks a question." }));
    }
  }

  resolved(ev) {
    const eid = ev.elicitation_id;
    this.closed.add(eid);
    const form = this.asked.get(eid);
    if (form) form.remove();
    this.asked.delete(eid);
    const by = ev.by === "terminal" ? " in agy's terminal" : ev.by === "expired" ? " (expired)" : "";
    this.add(el("div", { class: "note", text: `Prompt ${ev.action === "accept" ? "answered" : ev.action}${by}.` }));
  }
}

// diffNode draws one region of an edit: agy's own diff lines when it sent
// them, else the old text's lines removed and the new text's added.
function diffNode(d) {
  const lines = [];
  if (d.unified) {
    for (const l of d.unified.replace(/\n$/, "").split("\n")) {
      const c = l[0];
      lines.push([c === "+" ? "add" : c === "-" ? "del" : "ctx", l]);
    }
  } else {
    if (d.old_text) for (const l of d.old_text.replace(/\n$/, "").split("\n")) lines.push(["del", "-" + l]);
    for (const l of (d.new_text || "").replace(/\n$/, "").split("\n")) lines.push(["add", "+" + l]);
  }
  return el("div", { class: "diff" },
    el("div", { class: "path", text: d.path + (d.line ? ":" + d.line : "") + (d.old_text === undefined && !d.unified ? " (new file)" : "") }),
    ...lines.map(([cls, t]) => el("span", { class: "l " + cls, text: t })));
}

// promptForm is a prompt as a form: its questions (options, multi-select,
// write-in), or the permission's command, target and diff; answered with
// answer(body).
function promptForm(ev, answer) {
  const eid = ev.elicitation_id;
  const form = el("form", { class: "prompt", "data-eid": eid, "aria-label": ev.kind === "permission" ? "Permission" : "Question" });
  form.append(el("h2", { text: ev.kind === "permission" ? "agy asks for permission" : "agy asks" }));
  const qs = ev.questions || [];
  if (ev.kind === "permission") {
    if (ev.command) form.append(el("pre", { class: "out", text: "$ " + ev.command.line + (ev.command.cwd ? "\n  in " + ev.command.cwd : "") }));
    else if (ev.resource) form.append(el("p", { text: `${ev.resource.action} ${ev.resource.target}` }));
    for (const d of ev.diffs || []) form.append(diffNode(d));
  }
  const fields = qs.map((q, qi) => {
    const fs = el("fieldset", {}, el("legend", { text: q.question || "Choose" }));
    const name = `q${qi}-${eid}`;
    const inputs = (q.options || []).map((o, oi) => {
      const input = el("input", { type: q.multi_select ? "checkbox" : "radio", name, value: o.id, id: `${name}-${oi}` });
      if (!q.multi_select && oi === 0) input.checked = true;
      fs.append(el("label", { class: "opt", for: input.id }, input, el("span", { text: o.text })));
      return input;
    });
    let writeIn = null;
    if (q.allow_write_in || !(q.options || []).length) {
      writeIn = el("input", { type: "text", class: "writein", name: name + "-w", "aria-label": "Your own answer", placeholder: "Or write your own answer" });
      fs.append(writeIn);
    }
    form.append(fs);
    return { q, inputs, writeIn };
  });
  const answers = () => fields.map(({ q, inputs, writeIn }) => {
    const a = { question: q.question, selected_option_ids: inputs.filter((i) => i.checked).map((i) => i.value) };
    if (writeIn && writeIn.value.trim()) { a.write_in = writeIn.value.trim(); if (!q.multi_select) a.selected_option_ids = []; }
    return a;
  });
  const actions = el("div", { class: "actions" });
  const button = (label, cls, body) => {
    const b = el("button", { type: "button", class: cls, text: label });
    b.addEventListener("click", () => {
      form.querySelectorAll("button").forEach((x) => { x.disabled = true; });
      answer(body()).finally(() => form.querySelectorAll("button").forEach((x) => { x.disabled = false; }));
    });
    actions.append(b);
    return b;
  };
  if (ev.kind === "permission" && (ev.choices || []).length && !qs.length) {
    // agy's own rows: allow once, always (where the session owns agy's
    // terminal), deny; each answered by its id.
    for (const c of ev.choices) {
      button(c.text || c.id, c.action === "accept" && c.id === "allow_once" ? "primary" : c.action === "accept" ? "" : "danger", () => ({ choice: c.id }));
    }
  } else if (ev.kind === "permission") {
    if (qs.length) button("Allow", "primary", () => ({ action: "accept", answers: answers() }));
    else button("Allow", "primary", () => ({ action: "accept" }));
    button("Deny", "danger", () => ({ action: "decline" }));
  } else {
    button("Answer", "primary", () => ({ action: "accept", answers: answers() }));
    button("Decline", "", () => ({ action: "decline" }));
  }
  form.addEventListener("submit", (e) => { e.preventDefault(); actions.firstChild.click(); });
  form.append(actions);
  return form;
}

// ---- start ----

window.addEventListener("hashchange", () => exchangeCode().then(route));
$("#signout").addEventListener("click", signOut);
exchangeCode().then(route);
