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

  // Enter in a filter field fires change, then submit: the same query twice, the second queued behind the first
  // (htmx's default for a form). The same query from the same form within a second of the last is not sent again,
  // so the list is swapped once (swapped twice, a tab clicked between the swaps was replaced before its answer came,
  // and htmx dropped that answer). A different query goes, and so does the same one asked again later.
  var lastSent = new WeakMap();
  document.addEventListener("htmx:beforeRequest", function (event) {
    var form = event.detail.elt;
    if (!(form instanceof HTMLFormElement) || !form.hasAttribute("hx-get")) return;
    var query = new URLSearchParams(new FormData(form)).toString();
    var last = lastSent.get(form);
    if (last && last.query === query && Date.now() - last.at < 1000) {
      event.preventDefault();
      return;
    }
    lastSent.set(form, { query: query, at: Date.now() });
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

  // A refresh that failed with a server error keeps what is on the page and says so in the banner; the next
  // successful refresh clears it. An action (a POST) that failed keeps its form as it was, with what was typed
  // in it, and the banner offers to send it again: nothing typed is lost to an outage.
  var failedForm = null;

  function banner(text, resendable) {
    var el = document.getElementById("status-banner");
    if (!el) return;
    var words = el.querySelector("[data-banner-text]");
    var resend = el.querySelector("[data-banner-resend]");
    if (words) words.textContent = text || "";
    if (resend) resend.hidden = !resendable;
    el.hidden = !text;
  }

  function isAction(event) {
    var config = event.detail.requestConfig;
    return !!config && config.verb && config.verb.toLowerCase() !== "get";
  }

  function actionFailed(event, why) {
    var elt = event.detail.elt;
    failedForm = elt && elt.closest ? (elt.tagName === "FORM" ? elt : elt.closest("form")) : null;
    banner("Not sent: " + why + " What you typed is still in the form; send it again when idemdash answers.",
           !!failedForm);
  }

  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    if (!xhr || xhr.status < 500) return;
    if (isAction(event)) {
      actionFailed(event, xhr.status === 503 ? "the database is unreachable or too slow (503)."
                                             : "idemdash answered with an error (" + xhr.status + ").");
      return;
    }
    var message = "The last refresh failed (" + xhr.status + ")";
    if (xhr.status === 503) message += ": the database is unreachable or too slow; showing the last data and retrying";
    banner(message + ".", false);
  });
  document.addEventListener("htmx:sendError", function (event) {
    if (isAction(event)) {
      actionFailed(event, "idemdash itself is unreachable.");
      return;
    }
    banner("idemdash itself is unreachable; showing the last data and retrying.", false);
  });
  document.addEventListener("htmx:timeout", function (event) {
    if (isAction(event)) actionFailed(event, "idemdash did not answer in time.");
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail.successful && (isAction(event) || !failedForm)) {
      failedForm = null;
      banner("", false);
    }
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-banner-resend]") : null;
    if (!button || !failedForm) return;
    if (failedForm.requestSubmit) failedForm.requestSubmit(); else failedForm.submit();
  });

  // -- times: relative ones keep ticking; absolute ones in UTC or local time (the header's toggle) ----------
  var TZ = "idemdash.tz";

  function localTime() {
    try { return window.localStorage.getItem(TZ) === "local"; } catch (e) { return false; }
  }

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  // the same words as core/formatting.py's duration(): 45 s, 3 min 20 s, 2 h 5 min, 3 d 4 h
  function duration(seconds) {
    var total = Math.floor(Math.abs(seconds));
    var days = Math.floor(total / 86400), hours = Math.floor(total % 86400 / 3600);
    var minutes = Math.floor(total % 3600 / 60), secs = total % 60;
    if (days) return days + " d" + (hours ? " " + hours + " h" : "");
    if (hours) return hours + " h" + (minutes ? " " + minutes + " min" : "");
    if (minutes) return minutes + " min" + (secs ? " " + secs + " s" : "");
    return secs + " s";
  }

  function relative(date) {
    var delta = (Date.now() - date.getTime()) / 1000;
    return delta < 0 ? "in " + duration(-delta) : duration(delta) + " ago";
  }

  var MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

  function zoneName(date) {
    try {
      var parts = new Intl.DateTimeFormat(undefined, {timeZoneName: "short"}).formatToParts(date);
      for (var i = 0; i < parts.length; i++) if (parts[i].type === "timeZoneName") return parts[i].value;
    } catch (e) { /* an old browser: the offset below */ }
    var offset = -date.getTimezoneOffset();
    return "UTC" + (offset < 0 ? "-" : "+") + pad(Math.floor(Math.abs(offset) / 60)) + ":" + pad(Math.abs(offset) % 60);
  }

  function absolute(date, form, local) {
    var y = local ? date.getFullYear() : date.getUTCFullYear();
    var mo = local ? date.getMonth() : date.getUTCMonth();
    var d = local ? date.getDate() : date.getUTCDate();
    var h = local ? date.getHours() : date.getUTCHours();
    var mi = local ? date.getMinutes() : date.getUTCMinutes();
    var s = local ? date.getSeconds() : date.getUTCSeconds();
    var zone = local ? zoneName(date) : "UTC";
    if (form === "time") return pad(h) + ":" + pad(mi) + ":" + pad(s) + " " + zone;
    if (form === "short") return MONTHS[mo] + " " + pad(d) + " " + pad(h) + ":" + pad(mi) + " " + zone;
    return y + "-" + pad(mo + 1) + "-" + pad(d) + " " + pad(h) + ":" + pad(mi) + ":" + pad(s) + " " + zone;
  }

  function renderTimes(root) {
    var local = localTime();
    (root || document).querySelectorAll("time[data-rel], time[data-abs]").forEach(function (el) {
      var date = new Date(el.getAttribute("datetime"));
      if (isNaN(date.getTime())) return;
      if (el.hasAttribute("data-rel")) {
        el.textContent = relative(date);
        el.title = absolute(date, "", local);
      } else {
        el.textContent = absolute(date, el.getAttribute("data-abs"), local);
        el.title = relative(date);
      }
    });
    var toggle = document.getElementById("tz-toggle");
    if (toggle) {
      toggle.textContent = local ? "Local time" : "UTC";
      toggle.setAttribute("aria-pressed", local ? "true" : "false");
      toggle.title = "Times are shown in " + (local ? "this browser's time zone" : "UTC") +
        ": select (or press t) for " + (local ? "UTC" : "local time") + ". Remembered in this browser.";
    }
  }

  function toggleZone() {
    try { window.localStorage.setItem(TZ, localTime() ? "utc" : "local"); } catch (e) { return; }
    renderTimes();
  }

  // -- "Use this": fill a form field from an offered value (the key page's response_bodies to start from) -------
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-fill]") : null;
    if (!button) return;
    var field = document.getElementById(button.getAttribute("data-fill"));
    if (!field) return;
    try { field.value = JSON.stringify(JSON.parse(button.getAttribute("data-value")), null, 2); }
    catch (e) { field.value = button.getAttribute("data-value"); }
    field.focus();
  });

  // -- the key page's form: choosing an outcome opens its own fields and folds the other outcome's away --------
  document.addEventListener("change", function (event) {
    var radio = event.target;
    if (radio.name !== "to" || !radio.form || !radio.form.classList.contains("reclassify")) return;
    radio.form.querySelectorAll("details[data-for]").forEach(function (details) {
      details.open = details.getAttribute("data-for") === radio.value;
    });
  });

  // -- copy buttons: keys, SQL and JSON -------------------------------------------------------------------
  function copyText(text, button) {
    function done(ok) {
      var label = button.textContent;
      button.textContent = ok ? "Copied" : "Select and copy";
      window.setTimeout(function () { button.textContent = label; }, 1500);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(false); });
      return;
    }
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "copy-buffer";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(area);
    done(ok);
  }

  function addCopyButtons(root) {
    (root || document).querySelectorAll("pre.sql, pre.json").forEach(function (pre) {
      if (pre.hasAttribute("data-copy-ready")) return;
      pre.setAttribute("data-copy-ready", "");
      // the button sits in the block's top right corner: block and button share a positioned box
      var box = document.createElement("div");
      box.className = "copy-box";
      pre.parentNode.insertBefore(box, pre);
      box.appendChild(pre);
      var button = document.createElement("button");
      button.type = "button";
      button.className = "copy copy-pre";
      button.textContent = "Copy";
      button.setAttribute("aria-label", "Copy " + (pre.classList.contains("sql") ? "the SQL" : "the JSON"));
      box.appendChild(button);
    });
    (root || document).querySelectorAll("button.copy[hidden]").forEach(function (b) { b.hidden = false; });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button.copy");
    if (!button) return;
    var text = button.getAttribute("data-copy");
    if (text === null) {
      var pre = button.parentNode.querySelector("pre");
      text = pre ? pre.textContent : "";
    }
    copyText(text, button);
  });

  // -- a table wider than the screen scrolls in its own box (the stylesheet, on phones): reachable by keyboard ----
  function markScrollingTables(root) {
    (root && root.querySelectorAll ? root : document).querySelectorAll("table.data").forEach(function (table) {
      var scrolls = table.scrollWidth > table.clientWidth + 1;
      if (scrolls && !table.hasAttribute("tabindex")) {
        table.setAttribute("tabindex", "0");
        table.setAttribute("data-scrolls", "");
      } else if (!scrolls && table.hasAttribute("data-scrolls")) {
        table.removeAttribute("tabindex");
        table.removeAttribute("data-scrolls");
      }
    });
  }
  var resizing = 0;
  window.addEventListener("resize", function () {
    window.clearTimeout(resizing);
    resizing = window.setTimeout(function () { markScrollingTables(); }, 100);
  });

  // -- keyboard: / search, f filter, ? help, g <key> go, j/k rows, t time zone ----------------------------------
  var pendingGo = 0;

  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }

  function focusField(field) {
    if (!field) return false;
    var box = field.closest("details");
    if (box) box.open = true;  // a filter form folded away on a phone opens for "f"
    field.focus();
    if (field.select) field.select();
    return true;
  }

  function rows() {
    return Array.prototype.filter.call(document.querySelectorAll("main table.data tbody tr"), function (tr) {
      return tr.querySelector("a[href]") && tr.offsetParent !== null;
    });
  }

  function moveRow(step) {
    var list = rows();
    if (!list.length) return;
    var current = document.querySelector("tr.row-current");
    var index = list.indexOf(current);
    index = index < 0 ? (step > 0 ? 0 : list.length - 1) : Math.min(list.length - 1, Math.max(0, index + step));
    if (current) current.classList.remove("row-current");
    var row = list[index];
    row.classList.add("row-current");
    var link = row.querySelector("a.key[href]") || row.querySelector("a[href]");
    link.focus();   // Enter opens it
    row.scrollIntoView({block: "nearest"});
  }

  function showShortcuts() {
    var dialog = document.getElementById("shortcuts");
    if (dialog && dialog.showModal && !dialog.open) dialog.showModal();
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    var dialog = document.getElementById("shortcuts");
    if (dialog && dialog.open) return;
    var key = event.key;
    if (pendingGo && Date.now() - pendingGo < 1500) {
      pendingGo = 0;
      var target = document.querySelector('header nav a[data-go="' + key + '"]');
      if (target) {
        event.preventDefault();
        window.location.assign(target.href);
      }
      return;
    }
    pendingGo = 0;
    if (key === "/") {
      if (focusField(document.getElementById("header-search"))) event.preventDefault();
    } else if (key === "f") {
      if (focusField(document.querySelector("main [data-filter-focus]"))) event.preventDefault();
    } else if (key === "?") {
      event.preventDefault();
      showShortcuts();
    } else if (key === "g") {
      pendingGo = Date.now();
    } else if (key === "j" || key === "k") {
      event.preventDefault();
      moveRow(key === "j" ? 1 : -1);
    } else if (key === "t") {
      toggleZone();
    }
  });

  // Escape leaves the search box or a filter, so the shortcuts work again
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && typing(event.target) && event.target.blur) event.target.blur();
  });

  document.addEventListener("DOMContentLoaded", function () {
    var zone = document.getElementById("tz-toggle");
    if (zone) {
      zone.hidden = false;
      zone.addEventListener("click", toggleZone);
    }
    var help = document.getElementById("shortcuts-button");
    if (help) {
      help.hidden = false;
      help.addEventListener("click", showShortcuts);
    }
    foldNarrow(document);
    renderTimes();
    addCopyButtons();
    markScrollingTables();
    window.setInterval(function () {
      if (!document.hidden) renderTimes();
    }, 10000);
  });

  // on a phone a filter form or a breakdown would fill the first screen: fold it to its summary (the filters in
  // force, where the keys are); one the operator opened or closed stays so when a refresh swaps it in again
  var chosenOpen = {};
  function foldNarrow(root) {
    var narrow = window.matchMedia && window.matchMedia("(max-width: 760px)").matches;
    var boxes = root.matches && root.matches("details[data-collapse-narrow]") ? [root] : [];
    root.querySelectorAll("details[data-collapse-narrow]").forEach(function (box) { boxes.push(box); });
    boxes.forEach(function (box) {
      if (box.id && Object.prototype.hasOwnProperty.call(chosenOpen, box.id)) box.open = chosenOpen[box.id];
      else if (narrow) box.open = false;
      if (box.dataset.foldWatched) return;
      box.dataset.foldWatched = "1";
      var summary = box.querySelector("summary");
      if (summary && box.id) summary.addEventListener("click", function () { chosenOpen[box.id] = !box.open; });
    });
  }

  // content htmx swapped in: the same treatment
  document.addEventListener("htmx:load", function (event) {
    foldNarrow(event.detail.elt);
    renderTimes(event.detail.elt);
    addCopyButtons(event.detail.elt);
    markScrollingTables(event.detail.elt);
  });
})();
