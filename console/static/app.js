// The admin panel's script: live message lists and small comforts. The
// pages work without it; every action is a plain form.
(function () {
  'use strict';

  var body = document.body;
  var pollMs = parseInt(body.getAttribute('data-poll-ms'), 10) || 2000;

  // A live region (the messages of a channel) shows the server-rendered
  // fragment at its data-live address. The fragment comes from this origin
  // and was escaped by the server's templates; it replaces the region only
  // when it changed, and keeps the keyboard focus on the same button.
  //
  // With a data-events address (the server has the event stream) the
  // region is refreshed when an event of the channel arrives; otherwise it
  // is refreshed every data-poll-ms. #live-state says which, and whether
  // the stream is connected.
  function live(region) {
    var url = region.getAttribute('data-live') + window.location.search;
    var state = document.getElementById('live-state');
    var last = null;
    var busy = false;
    var again = false;

    function show(key, text) {
      region.setAttribute('data-state', key);
      if (state) {
        state.setAttribute('data-state', key);
        state.textContent = text;
      }
    }

    function apply(html) {
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
        var b = region.querySelector('form[action="' + CSS.escape(focusKey) + '"] button');
        if (b) {
          b.focus();
        }
      }
      region.setAttribute('data-updated', String(Date.now()));
    }

    // refresh fetches the fragment; a refresh asked for while one is on
    // its way runs again when it ends, so no event is missed.
    function refresh() {
      if (busy) {
        again = true;
        return;
      }
      busy = true;
      again = false;
      fetch(url, { credentials: 'same-origin', headers: { 'X-Requested-With': 'fetch' } })
        .then(function (res) {
          if (res.status === 401) {
            window.location.reload();
            return null;
          }
          return res.ok ? res.text() : null;
        })
        .then(apply)
        .catch(function () { /* the next event or tick tries again */ })
        .then(function () {
          busy = false;
          if (again) {
            refresh();
          }
        });
    }

    function listen(src) {
      region.setAttribute('data-mode', 'stream');
      var retries = 0;
      function connect() {
        show('connecting', 'connecting…');
        var es = new EventSource(src);
        es.onopen = function () {
          retries = 0;
          show('live', 'live');
        };
        es.onmessage = function (e) {
          var f;
          try {
            f = JSON.parse(e.data);
          } catch (err) {
            return;
          }
          // A stream that did not resume may have missed events: read the
          // messages again. Any other event may change what is shown.
          if (f.event === 'stream.didConnect' && f.data && f.data.resumed) {
            return;
          }
          // Members coming and going change no message.
          if (f.event === 'user.didChangePresence') {
            return;
          }
          refresh();
        };
        es.onerror = function () {
          show('reconnecting', 'reconnecting…');
          if (es.readyState !== EventSource.CLOSED) {
            return; // the browser reconnects with Last-Event-ID itself
          }
          // Refused: signed out (the fragment's 401 reloads the page, which
          // goes to the sign-in page) or the server is away. Try again later.
          refresh();
          var wait = Math.min(30000, 1000 * Math.pow(2, retries));
          retries++;
          window.setTimeout(connect, wait);
        };
      }
      connect();
    }

    region.scrollTop = region.scrollHeight;
    var events = region.getAttribute('data-events');
    if (events && window.EventSource) {
      listen(events);
      return;
    }
    region.setAttribute('data-mode', 'poll');
    show('polling', 'refreshed every ' + Math.round(pollMs / 1000) + ' s');
    window.setInterval(function () {
      if (!busy && !document.hidden) {
        refresh();
      }
    }, pollMs);
    refresh();
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
