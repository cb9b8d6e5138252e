// Live updates: when the agent reports a change, refetch this page and swap
// the part that changed. No reloads, no frameworks.
(function () {
  "use strict";

  // Confirm destructive actions (inline handlers are blocked by the CSP).
  document.addEventListener("submit", function (ev) {
    var btn = ev.submitter || ev.target.querySelector("button[data-confirm]");
    var msg = btn && btn.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) ev.preventDefault();
  });

  var app = document.body.getAttribute("data-live-app");
  if (app === null || !window.EventSource || !window.fetch || !window.DOMParser) return;
  var indicator = document.getElementById("live");
  function mark(state, word) {
    if (!indicator) return;
    indicator.className = "live " + state;
    indicator.textContent = word;
  }

  var timer = null, busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (res) { return res.ok ? res.text() : null; })
      .then(function (html) {
        if (!html) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("live-root");
        var current = document.getElementById("live-root");
        // Don't pull the page out from under someone typing.
        var active = document.activeElement;
        if (fresh && current && !(active && active.tagName === "INPUT" && current.contains(active))) {
          // Timelines refresh on their own (throttled): keep the ones shown.
          fresh.querySelectorAll("[data-timeline]").forEach(function (el) {
            var old = document.getElementById(el.id);
            if (old && old.getAttribute("data-timeline") === el.getAttribute("data-timeline")) el.replaceWith(old);
          });
          current.replaceWith(fresh);
        }
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }

  var es = new EventSource("/events");
  // Events sent while the page loaded, or while the stream reconnected,
  // are not replayed: refetch whenever the stream (re)opens.
  es.onopen = function () { mark("on", "live"); refresh(); };
  es.onerror = function () { mark("off", "reconnecting…"); };
  es.addEventListener("status", function (ev) {
    var data;
    try { data = JSON.parse(ev.data); } catch (e) { return; }
    if (app !== "" && data.app !== app) return;
    timelines(data.app);
    // Coalesce bursts (a pass emits several events) into one refetch.
    clearTimeout(timer);
    timer = setTimeout(refresh, 300);
  });

  // Timelines: re-fetch an app's SVG when it changes, at most once every
  // 5 s, and every minute anyway (the axis moves with the clock).
  var last = {}, pending = {};
  function timelines(which) {
    document.querySelectorAll("[data-timeline]").forEach(function (el) {
      var name = el.getAttribute("data-app");
      if (which && name !== which) return;
      if (pending[name]) return;
      var wait = Math.max(0, (last[name] || 0) + 5000 - Date.now());
      pending[name] = setTimeout(function () {
        last[name] = Date.now();
        var box = document.getElementById(el.id) || el;
        fetch(box.getAttribute("data-timeline"), { credentials: "same-origin" })
          .then(function (res) { return res.ok ? res.text() : null; })
          .then(function (svg) { if (svg) (document.getElementById(el.id) || box).innerHTML = svg; })
          .catch(function () {})
          .then(function () { delete pending[name]; });
      }, wait);
    });
  }
  setInterval(function () { timelines(""); }, 60000);
})();

// Container logs: follow the stream (the last lines, then new ones) over
// server-sent events, appending lines as text, never as HTML.
(function () {
  "use strict";
  var pre = document.getElementById("logs");
  if (!pre || !window.EventSource) return;
  var url = pre.getAttribute("data-follow");
  var state = document.getElementById("logstate");
  function mark(cls, word) { if (state) { state.className = "live " + cls; state.textContent = word; } }
  var es = new EventSource(url);
  var fresh = true;
  es.onopen = function () { mark("on", "following"); };
  es.onerror = function () { mark("off", "reconnecting…"); fresh = true; };
  es.addEventListener("line", function (ev) {
    var l;
    try { l = JSON.parse(ev.data); } catch (e) { return; }
    // The stream starts with the same tail the page shows: replace it.
    if (fresh) { pre.textContent = ""; fresh = false; }
    var span = document.createElement("span");
    span.className = "l-" + l.stream;
    span.textContent = l.text;
    var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.appendChild(span);
    pre.appendChild(document.createTextNode("\n"));
    if (atEnd) pre.scrollTop = pre.scrollHeight;
  });
  es.addEventListener("end", function (ev) {
    es.close();
    var why = "stream ended";
    try { why = JSON.parse(ev.data).reason; } catch (e) {}
    mark("off", why);
  });
})();
