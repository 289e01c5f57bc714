// toolpath ui: small behaviours (no inline scripts: the page's Content-Security-Policy allows only this file).
"use strict";

document.addEventListener("DOMContentLoaded", function () {
  // Threshold sliders mirror their number fields, both ways.
  document.querySelectorAll("input[type=range][data-mirror]").forEach(function (slider) {
    var box = document.getElementById(slider.dataset.mirror);
    if (!box) return;
    slider.addEventListener("input", function () { box.value = slider.value; });
    box.addEventListener("input", function () { slider.value = box.value; });
  });

  // A run's case list: only the cases that failed (a replay's changed turns too), and a word when none did.
  var onlyFailing = document.getElementById("only-failing");
  if (onlyFailing) {
    kept(onlyFailing, "failing");
    onlyFailing.addEventListener("change", function () {
      var shown = 0;
      document.querySelectorAll("tbody.case").forEach(function (body) {
        var keep = body.dataset.failed === "1" || body.dataset.status === "changed";
        body.classList.toggle("hidden", onlyFailing.checked && !keep);
        if (!onlyFailing.checked || keep) shown += 1;
      });
      document.getElementById("no-failing").hidden = shown > 0;
    });
  }

  // A comparison of two runs: only the cases that differ.
  var onlyChanged = document.getElementById("only-changed");
  if (onlyChanged) {
    kept(onlyChanged, "changed");
    onlyChanged.addEventListener("change", function () {
      document.querySelectorAll("tbody.compared-case").forEach(function (body) {
        body.classList.toggle("hidden", onlyChanged.checked && body.dataset.changed !== "1");
      });
    });
  }

  // The reviewer's name, remembered in this browser for the next annotation.
  document.querySelectorAll("input.review-author").forEach(function (input) {
    try { input.value = input.value || window.localStorage.getItem("toolpath-reviewer") || ""; } catch (e) { /* off */ }
    input.form.addEventListener("submit", function () {
      try { window.localStorage.setItem("toolpath-reviewer", input.value); } catch (e) { /* storage off */ }
    });
  });

  // Sortable tables: a header's button sorts the rows by its column (again: the other way).
  document.querySelectorAll("table.sortable").forEach(sortable);

  // The online page follows new results.
  if (document.getElementById("series")) {
    window.setTimeout(function () { window.location.reload(); }, 30000);
  }

  // Long values (a tool's arguments or result) cut to a few lines behind "show all".
  document.querySelectorAll("pre[data-clamp]").forEach(clamp);

  // Keys: "/" to the page's search box, j and k from row to row of its list (the session page's spans: waterfall.js).
  document.addEventListener("keydown", keys);

  // An evaluation: follow it until it ends, then open its run or say why it failed. The job may have ended
  // before this page loaded (a fast run): the state the page was rendered with is acted on as a polled one.
  var job = document.getElementById("job");
  if (job) {
    followJob(job);
  }
});

var GONE = "gone";

function followJob(job) {
  var error = document.getElementById("job-error");
  var contact = document.getElementById("job-contact");
  var misses = 0;
  var openRun = function (runId) { window.location.assign("/runs/" + encodeURIComponent(runId)); };
  // true when the job has ended (its run opened, or its error shown)
  var show = function (state) {
    document.getElementById("job-progress").value = state.done;
    document.getElementById("job-done").textContent = state.done;
    document.getElementById("job-passed").textContent = state.passed;
    document.getElementById("job-failed").textContent = state.failed;
    var crashes = document.getElementById("job-crashes");  // cases whose agent raised: failed unscored
    (state.crashes || []).slice(crashes.children.length).forEach(function (crash) {
      var item = document.createElement("li");
      item.textContent = crash;
      crashes.appendChild(item);
    });
    job.dataset.state = state.state;
    if (state.state === "running") return false;
    if (state.state === "done" && state.run_id) {
      openRun(state.run_id);
    } else {
      error.textContent = state.error || "the evaluation ended without a run";
    }
    return true;
  };
  var poll = function () {
    fetch("/jobs/" + encodeURIComponent(job.dataset.job) + ".json", { credentials: "same-origin" })
      .then(function (reply) {
        if (reply.status === 404) throw new Error(GONE);
        if (!reply.ok) throw new Error("the server answered " + reply.status);
        return reply.json();
      })
      .then(function (state) {
        misses = 0;
        contact.textContent = "";
        if (!show(state)) window.setTimeout(poll, 300);
      })
      .catch(function (err) {
        if (err.message === GONE) {
          job.dataset.state = "failed";
          error.textContent = "the server no longer knows this evaluation (was toolpath ui restarted?): " +
            "look for its run on the Runs page";
          return;
        }
        misses += 1;  // the server is busy or restarting: keep asking, less often
        contact.textContent = "no answer from the server (" + err.message + "); still trying";
        window.setTimeout(poll, Math.min(5000, 300 * Math.pow(2, misses)));
      });
  };
  if (job.dataset.state === "done" && job.dataset.run) {
    openRun(job.dataset.run);
  } else if (job.dataset.state === "running") {
    poll();
  }
}

var LONG_VALUE = 300;  // characters shown of a longer value until it is expanded

function copyText(text, button) {
  var done = function () { button.textContent = "copied"; button.dataset.copied = "1"; };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, function () { fallbackCopy(text); done(); });
  } else {
    fallbackCopy(text);
    done();
  }
}

function fallbackCopy(text) {
  var area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.appendChild(area);
  area.select();
  try { document.execCommand("copy"); } catch (e) { /* the value stays selectable in the panel */ }
  document.body.removeChild(area);
}

