// toolpath ui: the session page's waterfalls of spans. Every span of a turn is in its waterfall's data; the rows
// are drawn a window at a time once there are more than WINDOW of them, so a trace of thousands of spans opens
// as fast as a small one. A span's subtree folds; "errors only" and "find in spans" keep the matching spans and
// the spans above them; a click (or Enter) opens a span in the side panel. The view (find, errors only, folded
// spans, the open span) is kept in the page's address, so a link reopens it as it was.
"use strict";

var ROW_HEIGHT = 22;  // px: ui.css's .wf-row height
var WINDOW = 200;  // rows a waterfall draws whole; past that it scrolls in its own box, a window drawn at a time
var MARGIN = 40;  // rows drawn above and below the window
var MIN_BAR = 3;  // thousandths of the row: the narrowest bar drawn
var SVG = "http://www.w3.org/2000/svg";

document.addEventListener("DOMContentLoaded", function () {
  var panel = document.getElementById("span-panel");
  if (panel) new TraceView(panel);
});

function Waterfall(box, view) {
  var self = this;
  this.box = box;
  this.view = view;
  this.turn = box.closest("section.turn");
  this.scroller = box.querySelector(".wf-scroll");
  this.list = box.querySelector(".wf-rows");
  this.count = box.querySelector(".wf-count");
  var trace = box.dataset.trace;
  var parents = [];
  this.rows = JSON.parse(box.querySelector("script.wf-data").textContent).map(function (r, i) {
    parents.length = r[2];  // the rows open above this one, one a level
    var row = {
      i: i, label: r[0], kind: r[1], depth: r[2], under: r[3], x: r[4], w: r[5], ms: r[6], error: r[7] === 1,
      span: r[8], tokensIn: r[9], tokensOut: r[10], offset: r[11], text: (r[0] + " " + r[12]).toLowerCase(),
      trace: r[13] || trace, parent: parents.length ? parents[parents.length - 1] : -1
    };
    parents.push(i);
    return row;
  });
  this.visible = this.rows;
  this.drawn = null;
  var pending = false;
  this.scroller.addEventListener("scroll", function () {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () { pending = false; self.draw(false); });
  });
  this.list.addEventListener("click", function (event) {
    var button = event.target.closest("button");
    var item = event.target.closest(".wf-row");
    if (!button || !item) return;
    var row = self.rows[Number(item.dataset.index)];
    if (button.classList.contains("fold")) {
      view.fold(row, !view.folded[row.span]);
    } else if (button.classList.contains("span-open")) {
      view.open(self, row, button);
    }
  });
}

// The rows shown: not under a folded span, and with find or errors only, the spans that match and those above.
Waterfall.prototype.filter = function () {
  var view = this.view, rows = this.rows, needle = view.needle, keep = null, matches = 0;
  if (needle || view.errorsOnly) {
    keep = new Uint8Array(rows.length);
    rows.forEach(function (r) {
      r.match = needle !== "" && r.text.indexOf(needle) >= 0;
      if ((needle && !r.match) || (view.errorsOnly && !r.error)) return;
      matches += 1;
      for (var p = r.i; p >= 0 && !keep[p]; p = rows[p].parent) keep[p] = 1;
    });
  } else {
    rows.forEach(function (r) { r.match = false; });
  }
  var out = [];
  for (var i = 0; i < rows.length;) {
    var r = rows[i];
    if (keep && !keep[i]) { i += 1 + r.under; continue; }  // nothing under it is kept either
    out.push(r);
    i += r.span && view.folded[r.span] ? 1 + r.under : 1;
  }
  this.visible = out;
  this.matches = keep ? matches : null;
  var said = out.length === rows.length ? rows.length + " span(s)" : out.length + " of " + rows.length + " span(s) shown";
  if (this.matches !== null) said += " · " + this.matches + (needle ? " match(es)" : " failed");
  this.count.textContent = said;
  this.drawn = null;
};

