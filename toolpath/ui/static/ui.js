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

  // The online page follows new results.
  if (document.getElementById("series")) {
    window.setTimeout(function () { window.location.reload(); }, 30000);
  }

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
