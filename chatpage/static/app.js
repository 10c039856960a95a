// The chat page: a client of the HTTP API acting as one end user.
//
// Layout of this file:
//   api      - requests to the API with the user's token
//   session  - who is signed in (kept in sessionStorage, one per tab)
//   store    - what the page knows: channels, unread counts, messages
//   view     - DOM rendering; every user-provided string goes through
//              textContent or an attribute, never through markup
//   updates  - where news comes from: a poller today; an event stream can
//              replace it by offering the same start/stop/refresh methods
//   actions  - what the person does (sign in, create, join, send, ...)
'use strict';

(function () {
  const body = document.body;
  const API = body.dataset.api || '/api/v2';
  const DEV_SIGN_IN = body.dataset.devSignIn === 'true';
  const POLL_MS = Number(body.dataset.pollMs) || 2000;
  const PAGE = 50; // messages shown when a channel opens
  const $ = (id) => document.getElementById(id);

  // ---- api ----------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function request(path, init) {
    let res;
    try {
      res = await fetch(path, init);
    } catch (e) {
      throw new ApiError(0, 0, 'the server cannot be reached');
    }
    const text = await res.text();
    let data = {};
    if (text) {
      try {
        data = JSON.parse(text);
      } catch (e) {
        throw new ApiError(res.status, 0, 'unexpected answer from the server (HTTP ' + res.status + ')');
      }
    }
    if (!res.ok) {
      throw new ApiError(res.status, data.code || 0, data.message || 'HTTP ' + res.status);
    }
    return data;
  }

  function api(method, path, payload) {
    const init = { method: method, headers: { Authorization: 'Bearer ' + session.token } };
    if (payload !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(payload);
    }
    return request(API + path, init);
  }

  function upload(path, form) {
    return request(API + path, {
      method: 'POST',
      headers: { Authorization: 'Bearer ' + session.token },
      body: form,
    });
  }

  const seg = encodeURIComponent;

  // ---- session ------------------------------------------------------------

  const session = { token: '', userId: '' };
  const SESSION_KEY = 'chat.session';

  // userIdOfToken reads the user id claim of a JWT for display and for
  // telling one's own messages apart; the server verifies the token.
  function userIdOfToken(token) {
    const parts = token.split('.');
    if (parts.length !== 3) {
      return '';
    }
    try {
      const b64 = parts[1].replace(/-/g, '+').replace(/_/g, '/');
      const json = new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
      const claims = JSON.parse(json);
      return String(claims.user_id || claims.sub || '');
    } catch (e) {
      return '';
    }
  }

  function saveSession() {
    sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
  }

  function loadSession() {
    try {
      const s = JSON.parse(sessionStorage.getItem(SESSION_KEY) || 'null');
      if (s && typeof s.token === 'string' && s.token && typeof s.userId === 'string') {
        session.token = s.token;
        session.userId = s.userId;
        return true;
      }
    } catch (e) {
      // A damaged entry is treated as signed out.
    }
    return false;
  }

  // ---- store --------------------------------------------------------------

  const store = {
    mine: [], // channels the user is a member of, newest first
    others: [], // open channels the user may join
    unread: new Map(), // channelId -> unread count
    users: new Map(), // userId -> user
    open: null, // the open channel's id
    messages: [], // the open channel's messages, ascending segment
    lastSegment: 0,
  };

  function rememberUsers(users) {
    for (const u of users || []) {
      store.users.set(u.userId, u);
    }
  }

  function displayNameOf(userId) {
    const u = store.users.get(userId);
    return (u && u.displayName) || userId;
  }

  function channelName(c) {
    return c.displayName || c.channelId;
  }

  // ---- view ---------------------------------------------------------------

  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) {
      e.className = className;
    }
    if (text !== undefined) {
      e.textContent = text;
    }
    return e;
  }

  let statusTimer = 0;
  function showStatus(text, isError) {
    const s = $('status');
    s.textContent = text;
    s.classList.toggle('error', !!isError);
    s.hidden = false;
    clearTimeout(statusTimer);
    if (!isError) {
      statusTimer = setTimeout(() => { s.hidden = true; }, 4000);
    }
  }

  function clearStatus() {
    $('status').hidden = true;
  }

  function renderSignedIn() {
    const signedIn = !!session.token;
    $('signin').hidden = signedIn;
    $('app').hidden = !signedIn;
    $('whoami').hidden = !signedIn;
    $('dev-signin').hidden = !DEV_SIGN_IN;
    $('me').textContent = session.userId;
  }

  function renderChannels() {
    const mine = $('my-channels');
    mine.replaceChildren();
    for (const c of store.mine) {
      const li = el('li');
      li.dataset.channelId = c.channelId;
      li.classList.toggle('active', c.channelId === store.open);
      const open = el('button', 'link name', channelName(c));
      open.type = 'button';
      open.title = c.channelId;
      open.addEventListener('click', () => openChannel(c.channelId));
      li.append(open);
      const n = store.unread.get(c.channelId) || 0;
      if (n > 0 && c.channelId !== store.open) {
        const badge = el('span', 'unread', String(n));
        badge.title = n + ' unread';
        li.append(badge);
      }
      mine.append(li);
    }
    $('no-channels').hidden = store.mine.length > 0;

    const others = $('public-channels');
    others.replaceChildren();
    for (const c of store.others) {
      const li = el('li');
      li.dataset.channelId = c.channelId;
      const name = el('span', 'name', channelName(c));
      name.title = c.channelId;
      const join = el('button', 'join', 'Join');
      join.type = 'button';
      join.addEventListener('click', () => joinChannel(c.channelId));
      li.append(name, join);
      others.append(li);
    }
    $('no-public').hidden = store.others.length > 0;

    const current = store.mine.find((c) => c.channelId === store.open);
    $('channel-title').textContent = current ? channelName(current) : 'Pick a channel';
    $('composer').hidden = !current;
    $('leave').hidden = !current;
  }

  function messageItem(m) {
    const li = el('li', 'message');
    li.dataset.messageId = m.messageId;
    li.dataset.segment = String(m.channelSegment);
    if (m.userId === session.userId) {
      li.classList.add('mine');
    }
    const meta = el('div', 'meta');
    meta.append(el('span', 'author', displayNameOf(m.userId)));
    const time = el('time', '', new Date(m.createdAt).toLocaleTimeString());
    time.dateTime = m.createdAt;
    meta.append(time);
    li.append(meta);

    const data = m.data || {};
    switch (m.type) {
      case 'text':
        li.append(el('div', 'text', String(data.text || '')));
        break;
      case 'image': {
        const urls = data.urls || {};
        const src = urls.medium || urls.large || urls.small || urls.full;
        if (src) {
          const img = el('img');
          img.alt = data.caption || data.fileName || 'image';
          img.src = src; // a signed link on this origin
          if (data.width && data.height) {
            img.width = Math.min(data.width, 600);
          }
          li.append(img);
        }
        if (data.caption) {
          li.append(el('div', 'text caption', String(data.caption)));
        }
        break;
      }
      case 'file': {
        const a = el('a', 'file', String(data.fileName || 'file'));
        if (data.url) {
          a.href = data.url;
          a.download = String(data.fileName || '');
        }
        li.append(a);
        break;
      }
      default:
        li.append(el('div', 'text custom', '(' + String(m.type) + ' message)'));
    }
    return li;
  }

  function renderMessages(fresh, replace) {
    const list = $('messages');
    const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
    if (replace) {
      list.replaceChildren();
    }
    for (const m of fresh) {
      list.append(messageItem(m));
    }
    if (replace || nearBottom) {
      list.scrollTop = list.scrollHeight;
    }
  }

  // ---- data loading -------------------------------------------------------

  async function loadChannels() {
    const token = session.token;
    const [mine, others] = await Promise.all([
      api('POST', '/channels', { filter: 'member', options: { limit: 100 } }),
      api('POST', '/channels', { filter: 'notMember', options: { limit: 50 } }),
    ]);
    if (session.token !== token) {
      return; // signed out meanwhile
    }
    store.mine = mine.channels || [];
    store.others = others.channels || [];
    rememberUsers(mine.users);
    store.unread.clear();
    for (const cu of mine.channelUsers || []) {
      if (cu.userId === session.userId) {
        store.unread.set(cu.channelId, cu.unreadCount || 0);
      }
    }
    if (store.open && !store.mine.some((c) => c.channelId === store.open)) {
      closeChannel(); // left, removed or banned
    }
    renderChannels();
  }

  // loadMessages fetches the open channel's messages after the last one
  // shown (or the newest page when it opens) and marks them read when some
  // came from others.
  async function loadMessages(replace) {
    const channelId = store.open;
    if (!channelId) {
      return;
    }
    const options = replace ? { last: PAGE } : { after: store.lastSegment, first: 100 };
    const token = session.token;
    const res = await api('POST', '/messages', { channelId: channelId, options: options });
    if (store.open !== channelId || session.token !== token) {
      return; // another channel opened meanwhile
    }
    rememberUsers(res.users);
    let fresh = res.messages || [];
    if (!replace) {
      fresh = fresh.filter((m) => m.channelSegment > store.lastSegment);
    }
    if (replace) {
      store.messages = fresh;
    } else {
      store.messages.push(...fresh);
    }
    for (const m of fresh) {
      store.lastSegment = Math.max(store.lastSegment, m.channelSegment);
    }
    renderMessages(fresh, replace);
    if (replace || fresh.some((m) => m.userId !== session.userId)) {
      await markRead(channelId);
    }
  }

  async function markRead(channelId) {
    await api('POST', '/channel/' + seg(channelId) + '/read', {});
    store.unread.set(channelId, 0);
    renderChannels();
  }

  // ---- updates ------------------------------------------------------------

  // pollingSource calls refresh now and then every intervalMs after the
  // previous call finished. A refresh asked for while one runs runs again
  // right after it, so news made by an action is never missed. An event
  // stream can take its place: it needs the same start, stop and refresh
  // methods.
  function pollingSource(refresh, intervalMs) {
    let timer = 0;
    let running = false;
    let current = null;
    let again = false;
    function schedule() {
      clearTimeout(timer);
      if (running) {
        timer = setTimeout(run, intervalMs);
      }
    }
    function run() {
      clearTimeout(timer);
      if (!running) {
        return Promise.resolve();
      }
      if (current) {
        again = true;
        return current;
      }
      current = (async () => {
        try {
          do {
            again = false;
            await refresh();
          } while (again && running);
        } finally {
          current = null;
          schedule();
        }
      })();
      return current;
    }
    return {
      start() {
        running = true;
        return run();
      },
      stop() {
        running = false;
        clearTimeout(timer);
      },
      // refresh asks for news now, after an action of the person.
      refresh: run,
    };
  }

  async function refreshAll() {
    try {
      await loadChannels();
      await loadMessages(false);
      if ($('status').classList.contains('error') && lastErrorWasNetwork) {
        clearStatus();
      }
      lastErrorWasNetwork = false;
    } catch (e) {
      handleError(e);
    }
  }

  let lastErrorWasNetwork = false;
  const updates = pollingSource(refreshAll, POLL_MS);

  // ---- actions ------------------------------------------------------------

  function handleError(e) {
    if (!(e instanceof ApiError)) {
      throw e;
    }
    if (e.status === 401) {
      signOut();
      showStatus('Your sign-in is no longer accepted: ' + e.message, true);
      return;
    }
    if (e.code === 400312) {
      signOut();
      showStatus('This user is banned: ' + e.message, true);
      return;
    }
    lastErrorWasNetwork = e.status === 0;
    showStatus(e.message, true);
  }

  // act runs an action of the person, showing its failure.
  function act(fn) {
    return async function (ev) {
      if (ev) {
        ev.preventDefault();
      }
      try {
        await fn(ev);
      } catch (e) {
        handleError(e);
      }
    };
  }

  function signIn(token, userId) {
    session.token = token;
    session.userId = userId;
    saveSession();
    clearStatus();
    renderSignedIn();
    updates.start();
  }

  function signOut() {
    updates.stop();
    sessionStorage.removeItem(SESSION_KEY);
    session.token = '';
    session.userId = '';
    store.mine = [];
    store.others = [];
    store.unread.clear();
    closeChannel();
    renderChannels();
    renderSignedIn();
  }

  function closeChannel() {
    store.open = null;
    store.messages = [];
    store.lastSegment = 0;
    $('messages').replaceChildren();
  }

  async function openChannel(channelId) {
    if (store.open === channelId) {
      return;
    }
    closeChannel();
    store.open = channelId;
    renderChannels();
    try {
      await loadMessages(true);
    } catch (e) {
      handleError(e);
    }
  }

  async function joinChannel(channelId) {
    try {
      await api('POST', '/channel/' + seg(channelId) + '/join', {});
      showStatus('Joined ' + channelId + '.');
      await updates.refresh();
    } catch (e) {
      handleError(e);
    }
  }

  $('dev-signin-form').addEventListener('submit', act(async () => {
    const userId = $('dev-user').value.trim();
    const res = await request('dev-token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ userId: userId }),
    });
    $('dev-user').value = '';
    signIn(res.token, res.userId);
  }));

  $('token-signin-form').addEventListener('submit', act(async () => {
    const token = $('token-input').value.trim();
    const userId = userIdOfToken(token);
    if (!userId) {
      showStatus('That is not a user token (a JWT with a user_id claim).', true);
      return;
    }
    $('token-input').value = '';
    signIn(token, userId);
  }));

  $('sign-out').addEventListener('click', () => {
    signOut();
    showStatus('Signed out.');
  });

  $('create-form').addEventListener('submit', act(async () => {
    const channelId = $('create-id').value.trim();
    const payload = { channelId: channelId, type: 'standard' };
    const displayName = $('create-name').value.trim();
    if (displayName) {
      payload.displayName = displayName;
    }
    await api('POST', '/channel', payload);
    $('create-id').value = '';
    $('create-name').value = '';
    await updates.refresh();
    await openChannel(channelId);
  }));

  $('send-form').addEventListener('submit', act(async () => {
    const input = $('send-text');
    const text = input.value;
    if (!text.trim() || !store.open) {
      return;
    }
    await api('POST', '/message', { channelId: store.open, type: 'text', data: { text: text } });
    input.value = '';
    await updates.refresh();
  }));

  $('image-file').addEventListener('change', act(async () => {
    const input = $('image-file');
    const file = input.files && input.files[0];
    if (!file || !store.open) {
      return;
    }
    const form = new FormData();
    form.append('channelId', store.open);
    form.append('file', file, file.name);
    showStatus('Uploading ' + file.name + '...');
    await upload('/messages/images', form);
    input.value = '';
    showStatus('Sent ' + file.name + '.');
    await updates.refresh();
  }));

  $('leave').addEventListener('click', act(async () => {
    const channelId = store.open;
    if (!channelId) {
      return;
    }
    await api('POST', '/channel/' + seg(channelId) + '/leave', {});
    closeChannel();
    showStatus('Left ' + channelId + '.');
    await updates.refresh();
  }));

  // ---- start --------------------------------------------------------------

  renderSignedIn();
  if (loadSession()) {
    renderSignedIn();
    updates.start();
  }
})();