// The rows in (or near) the scroll box's window; all of them when there are WINDOW or fewer.
Waterfall.prototype.draw = function (force) {
  var n = this.visible.length, virtual = n > WINDOW, from = 0, to = n;
  this.scroller.classList.toggle("virtual", virtual);
  if (virtual) {
    var top = this.scroller.scrollTop, height = this.scroller.clientHeight || 600;
    from = Math.max(0, Math.floor(top / ROW_HEIGHT) - MARGIN);
    to = Math.min(n, Math.ceil((top + height) / ROW_HEIGHT) + MARGIN);
  }
  if (!force && this.drawn && this.drawn[0] === from && this.drawn[1] === to) return;
  var focused = document.activeElement && this.list.contains(document.activeElement) ? document.activeElement : null;
  var again = focused ? [focused.closest(".wf-row").dataset.index, focused.className] : null;
  this.drawn = [from, to];
  this.list.style.height = virtual ? n * ROW_HEIGHT + "px" : "";
  this.list.style.paddingTop = virtual ? from * ROW_HEIGHT + "px" : "";
  var rows = document.createDocumentFragment();
  for (var k = from; k < to; k += 1) rows.appendChild(this.element(this.visible[k]));
  this.list.textContent = "";
  this.list.appendChild(rows);
  if (again) {
    var back = this.list.querySelector(".wf-row[data-index='" + again[0] + "'] button[class='" + again[1] + "']");
    if (back) back.focus({ preventScroll: true });
  }
};

Waterfall.prototype.element = function (r) {
  var view = this.view;
  var row = document.createElement("div");
  row.className = "wf-row " + r.kind + (r.error ? " error" : "") + (r.match ? " match" : "") +
    (view.needle && !r.match ? " context" : "") + (r.span && r.span === view.selected ? " selected" : "");
  row.setAttribute("role", "listitem");
  row.dataset.index = r.i;
  if (r.span) row.dataset.span = r.span;
  var label = document.createElement("span");
  label.className = "wf-label";
  label.style.paddingLeft = Math.min(r.depth, 16) * 10 + "px";
  if (r.under) {
    var folded = !!view.folded[r.span];
    var fold = document.createElement("button");
    fold.type = "button";
    fold.className = "fold plain";
    fold.textContent = folded ? "▸" : "▾";
    fold.setAttribute("aria-expanded", folded ? "false" : "true");
    fold.setAttribute("aria-label", (folded ? "unfold " : "fold ") + r.under + " span(s) under " + r.label);
    label.appendChild(fold);
  } else {
    var gap = document.createElement("span");
    gap.className = "fold-gap";
    label.appendChild(gap);
  }
  var name = document.createElement(r.span ? "button" : "span");
  name.className = r.span ? "span-open plain" : "wf-name";
  if (r.span) {
    name.type = "button";
    name.setAttribute("aria-label", "span " + r.label + ": " + r.ms.toFixed(2) + " ms" + (r.error ? ", error" : ""));
  }
  marked(name, r.label, r.match ? view.needle : "");
  name.title = r.label + ": " + r.ms.toFixed(2) + " ms from +" + r.offset.toFixed(2) + " ms" + tokens(r, " · tokens ", " in / ", " out");
  label.appendChild(name);
  row.appendChild(label);
  var bar = document.createElementNS(SVG, "svg");
  bar.setAttribute("class", "wf-bar");
  bar.setAttribute("viewBox", "0 0 1000 10");
  bar.setAttribute("preserveAspectRatio", "none");
  bar.setAttribute("aria-hidden", "true");
  bar.setAttribute("focusable", "false");
  var rect = document.createElementNS(SVG, "rect");
  rect.setAttribute("x", Math.min(r.x, 1000 - MIN_BAR));
  rect.setAttribute("y", "0");
  rect.setAttribute("width", Math.max(r.w, MIN_BAR));
  rect.setAttribute("height", "10");
  bar.appendChild(rect);
  row.appendChild(bar);
  var ms = document.createElement("span");
  ms.className = "wf-ms";
  ms.textContent = r.ms.toFixed(1) + " ms" + tokens(r, " · ", "/", " tok");
  row.appendChild(ms);
  return row;
};

function tokens(r, before, between, after) {
  if ((r.tokensIn === null || r.tokensIn === undefined) && (r.tokensOut === null || r.tokensOut === undefined)) return "";
  var shown = function (v) { return v === null || v === undefined ? "?" : String(v); };
  return before + shown(r.tokensIn) + between + shown(r.tokensOut) + after;
}

// ``text`` into ``element``, the first place ``needle`` is found in it (any case) in a <mark>.
function marked(element, text, needle) {
  var at = needle ? text.toLowerCase().indexOf(needle) : -1;
  if (at < 0) { element.textContent = text; return; }
  element.appendChild(document.createTextNode(text.slice(0, at)));
  var mark = document.createElement("mark");
  mark.textContent = text.slice(at, at + needle.length);
  element.appendChild(mark);
  element.appendChild(document.createTextNode(text.slice(at + needle.length)));
}