function valueText(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

// A value cell: the text (never markup), cut to LONG_VALUE characters behind a "show all" toggle, and a copy button.
function valueCell(value) {
  var cell = document.createElement("td");
  var text = valueText(value);
  var pre = document.createElement("pre");
  pre.className = "value";
  cell.appendChild(pre);
  if (text.length > LONG_VALUE) {
    pre.textContent = text.slice(0, LONG_VALUE) + "…";
    pre.dataset.collapsed = "1";
    var more = document.createElement("button");
    more.type = "button";
    more.className = "plain expand";
    more.textContent = "show all " + text.length + " characters";
    more.addEventListener("click", function () {
      var open = pre.dataset.collapsed === "1";
      pre.textContent = open ? text : text.slice(0, LONG_VALUE) + "…";
      pre.dataset.collapsed = open ? "0" : "1";
      more.textContent = open ? "show less" : "show all " + text.length + " characters";
    });
    cell.appendChild(more);
  } else {
    pre.textContent = text;
  }
  var copy = document.createElement("button");
  copy.type = "button";
  copy.className = "plain copy";
  copy.textContent = "copy";
  copy.addEventListener("click", function () { copyText(text, copy); });
  cell.appendChild(copy);
  return cell;
}

function fillTable(table, values) {
  table.textContent = "";
  var keys = Object.keys(values || {}).sort();
  if (!keys.length) {
    var empty = document.createElement("tr");
    var cell = document.createElement("td");
    cell.className = "muted";
    cell.textContent = "none";
    empty.appendChild(cell);
    table.appendChild(empty);
    return;
  }
  keys.forEach(function (key) {
    var row = document.createElement("tr");
    row.dataset.key = key;
    var name = document.createElement("th");
    name.textContent = key;
    row.appendChild(name);
    row.appendChild(valueCell(values[key]));
    table.appendChild(row);
  });
}

function sortable(table) {
  table.querySelectorAll("th button.sort").forEach(function (button) {
    button.addEventListener("click", function () {
      var th = button.closest("th");
      var column = Array.prototype.indexOf.call(th.parentNode.children, th);
      var numeric = button.dataset.sort === "number";
      var down = th.getAttribute("aria-sort") !== "descending";
      table.querySelectorAll("th[aria-sort]").forEach(function (other) { other.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", down ? "descending" : "ascending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows).filter(function (row) { return row.cells.length > column; });
      var key = function (row) {
        var cell = row.cells[column];
        var raw = cell.dataset.value !== undefined ? cell.dataset.value : cell.textContent.trim();
        if (!numeric) return raw.toLowerCase();
        return raw === "" ? null : parseFloat(raw);
      };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === y) return 0;
        if (x === null) return 1;  // no value: last, either way
        if (y === null) return -1;
        return (x < y ? -1 : 1) * (down ? -1 : 1);
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
}

// A check box whose state is kept in the page's address under ``key`` (=1 when ticked): a reload or a link shows the
// page as it was. Its change handlers run again on load when the address ticks it.
function kept(box, key) {
  box.addEventListener("change", function () {
    var url = new URL(window.location.href);
    if (box.checked) url.searchParams.set(key, "1"); else url.searchParams.delete(key);
    window.history.replaceState(null, "", url.toString());
  });
  if (new URL(window.location.href).searchParams.get(key) === "1" && !box.checked) {
    window.setTimeout(function () {
      box.checked = true;
      box.dispatchEvent(new Event("change"));
    }, 0);
  }
}

var CLAMP = 300;  // characters of a value above which it is shown cut to a few lines until "show all"

function clamp(pre) {
  var length = pre.textContent.length;
  if (length <= CLAMP) return;
  pre.classList.add("clamped");
  var more = document.createElement("button");
  more.type = "button";
  more.className = "plain expand";
  more.textContent = "show all " + length + " characters";
  more.setAttribute("aria-expanded", "false");
  more.addEventListener("click", function () {
    var open = pre.classList.toggle("clamped") === false;
    more.textContent = open ? "show less" : "show all " + length + " characters";
    more.setAttribute("aria-expanded", open ? "true" : "false");
  });
  pre.insertAdjacentElement("afterend", more);
}

var NOT_TYPED = ["checkbox", "radio", "button", "submit", "reset", "range", "color", "file"];

// Whether a key pressed on ``target`` is typed into it (a text field, a text area, a select), so not a shortcut.
function typing(target) {
  if (!target || !target.closest) return false;
  if (target.closest("textarea, select, [contenteditable]")) return true;
  return target.tagName === "INPUT" && NOT_TYPED.indexOf(target.type) < 0;
}

// The rows j and k move between: a list page's rows (each focused through its first link or button).
var ROWS = "table.list > tbody > tr:not(.detail)";

function keys(event) {
  if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
  if (event.key === "/") {
    var box = document.querySelector("[data-search]") || document.querySelector("input[type=search]");
    if (box) {
      event.preventDefault();
      box.focus();
      box.select();
    }
    return;
  }
  if ((event.key !== "j" && event.key !== "k") || document.querySelector("div.waterfall")) return;
  var rows = Array.prototype.filter.call(document.querySelectorAll(ROWS), function (row) {
    return row.offsetParent !== null && row.querySelector("a[href], button");
  });
  if (!rows.length) return;
  event.preventDefault();
  var current = document.activeElement ? document.activeElement.closest("tr") : null;
  var at = rows.indexOf(current);
  var next = at < 0 ? (event.key === "j" ? 0 : rows.length - 1) : at + (event.key === "j" ? 1 : -1);
  if (next < 0 || next >= rows.length) return;
  rows.forEach(function (row) { row.classList.remove("current"); });
  rows[next].classList.add("current");
  rows[next].querySelector("a[href], button").focus();
  rows[next].scrollIntoView({ block: "nearest" });
}
