// idemdash: the little behaviour htmx attributes cannot express. No inline
// script anywhere (the Content-Security-Policy forbids it).
(function () {
  "use strict";
  var STORAGE = "idemdash.live";

  function live() {
    var toggle = document.getElementById("live-toggle");
    return !toggle || toggle.checked;
  }

  // Polling panels ([data-poll]) skip their refresh while the tab is hidden
  // or Live is switched off, and refresh at once when either comes back.
  // A timed refresh also waits while something in the panel is expanded
  // (a bulk action's keys, a payload): replacing it would fold it up again.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    if (!elt || !elt.hasAttribute || !elt.hasAttribute("data-poll")) return;
    var timed = !event.detail.requestConfig || !event.detail.requestConfig.triggeringEvent;
    if (document.hidden || !live() || (timed && elt.querySelector("details[open]"))) {
      event.preventDefault();
    }
  });

  function refreshAll() {
    if (!window.htmx || document.hidden || !live()) return;
    document.querySelectorAll("[data-poll]").forEach(function (elt) {
      window.htmx.trigger(elt, "refresh");
    });
  }
  document.addEventListener("visibilitychange", refreshAll);

  document.addEventListener("DOMContentLoaded", function () {
    var toggle = document.getElementById("live-toggle");
    if (!toggle) return;
    toggle.checked = window.localStorage.getItem(STORAGE) !== "off";
    document.body.classList.toggle("paused", !toggle.checked);
    toggle.addEventListener("change", function () {
      window.localStorage.setItem(STORAGE, toggle.checked ? "on" : "off");
      document.body.classList.toggle("paused", !toggle.checked);
      refreshAll();
    });
  });

  // A refresh or action that failed with a server error keeps what is on the page and says so
  // in the banner; the next successful refresh clears it.
  function banner(text) {
    var el = document.getElementById("status-banner");
    if (!el) return;
    el.textContent = text || "";
    el.hidden = !text;
  }
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    if (xhr && xhr.status >= 500) {
      var message = "The last refresh failed (" + xhr.status + ")";
      if (xhr.status === 503) message += ": the database is unreachable or too slow; showing the last data and retrying";
      banner(message + ".");
    }
  });
  document.addEventListener("htmx:sendError", function () {
    banner("idemdash itself is unreachable; showing the last data and retrying.");
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail.successful) banner("");
  });

  // "/" focuses the page's filter, as in most dashboards.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
    var filter = document.querySelector("[data-filter-focus]");
    if (filter) {
      event.preventDefault();
      filter.focus();
      if (filter.select) filter.select();
    }
  });
})();