// ``r`` drawn (its folded spans above it unfolded, its window scrolled to) and its row's element.
Waterfall.prototype.reveal = function (r) {
  var at = this.visible.indexOf(r);
  if (at < 0) return null;
  if (this.scroller.classList.contains("virtual")) {
    var top = at * ROW_HEIGHT, box = this.scroller;
    if (top < box.scrollTop || top + ROW_HEIGHT > box.scrollTop + box.clientHeight) {
      box.scrollTop = Math.max(0, top - box.clientHeight / 2);
    }
    this.draw(false);
  }
  return this.list.querySelector(".wf-row[data-index='" + r.i + "']");
};

function TraceView(panel) {
  var self = this;
  var url = new URL(window.location.href);
  this.panel = panel;
  this.found = (url.searchParams.get("find") || "").trim();  // as typed; this.needle: in lower case
  this.needle = this.found.toLowerCase();
  this.errorsOnly = url.searchParams.get("errors") === "1";
  this.folded = {};
  (url.searchParams.get("fold") || "").split(",").forEach(function (id) { if (id) self.folded[id] = true; });
  this.selected = url.searchParams.get("span");  // the address keeps the span it opens
  this.opener = null;
  this.waterfalls = Array.prototype.map.call(document.querySelectorAll("div.waterfall"), function (box) {
    return new Waterfall(box, self);
  });
  var find = document.getElementById("span-find");
  var errors = document.getElementById("errors-only");
  if (find) {
    find.value = url.searchParams.get("find") || "";
    var timer = null;
    find.addEventListener("input", function () {
      window.clearTimeout(timer);
      timer = window.setTimeout(function () {
        self.found = find.value.trim();
        self.needle = self.found.toLowerCase();
        self.refresh();
      }, 120);
    });
  }
  if (errors) {
    errors.checked = this.errorsOnly;
    errors.addEventListener("change", function () { self.errorsOnly = errors.checked; self.refresh(); });
  }
  var unfold = document.getElementById("unfold-all");
  if (unfold) unfold.addEventListener("click", function () { self.folded = {}; self.refresh(); });
  this.refresh();
  this.spanPanel();
  document.addEventListener("keydown", function (event) { self.key(event); });
}

TraceView.prototype.refresh = function () {
  this.waterfalls.forEach(function (w) { w.filter(); w.draw(true); });
  this.remember();
};

TraceView.prototype.fold = function (row, folded) {
  if (folded) this.folded[row.span] = true; else delete this.folded[row.span];
  this.refresh();
};

// The view in the page's address: find, errors only, the folded spans and the open span.
TraceView.prototype.remember = function (turn) {
  var url = new URL(window.location.href);
  var set = function (key, value) { if (value) url.searchParams.set(key, value); else url.searchParams.delete(key); };
  set("find", this.found);
  set("errors", this.errorsOnly ? "1" : "");
  set("fold", Object.keys(this.folded).join(","));
  set("span", this.selected);
  if (turn) url.hash = turn.id;
  window.history.replaceState(null, "", url.toString());
  var found = this.found, errorsOnly = this.errorsOnly;
  document.querySelectorAll("a#previous-page, a#next-page").forEach(function (link) {
    var other = new URL(link.href);  // the session's other pages of turns: the same find and errors only
    if (found) other.searchParams.set("find", found); else other.searchParams.delete("find");
    if (errorsOnly) other.searchParams.set("errors", "1"); else other.searchParams.delete("errors");
    link.href = other.toString();
  });
  return url.toString();
};

TraceView.prototype.locate = function (spanId) {
  var wanted = spanId.toLowerCase();
  for (var k = 0; k < this.waterfalls.length; k += 1) {
    var w = this.waterfalls[k];
    for (var i = 0; i < w.rows.length; i += 1) {
      if (w.rows[i].span.toLowerCase() === wanted) return [w, w.rows[i]];
    }
  }
  return null;
};

// j and k: the next and the previous span of the page's waterfalls (outside a text field).
TraceView.prototype.key = function (event) {
  if ((event.key !== "j" && event.key !== "k") || event.ctrlKey || event.metaKey || event.altKey) return;
  if (typing(event.target)) return;  // ui.js
  var order = [];
  this.waterfalls.forEach(function (w) { w.visible.forEach(function (r) { order.push([w, r]); }); });
  if (!order.length) return;
  event.preventDefault();
  var current = document.activeElement && document.activeElement.closest ? document.activeElement.closest(".wf-row") : null;
  var at = -1;
  if (current) {
    var box = current.closest("div.waterfall");
    at = order.findIndex(function (pair) { return pair[0].box === box && pair[1].i === Number(current.dataset.index); });
  }
  var next = at < 0 ? (event.key === "j" ? 0 : order.length - 1) : at + (event.key === "j" ? 1 : -1);
  if (next < 0 || next >= order.length) return;
  var element = order[next][0].reveal(order[next][1]);
  if (!element) return;
  var button = element.querySelector("button.span-open") || element.querySelector("button.fold");
  element.scrollIntoView({ block: "nearest" });
  if (button) button.focus();
};

