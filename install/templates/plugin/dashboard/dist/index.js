// hermes-cmms: the Memory tab of the Hermes Dashboard (read-only).
// No build step, no dependency: the host's React renders one <div>, and this file fills it with
// DOM nodes whose text is set with textContent only. Memory text is hostile: it is never parsed
// as markup, and its invisible characters (bidi overrides, zero-width) are shown as markers.
// Data: the plugin's JSON routes under /api/plugins/cmms/, fetched with the SDK's fetchJSON.
(function () {
  "use strict";
  var SDK = window.__HERMES_PLUGIN_SDK__;
  if (!SDK || !window.__HERMES_PLUGINS__) return;
  var React = SDK.React;
  var API = "/api/plugins/cmms";
  // as the dashboard's pages: format (bidi, zero-width, tag letters), controls but newline and tab,
  // lone surrogates, private use and unassigned code points, variation selectors (a payload can be
  // spelled in them) but U+FE0E / U+FE0F, emoji's own: each one a marker
  var INVISIBLE = /(?![\n\t])[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\ufe00-\ufe0d\u{e0100}-\u{e01ef}]/gu;

  function visible(value) {
    var text = value === null || value === undefined ? "" : String(value);
    return text.replace(INVISIBLE, function (c) {
      return "\u27e6U+" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "\u27e7";
    });
  }

  // el("p", {className: "x", onclick: f}, "text", child, ...): strings become text nodes.
  var LOOK = {
    button: { border: "1px solid rgba(127,127,127,.5)", borderRadius: "4px", padding: "2px 10px", margin: "4px 4px 4px 0", cursor: "pointer" },
    h3: { fontWeight: "bold", margin: "16px 0 4px" },
    input: { border: "1px solid rgba(127,127,127,.5)", padding: "2px 6px", background: "transparent" },
    textarea: { border: "1px solid rgba(127,127,127,.5)", padding: "4px 6px", background: "transparent" }
  };

  function el(tag, props) {
    var node = document.createElement(tag);
    if (LOOK[tag]) Object.assign(node.style, LOOK[tag]);
    Object.keys(props || {}).forEach(function (key) {
      if (key.slice(0, 2) === "on") node.addEventListener(key.slice(2), props[key]);
      else if (key === "data") Object.keys(props.data).forEach(function (k) { node.dataset[k] = props.data[k]; });
      else if (key === "style") Object.assign(node.style, props.style);
      else node[key] = props[key];
    });
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }

  function add(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { add(node, c); }); return; }
    node.appendChild(typeof child === "object" ? child : document.createTextNode(visible(child)));
  }

  function query(params) {
    var parts = [];
    Object.keys(params).forEach(function (k) {
      var v = params[k];
      if (v !== null && v !== undefined && v !== "") parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(v));
    });
    return parts.length ? "?" + parts.join("&") : "";
  }

  function get(path, params) {
    return SDK.fetchJSON(API + path + query(params || {}));
  }

  function problem(err) {  // fetchJSON throws Error("<status>: <body>")
    var text = String(err && err.message || err);
    var body = text.replace(/^\d+:\s*/, "");
    try { var parsed = JSON.parse(body); if (parsed && typeof parsed.detail === "string") return parsed.detail; } catch (e) { /* plain text */ }
    return text;
  }

  // a Unix time or an ISO string as the standalone dashboard writes it: 2026-12-03 18:57 UTC
  function when(ts) {
    if (ts === null || ts === undefined || ts === "") return "\u2014";
    var d = typeof ts === "number" ? new Date(ts * 1000) : new Date(String(ts));
    if (isNaN(d.getTime())) return String(ts);
    return d.toISOString().slice(0, 16).replace("T", " ") + " UTC";
  }

  // a memory's state as it reads true (as the standalone dashboard's macros.state)
  function stateOf(m) {
    return m.superseded_by ? "superseded" : (m.contested_by && m.contested_by.length ? "contested" : (m.state || "active"));
  }

  var TONES = { active: ["#1b7f3b", "rgba(27,127,59,.14)"], ok: ["#1b7f3b", "rgba(27,127,59,.14)"],
    warn: ["#8a5a00", "rgba(200,140,0,.18)"], contested: ["#8a5a00", "rgba(200,140,0,.18)"],
    FAIL: ["#b3261e", "rgba(179,38,30,.14)"] };

  function badge(word) {
    var tone = TONES[word] || ["inherit", "rgba(127,127,127,.18)"];
    return el("span", { className: "cmms-badge cmms-badge-" + word, style: { color: tone[0], background: tone[1],
      borderRadius: "4px", padding: "0 6px", fontSize: ".8em", fontWeight: "600", marginRight: "6px" } }, word);
  }

  var BOX = { border: "1px solid rgba(127,127,127,.35)", borderRadius: "6px", padding: "8px 12px", margin: "8px 0" };
  var MONO = { fontFamily: "monospace", whiteSpace: "pre-wrap", overflowWrap: "anywhere" };

  // latest(): a counter of requests; each request's check() is true only while no later one began,
  // so an answer that comes back after a newer click (a slow list, another tab) is dropped, not drawn.
  function latest() {
    var last = 0;
    return function () { var mine = ++last; return function () { return mine === last; }; };
  }

  function App(root) {
    this.root = root;
    this.scope = "";
    this.view = "overview";
    this.begin = latest();  // what the body shows: one view, one list, one inspection at a time
  }

  App.prototype.start = function () {
    var self = this;
    this.scopeSelect = el("select", { className: "cmms-scope", onchange: function () { self.scope = this.value; self.show(self.view); } });
    this.nav = el("nav", { className: "cmms-nav", style: { display: "flex", gap: "8px", alignItems: "center", flexWrap: "wrap" } },
      this.tab("overview", "Overview"), this.tab("memories", "Memories"), this.tab("inspect", "Why recalled"),
      el("label", { style: { marginLeft: "auto" } }, "Scope ", this.scopeSelect));
    this.body = el("div", { className: "cmms-body" });
    add(this.root, [el("h2", { style: { fontSize: "1.25rem", margin: "0 0 8px" } }, "Memory (hermes-cmms)"),
      this.nav, el("p", { style: { opacity: 0.7, fontSize: ".85em" } },
        "Read-only. To correct, pin, tag or forget, run: hermes-cmms ui --allow-changes"), this.body]);
    get("/scopes").then(function (answer) {
      self.scope = answer["default"];
      var names = answer.scopes.map(function (s) { return s.scope; });
      if (names.indexOf(self.scope) < 0) names.unshift(self.scope);
      names.forEach(function (name) {
        add(self.scopeSelect, el("option", { value: name }, name + (name === answer["default"] ? " (yours)" : "")));
      });
      self.scopeSelect.value = self.scope;
      self.show(self.view);  // the view picked meanwhile, if any, now with the scope
    }, function (err) { self.fail(err); });
  };

  App.prototype.tab = function (view, label) {
    var self = this;
    return el("button", { type: "button", className: "cmms-tab-" + view, onclick: function () { self.show(view); } }, label);
  };

  App.prototype.clear = function () {
    while (this.body.firstChild) this.body.removeChild(this.body.firstChild);
    return this.body;
  };

  App.prototype.fail = function (err) {
    add(this.clear(), el("p", { className: "cmms-error", role: "alert" }, problem(err)));
  };

  App.prototype.show = function (view) {
    this.view = view;
    if (view === "overview") return this.overview();
    if (view === "memories") return this.memories();
    return this.inspector();
  };

  App.prototype.overview = function () {
    var self = this, current = this.begin();
    add(this.clear(), el("p", null, "Loading\u2026"));
    get("/overview", { scope: this.scope }).then(function (o) {
      if (!current()) return;
      var body = self.clear();
      add(body, el("h3", null, "Scopes"));
      (o.scopes || []).forEach(function (s) {
        add(body, el("div", { className: "cmms-scope-card", style: BOX },
          el("strong", null, s.scope), " \u2014 " + s.memories + " memories",
          el("div", null, "by tier: " + counts(s.by_tier) + "; by kind: " + counts(s.by_kind)),
          el("div", null, "by state: " + counts(s.by_state)),
          el("div", null, "newest: " + when(s.newest_at) + (s.vectors_pending ? "; waiting to be indexed: " + s.vectors_pending : ""))));
      });
      add(body, el("h3", null, "Health"));
      var order = { FAIL: 0, warn: 1 };
      var checks = (o.health || []).slice().sort(function (a, b) {
        return (order[a.level] === undefined ? 2 : order[a.level]) - (order[b.level] === undefined ? 2 : order[b.level]);
      });
      add(body, el("table", { className: "cmms-health", style: { borderCollapse: "collapse" } }, checks.map(function (c) {
        return el("tr", { className: "cmms-check" }, el("td", { style: CELL }, c.name), el("td", { style: CELL }, badge(c.level)),
          el("td", { style: Object.assign({}, CELL, { opacity: c.level === "ok" ? 0.7 : 1, overflowWrap: "anywhere" }) }, c.detail));
      })));
      add(body, el("h3", null, "Latest writes"));
      add(body, self.list(o.latest_writes || []));
      add(body, el("h3", null, "Latest recalls"));
      var recalls = o.latest_recalls || [];
      if (!recalls.length) add(body, el("p", { className: "cmms-empty" }, "Nothing recalled yet."));
      add(body, el("ul", { className: "cmms-recalls" }, recalls.map(function (r) {
        var got = r.recalled || [];
        return el("li", { className: "cmms-recall" }, when(r.at) + " \u00b7 session " + (r.session_id || "\u2014") +
          (r.turn ? ", turn " + r.turn : "") + ": " + got.length + (got.length === 1 ? " memory" : " memories"),
          el("ul", null, got.slice(0, 5).map(function (x) {
            return el("li", null, self.link(x.memory_id), " ", x.text === null || x.text === undefined ? "(forgotten since)" : x.text);
          })));
      })));
    }, function (err) { if (current()) self.fail(err); });
  };

  var CELL = { padding: "3px 10px 3px 0", verticalAlign: "top", borderBottom: "1px solid rgba(127,127,127,.2)" };

  // a memory id as a button that opens its page: its first 8 characters, its whole id as the tooltip
  App.prototype.link = function (id) {
    var self = this;
    return el("button", { type: "button", className: "cmms-id", title: id, style: { fontFamily: "monospace", padding: "0 4px", margin: "0 4px 0 0" },
      onclick: function () { self.memory(id); } }, String(id || "").slice(0, 8));
  };

  function counts(map) {
    return Object.keys(map || {}).map(function (k) { return k + " " + map[k]; }).join(", ") || "\u2014";
  }

  App.prototype.list = function (items) {
    var self = this;
    if (!items.length) return el("p", { className: "cmms-empty" }, "Nothing here.");
    return el("ul", { className: "cmms-list", style: { listStyle: "none", padding: 0 } }, items.map(function (m) {
      return el("li", { className: "cmms-item", data: { id: m.id }, style: BOX },
        el("div", { style: { fontSize: ".85em" } }, badge(stateOf(m)), m.pinned ? badge("pinned") : null,
          el("span", { style: { opacity: 0.75 } }, [m.kind, m.tier, when(m.created_at), "via " + (m.source || "\u2014"),
            typeof m.score === "number" ? "score " + m.score.toFixed(2) : ""].filter(Boolean).join(" \u00b7 ")),
          (m.tags || []).length ? el("span", { className: "cmms-tags", style: { marginLeft: "8px" } }, "tags: " + m.tags.join(", ")) : null),
        el("div", { className: "cmms-text", style: MONO }, m.content),
        el("button", { type: "button", className: "cmms-open", onclick: function () { self.memory(m.id); } }, "Provenance"));
    }));
  };

  App.prototype.memories = function (filters) {
    var self = this;
    filters = filters || { q: "", mode: "keyword", state: "active", offset: 0 };
    var search = el("input", { type: "search", className: "cmms-search", placeholder: "Search memories", value: filters.q });
    var mode = el("select", { className: "cmms-mode" }, el("option", { value: "keyword" }, "keywords"), el("option", { value: "meaning" }, "meaning"));
    var state = el("select", { className: "cmms-state" }, ["active", "superseded", "expired", "all"].map(function (s) { return el("option", { value: s }, s); }));
    mode.value = filters.mode; state.value = filters.state;
    var results = el("div", { className: "cmms-results" });
    function run(offset) {
      var asked = { q: search.value, mode: mode.value, state: state.value, offset: offset || 0 }, current = self.begin();
      add(empty(results), el("p", null, "Loading\u2026"));
      get("/memories", { scope: self.scope, q: asked.q, mode: asked.mode, state: asked.state, offset: asked.offset }).then(function (page) {
        if (!current()) return;
        empty(results);
        add(results, el("p", { className: "cmms-total" }, page.total + " memories" + (page.total > page.items.length ? ", " + (page.offset + 1) + "\u2013" + (page.offset + page.items.length) + " shown" : "")));
        if (page.notice) add(results, el("p", { className: "cmms-notice" }, page.notice));
        add(results, self.list(page.items));
        if (page.offset > 0) add(results, el("button", { type: "button", onclick: function () { run(Math.max(page.offset - page.limit, 0)); } }, "Previous"));
        if (page.offset + page.items.length < page.total) add(results, el("button", { type: "button", className: "cmms-next", onclick: function () { run(page.offset + page.limit); } }, "Next"));
      }, function (err) { if (current()) add(empty(results), el("p", { className: "cmms-error", role: "alert" }, problem(err))); });
    }
    var form = el("form", { className: "cmms-search-form", onsubmit: function (e) { e.preventDefault(); run(0); }, style: { display: "flex", gap: "8px" } },
      search, mode, state, el("button", { type: "submit" }, "Search"));
    add(this.clear(), [form, results]);
    run(filters.offset);
  };

  function empty(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

  App.prototype.memory = function (id) {
    var self = this, current = this.begin();
    add(this.clear(), el("p", null, "Loading\u2026"));
    get("/memory", { scope: this.scope, id: id }).then(function (page) {
      if (!current()) return;
      var m = page.memory, p = page.provenance || {}, c = page.confidence || {};
      var body = self.clear();
      add(body, [
        el("button", { type: "button", onclick: function () { self.show("memories"); } }, "\u2190 Memories"),
        el("h3", null, "Memory " + m.id),
        el("div", { className: "cmms-memory-text", style: Object.assign({}, BOX, MONO) }, m.content),
        el("h3", null, "Provenance"),
        el("dl", { className: "cmms-provenance" }, pairs({
          "receipt": p.source, "door": p.door, "session": p.session_id, "turn": p.turn, "created": when(p.created_at),
          "updated": when(p.updated_at), "reinforcements": p.reinforcements, "state": stateOf(m), "kind": m.kind, "tier": m.tier,
          "tags": (m.tags || []).join(", ")
        })),
        el("h3", null, "Confidence"),
        el("dl", null, pairs({ "now": c.now, "reliability": c.reliability, "last seen": when(c.last_seen_at),
          "after decay": c.after_decay ? c.after_decay.confidence + " (" + c.after_decay.state + ")" : "", "pinned": c.pinned })),
        chain("Supersedes", page.supersedes), chain("Superseded by", page.superseded_by),
        el("h3", null, "Audit"),
        el("ul", null, (page.audit || []).map(function (a) {
          return el("li", null, when(a.at) + " " + a.action + " by " + (a.actor || "\u2014") + (a.detail ? " \u00b7 " + counts(a.detail) : ""));
        }))
      ]);
    }, function (err) { if (current()) self.fail(err); });
  };

  function pairs(map) {
    var out = [];
    Object.keys(map).forEach(function (k) {
      var v = map[k];
      if (v === null || v === undefined || v === "") v = "\u2014";
      out.push(el("dt", { style: { fontWeight: "bold" } }, k), el("dd", { style: { margin: "0 0 4px 16px", overflowWrap: "anywhere" } }, String(v)));
    });
    return out;
  }

  function chain(title, links) {
    if (!links || !links.length) return null;
    return [el("h3", null, title), el("ul", null, links.map(function (l) {
      return el("li", null, badge(stateOf(l)), el("span", { style: MONO }, String(l.id || "").slice(0, 8) + " " + (l.content || l.text || "")));
    }))];
  }

  App.prototype.inspector = function () {
    var self = this;
    var prompt = el("textarea", { className: "cmms-prompt", rows: 3, placeholder: "A prompt, as the user would type it", style: { width: "100%" } });
    var out = el("div", { className: "cmms-inspection" });
    this.begin();  // a view still loading is not drawn over this one
    function inspect(e) {
      e.preventDefault();
      var current = self.begin();
      add(empty(out), el("p", null, "Loading\u2026"));
      get("/inspect", { scope: self.scope, prompt: prompt.value }).then(function (r) {
        if (!current()) return;
        empty(out);
        add(out, [
          el("h3", null, "The block Hermes would get (" + r.tokens + " of " + r.budget_tokens + " tokens)"),
          el("pre", { className: "cmms-block", style: Object.assign({}, BOX, MONO) }, r.block || "(nothing recalled)"),
          el("h3", null, "Why each line"), self.lines(r.lines || [], prompt.value),
          el("h3", null, "Ranked next, did not fit"), self.lines(r.next || [], prompt.value)]);
      }, function (err) { if (current()) add(empty(out), el("p", { className: "cmms-error", role: "alert" }, problem(err))); });
    }
    var picked = el("input", { className: "cmms-pick", placeholder: "a memory id", size: 38 });
    var verdict = el("span", { className: "cmms-pick-verdict" }), ask = latest();
    function whyNot(e) {
      e.preventDefault();
      var current = ask();
      get("/why_not", { scope: self.scope, prompt: prompt.value, id: picked.value }).then(function (w) {
        if (current()) verdict.textContent = " " + visible(w.verdict);
      }, function (err) { if (current()) verdict.textContent = " " + visible(problem(err)); });
    }
    add(this.clear(), [el("form", { className: "cmms-inspect-form", onsubmit: inspect }, prompt,
      el("button", { type: "submit" }, "Inspect")),
      el("form", { className: "cmms-pick-form", onsubmit: whyNot }, "Why not this one? ", picked,
        el("button", { type: "submit" }, "Ask"), verdict), out]);
  };

  App.prototype.lines = function (lines, prompt) {
    var self = this;
    if (!lines.length) return el("p", { className: "cmms-empty" }, "None.");
    return el("ol", { className: "cmms-lines" }, lines.map(function (line) {
      var verdict = el("span", { className: "cmms-verdict" }), ask = latest();
      return el("li", { className: "cmms-line", style: BOX },
        el("div", { style: MONO }, line.text),
        el("div", { style: { fontSize: ".85em" } }, "found by: " + ranks(line.found_by) +
          "; fused " + fixed(line.fused) + "; nudges: " + nudges(line.nudges) + "; score " + fixed(line.score)),
        el("button", { type: "button", className: "cmms-open", onclick: function () { self.memory(line.memory_id); } }, "Provenance"),
        " ",
        el("button", { type: "button", className: "cmms-why-not", onclick: function () {
          var current = ask();
          get("/why_not", { scope: self.scope, prompt: prompt, id: line.memory_id }).then(function (w) {
            if (current()) verdict.textContent = " " + visible(w.verdict);
          }, function (err) { if (current()) verdict.textContent = " " + visible(problem(err)); });
        } }, "Where does it stand?"), verdict);
    }));
  };

  function fixed(n) { return typeof n === "number" ? n.toFixed(3) : "\u2014"; }
  function ranks(map) {
    return Object.keys(map || {}).map(function (k) { return k.replace(/_/g, " ") + " #" + map[k]; }).join(", ") || "\u2014";
  }
  // as the standalone dashboard's macros.nudges: factors as \u00d7, additions as +, neutral ones left out
  var ADDED = { recency: true, neighbour: true };
  function nudges(map) {
    return Object.keys(map || {}).filter(function (k) {
      return typeof map[k] === "number" && (ADDED[k] ? map[k] !== 0 : map[k] !== 1);
    }).map(function (k) {
      return k.replace(/_/g, " ") + " " + (ADDED[k] ? "+" + map[k].toFixed(3) : "\u00d7" + map[k].toFixed(2));
    }).join(", ") || "none";
  }

  function MemoryTab() {
    var ref = React.useRef(null);
    React.useEffect(function () {
      var node = ref.current;
      if (node) new App(node).start();
      return function () { if (node) empty(node); };
    }, []);
    return React.createElement("div", { ref: ref, className: "cmms-tab", style: { padding: "16px" } });
  }

  window.__HERMES_PLUGINS__.register("cmms", MemoryTab);
})();
