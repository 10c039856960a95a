// The admin panel's script: live message lists and small comforts. The
// pages work without it; every action is a plain form.
(function () {
  'use strict';

  var body = document.body;
  var pollMs = parseInt(body.getAttribute('data-poll-ms'), 10) || 2000;

  // Refresh a live region (the messages of a channel) by fetching the
  // server-rendered fragment. The fragment comes from this origin and was
  // escaped by the server's templates; it replaces the region only when it
  // changed, and keeps the keyboard focus on the same button.
  function live(region) {
    var url = region.getAttribute('data-live') + window.location.search;
    var last = null;
    var busy = false;
    function tick() {
      if (busy || document.hidden) {
        return;
      }
      busy = true;
      fetch(url, { credentials: 'same-origin', headers: { 'X-Requested-With': 'fetch' } })
        .then(function (res) {
          if (res.status === 401) {
            window.location.reload();
            return null;
          }
          return res.ok ? res.text() : null;
        })
        .then(function (html) {
          if (html === null || html === last) {
            return;
          }
          last = html;
          var focused = document.activeElement;
          var focusKey = null;
          if (focused && region.contains(focused)) {
            var form = focused.closest('form');
            focusKey = form ? form.getAttribute('action') : null;
          }
          var atBottom = region.scrollTop + region.clientHeight >= region.scrollHeight - 8;
          region.innerHTML = html;
          if (atBottom) {
            region.scrollTop = region.scrollHeight;
          }
          if (focusKey) {
            var again = region.querySelector('form[action="' + CSS.escape(focusKey) + '"] button');
            if (again) {
              again.focus();
            }
          }
          region.setAttribute('data-updated', String(Date.now()));
        })
        .catch(function () { /* the next tick tries again */ })
        .then(function () { busy = false; });
    }
    region.scrollTop = region.scrollHeight;
    window.setInterval(tick, pollMs);
    tick();
  }

  // Select the whole value of a one-time secret when it gets focus, so it
  // is easy to copy.
  function copyable(input) {
    input.addEventListener('focus', function () { input.select(); });
  }

  document.addEventListener('DOMContentLoaded', function () {
    Array.prototype.forEach.call(document.querySelectorAll('[data-live]'), live);
    Array.prototype.forEach.call(document.querySelectorAll('input.copy'), copyable);
    // Show a pending state on the button of a submitted form.
    document.addEventListener('submit', function (e) {
      var b = e.target.querySelector('button[type="submit"]');
      if (b) {
        b.setAttribute('aria-busy', 'true');
      }
    });
    var first = document.querySelector('.secret input.copy');
    if (first) {
      first.focus();
    }
  });
})();