// The side panel of a span: its attributes, events, status and timing; "copy link"; Escape closes it.
TraceView.prototype.spanPanel = function () {
  var self = this, panel = this.panel;
  var linkButton = document.getElementById("span-link");
  document.getElementById("span-close").addEventListener("click", function () { self.close(); });
  linkButton.addEventListener("click", function () {
    if (self.selected) copyText(self.remember(self.selectedTurn), linkButton);
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && !panel.hidden) self.close();
  });
  var wanted = panel.dataset.open;  // a link to a span (span=<id>): that span opened on load, scrolled to
  var found = wanted ? this.locate(wanted) : null;
  if (!found) return;
  var row = found[1], w = found[0], unfolded = false;
  for (var p = row.parent; p >= 0; p = w.rows[p].parent) {
    if (this.folded[w.rows[p].span]) { delete this.folded[w.rows[p].span]; unfolded = true; }
  }
  if (unfolded) this.refresh();
  var element = w.reveal(row);
  if (element) element.scrollIntoView({ block: "center" });
  this.open(w, row, element ? element.querySelector("button.span-open") : null);
};

TraceView.prototype.close = function () {
  this.panel.hidden = true;
  this.selected = null;
  this.waterfalls.forEach(function (w) { w.draw(true); });
  this.remember();
  if (this.opener) {
    var again = this.opener.isConnected ? this.opener : null;
    if (!again && this.openerSpan) {
      again = document.querySelector(".wf-row[data-span='" + this.openerSpan + "'] button.span-open");
    }
    if (again) again.focus();
  }
};

TraceView.prototype.open = function (w, row, button) {
  var self = this;
  this.opener = button;
  this.openerSpan = row.span;
  var url = "/traces/" + encodeURIComponent(row.trace) + "/spans/" + encodeURIComponent(row.span) + ".json";
  fetch(url, { credentials: "same-origin" })
    .then(function (reply) {
      if (!reply.ok) throw new Error("the server answered " + reply.status);
      return reply.json();
    })
    .then(function (span) {
      self.selected = row.span;
      self.selectedTurn = w.turn;
      self.waterfalls.forEach(function (other) { other.draw(true); });
      self.show(span);
      self.remember(w.turn);  // the address opens this span
    })
    .catch(function (err) {
      document.getElementById("span-title").textContent = "Span";
      document.getElementById("span-summary").textContent = "could not read the span: " + err.message;
      self.panel.hidden = false;
    });
};

TraceView.prototype.show = function (span) {
  var panel = this.panel;
  document.getElementById("span-title").textContent = span.name;
  document.getElementById("span-summary").textContent = span.role + " · " + span.kind + " · started " + span.start +
    " UTC · " + (span.duration_ms === null ? "no end" : span.duration_ms.toFixed(2) + " ms") +
    " · span " + span.span_id + (span.parent_span_id ? " (parent " + span.parent_span_id + ")" : "");
  var status = document.getElementById("span-status");
  status.textContent = "status: " + span.status + (span.status_message ? ": " + span.status_message : "");
  status.className = span.status === "error" ? "fail" : "";
  fillTable(document.getElementById("span-attributes"), span.attributes);
  fillTable(document.getElementById("span-resource"), span.resource);
  var events = document.getElementById("span-events");
  events.textContent = "";
  (span.events || []).forEach(function (event) {
    var box = document.createElement("div");
    box.className = "span-event";
    var title = document.createElement("h4");
    title.textContent = (event.name || "event") + (event.when ? " at " + event.when : "");
    box.appendChild(title);
    var table = document.createElement("table");
    table.className = "kv";
    fillTable(table, event.attributes);
    box.appendChild(table);
    events.appendChild(box);
  });
  if (!(span.events || []).length) {
    events.textContent = "none";
    events.className = "muted";
  } else {
    events.className = "";
  }
  var linkButton = document.getElementById("span-link");
  linkButton.textContent = "copy link";
  delete linkButton.dataset.copied;
  panel.hidden = false;
  panel.focus();
};
