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

  // A run's case list: only failing cases.
  var onlyFailing = document.getElementById("only-failing");
  if (onlyFailing) {
    onlyFailing.addEventListener("change", function () {
      document.querySelectorAll("tbody.case").forEach(function (body) {
        body.classList.toggle("hidden", onlyFailing.checked && body.dataset.status !== "fail");
      });
    });
  }

  // The online page follows new results.
  if (document.getElementById("series")) {
    window.setTimeout(function () { window.location.reload(); }, 30000);
  }

  // A running evaluation: poll its progress, then open its run.
  var job = document.getElementById("job");
  if (job && job.dataset.state === "running") {
    var poll = function () {
      fetch("/jobs/" + encodeURIComponent(job.dataset.job) + ".json", { credentials: "same-origin" })
        .then(function (reply) { return reply.json(); })
        .then(function (state) {
          document.getElementById("job-progress").value = state.done;
          document.getElementById("job-done").textContent = state.done;
          document.getElementById("job-passed").textContent = state.passed;
          document.getElementById("job-failed").textContent = state.failed;
          job.dataset.state = state.state;
          if (state.state === "done" && state.run_id) {
            window.location.assign("/runs/" + encodeURIComponent(state.run_id));
          } else if (state.state === "failed") {
            document.getElementById("job-error").textContent = state.error || "the evaluation failed";
          } else {
            window.setTimeout(poll, 300);
          }
        });
    };
    poll();
  }
});
