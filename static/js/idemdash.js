// idemdash: the little behaviour htmx attributes cannot express. No inline
// script anywhere (the Content-Security-Policy forbids it).
(function () {
  "use strict";
  // Polling panels ([data-poll]) skip their refresh while the tab is hidden,
  // and refresh at once when it becomes visible again.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    if (document.hidden && elt && elt.hasAttribute && elt.hasAttribute("data-poll")) {
      event.preventDefault();
    }
  });
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && window.htmx) {
      document.querySelectorAll("[data-poll]").forEach(function (elt) {
        window.htmx.trigger(elt, "refresh");
      });
    }
  });
})();
