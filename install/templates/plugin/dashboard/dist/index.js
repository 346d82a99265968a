// hermes-cmms: the Memory tab of the Hermes Dashboard (read-only).
// A thin shell over the standalone dashboard's own pages: the plugin route /page answers a page of
// `hermes-cmms ui` (the same view and template, rendered read-only without its head) as
// {"title", "html"}, and this file puts it in the tab. The HTML is parsed with DOMParser (an inert
// document: no script runs, nothing is eval'd), any <script> is dropped, and its nodes are moved
// into the tab. Its links (href starting with one "/") and its GET forms open their page in the
// tab, whose address is kept after the "#" (/cmms#/memories?scope=...): back, forward and a reload
// work. Only the latest page asked for is drawn. The stylesheet is the dashboard's app.css, every
// rule scoped to class "cmms" (the pages' container), so Hermes' own page keeps its look.
(function () {
  "use strict";
  var SDK = window.__HERMES_PLUGIN_SDK__;
  if (!SDK || !window.__HERMES_PLUGINS__) return;
  var React = SDK.React;
  var API = "/api/plugins/cmms";
  var STYLE_ID = "cmms-style";

  // fetchJSON throws Error("<status>: <body>"); the page route's body is {"detail", "title", "html"}
  function problem(err) {
    var text = String(err && err.message || err);
    try { var parsed = JSON.parse(text.replace(/^\d+:\s*/, "")); if (parsed && typeof parsed.detail === "string") return parsed; } catch (e) { /* plain text */ }
    return { detail: text };
  }

  function empty(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

  // an address of the dashboard's own: one leading "/" (never "//host"), else null
  function own(href) {
    if (typeof href !== "string") return null;
    if (href.charAt(0) === "#") href = href.slice(1);
    return href.charAt(0) === "/" && href.charAt(1) !== "/" && href.charAt(1) !== "\\" ? href : null;
  }

  function here() { return own(location.hash) || "/"; }

  function style() {  // app.css, once per page, in a <style> (its route needs the session token)
    if (document.getElementById(STYLE_ID)) return;
    var node = document.createElement("style");
    node.id = STYLE_ID;
    document.head.appendChild(node);
    SDK.fetchJSON(API + "/style").then(function (answer) { node.textContent = answer.css; },
      function () { node.remove(); });
  }

  function Tab(root) {
    this.root = root;
    this.last = 0;  // the latest page asked for: an answer to an older one is dropped
  }

  Tab.prototype.load = function (path) {
    var self = this, mine = ++this.last;
    this.root.setAttribute("aria-busy", "true");
    function shown(page) {
      if (mine !== self.last) return;
      if (typeof page.html === "string") self.draw(page.html); else self.fail(page.detail);
      self.root.setAttribute("aria-label", "Memory: " + (page.title || page.detail));
      self.root.setAttribute("data-path", path);
    }
    SDK.fetchJSON(API + "/page?path=" + encodeURIComponent(path)).then(shown, function (err) { shown(problem(err)); });
  };

  Tab.prototype.draw = function (html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    Array.prototype.forEach.call(doc.querySelectorAll("script"), function (s) { s.remove(); });
    Array.prototype.forEach.call(doc.querySelectorAll("a[href]"), function (a) {  // so "open in a new tab" works too
      if (own(a.getAttribute("href"))) a.setAttribute("href", "#" + a.getAttribute("href"));
    });
    empty(this.root);
    while (doc.body.firstChild) this.root.appendChild(document.adoptNode(doc.body.firstChild));
    this.root.removeAttribute("aria-busy");
  };

  Tab.prototype.fail = function (sentence) {  // an answer that is no page (a network error, a proxy's)
    var box = document.createElement("div"), main = document.createElement("main"), p = document.createElement("p");
    box.className = "cmms cmms-page";
    p.className = "error";
    p.setAttribute("role", "alert");
    p.textContent = sentence;
    main.appendChild(p);
    box.appendChild(main);
    empty(this.root).appendChild(box);
    this.root.removeAttribute("aria-busy");
  };

  Tab.prototype.go = function (path) {
    if (here() !== path) history.pushState(null, "", location.pathname + location.search + "#" + path);
    this.load(path);
  };

  Tab.prototype.click = function (event) {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    var link = event.target.closest && event.target.closest("a[href]");
    var path = link && this.root.contains(link) ? own(link.getAttribute("href")) : null;
    if (!path) return;
    event.preventDefault();
    this.go(path);
  };

  Tab.prototype.submit = function (event) {
    var form = event.target;
    event.preventDefault();  // the tab is read-only: only a GET form (a filter, a search) goes anywhere
    if ((form.getAttribute("method") || "get").toLowerCase() !== "get") return;
    var action = own(form.getAttribute("action") || here().split("?")[0]);
    if (!action) return;
    var params = new URLSearchParams();
    new FormData(form, event.submitter || undefined).forEach(function (value, name) {
      if (typeof value === "string") params.append(name, value);
    });
    var query = params.toString();
    this.go(action + (query ? "?" + query : ""));
  };

  function MemoryTab() {
    var ref = React.useRef(null);
    React.useEffect(function () {
      var node = ref.current;
      if (!node) return undefined;
      style();
      var tab = new Tab(node);
      var click = function (e) { tab.click(e); }, submit = function (e) { tab.submit(e); };
      var moved = function () { if (here() !== node.getAttribute("data-path")) tab.load(here()); };
      node.addEventListener("click", click);
      node.addEventListener("submit", submit);
      window.addEventListener("popstate", moved);
      tab.load(here());
      return function () {
        tab.last += 1;  // nothing still on its way is drawn
        node.removeEventListener("click", click);
        node.removeEventListener("submit", submit);
        window.removeEventListener("popstate", moved);
        empty(node);
      };
    }, []);
    return React.createElement("div", { ref: ref, className: "cmms-tab" });
  }

  window.__HERMES_PLUGINS__.register("cmms", MemoryTab);
})();
