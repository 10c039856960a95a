// The chat page: a client of the HTTP API acting as one end user.
//
// Layout of this file:
//   api      - requests to the API with the user's token
//   session  - who is signed in (kept in sessionStorage, one per tab)
//   store    - what the page knows: channels, unread counts and mentions,
//              messages
//   view     - DOM rendering; every user-provided string goes through
//              textContent or an attribute, never through markup
//   live     - the event stream (GET /events over a WebSocket with a
//              ticket): new messages, typing, the person's own read
//              markers (moved in another tab) and channel changes as they
//              happen; reconnects with backoff and resumes after the last
//              event seen. The stream carries no read markers of others:
//              "Seen by" is read with GET /channel/{id}
//   actions  - what the person does (sign in, create, join, send, type...)
'use strict';

(function () {
  const body = document.body;
  const API = body.dataset.api || '/api/v2';
  const DEV_SIGN_IN = body.dataset.devSignIn === 'true';
  const PAGE = 50; // messages shown when a channel opens
  const TYPING_SEND_MS = 3000; // at most one typing call per 3 s of typing
  const TYPING_SHOW_MS = 6000; // "X is typing" goes after 6 s without news
  const RETRY_MIN_MS = 500; // first reconnection delay, doubled up to:
  const RETRY_MAX_MS = 10000;
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
    mentions: new Map(), // channelId -> unread messages that mention the person
    counted: new Map(), // channelId -> the highest segment the two counts above include
    countedWhileLoading: null, // messages counted from the stream while loadChannels reads the lists
    myReads: new Map(), // channelId -> the person's own readToSegment
    users: new Map(), // userId -> user
    open: null, // the open channel's id
    messages: [], // the open channel's messages, ascending segment
    lastSegment: 0, // the highest segment shown
    reads: new Map(), // open channel: other member's userId -> readToSegment
    typing: new Map(), // open channel: userId -> timer hiding "is typing"
    unseen: false, // the open channel shows news the person has not seen
    blocked: [], // the users the person blocks (blocks), oldest first
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

  function visible() {
    return document.visibilityState === 'visible';
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

  // showConnection shows the state of the event stream: "live" (hidden),
  // "connecting" (the first attempt, hidden), "reconnecting" or "closed".
  function showConnection(state, text) {
    const c = $('connection');
    c.dataset.state = state;
    c.textContent = text || '';
    c.hidden = state === 'live' || state === 'connecting';
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
    let total = 0; // unread messages of the channels not open
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
        total += n;
        const badge = el('span', 'unread', String(n));
        badge.title = n + ' unread';
        li.append(badge);
      }
      const k = store.mentions.get(c.channelId) || 0;
      if (k > 0 && c.channelId !== store.open) {
        const badge = el('span', 'mention-count', '@' + k);
        badge.title = k === 1 ? '1 unread mention' : k + ' unread mentions';
        li.append(badge);
      }
      mine.append(li);
    }
    $('no-channels').hidden = store.mine.length > 0;
    // The tab's title counts them too, for a person in another tab.
    document.title = total > 0 ? '(' + total + ') Chat' : 'Chat';

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

  // mentionsMe reports whether a message mentions the signed-in person.
  function mentionsMe(m) {
    return Array.isArray(m.mentionedUserIds) && m.mentionedUserIds.includes(session.userId);
  }

  function messageItem(m) {
    const li = el('li', 'message');
    li.dataset.messageId = m.messageId;
    li.dataset.segment = String(m.channelSegment);
    if (m.userId === session.userId) {
      li.classList.add('mine');
    }
    if (mentionsMe(m)) {
      li.classList.add('mentions-me');
      li.title = 'Mentions you';
    }
    const meta = el('div', 'meta');
    meta.append(el('span', 'author', displayNameOf(m.userId)));
    const time = el('time', '', new Date(m.createdAt).toLocaleTimeString());
    time.dateTime = m.createdAt;
    meta.append(time);
    if (m.userId !== session.userId) {
      // Blocking the author hides its messages, reactions and typing.
      const block = el('button', 'link block', 'Block');
      block.type = 'button';
      block.title = 'Stop seeing ' + displayNameOf(m.userId) + "'s messages";
      block.addEventListener('click', act(() => blockUser(m.userId)));
      meta.append(block);
    }
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

  // showMessages puts messages of the open channel in their place by
  // segment: a message already shown is replaced (edited), a deleted one
  // removed. It returns the messages of others that are new here.
  function showMessages(ms) {
    const list = $('messages');
    const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
    const fresh = [];
    for (const m of ms) {
      const at = store.messages.findIndex((x) => x.messageId === m.messageId);
      const old = list.querySelector('li[data-message-id="' + CSS.escape(m.messageId) + '"]');
      if (m.isDeleted) {
        if (at >= 0) {
          store.messages.splice(at, 1);
        }
        if (old) {
          old.remove();
        }
        continue;
      }
      const li = messageItem(m);
      if (at >= 0) {
        store.messages[at] = m;
        if (old) {
          old.replaceWith(li);
        }
        continue;
      }
      let i = store.messages.length;
      while (i > 0 && store.messages[i - 1].channelSegment > m.channelSegment) {
        i--;
      }
      store.messages.splice(i, 0, m);
      const next = store.messages[i + 1];
      const before = next && list.querySelector('li[data-message-id="' + CSS.escape(next.messageId) + '"]');
      list.insertBefore(li, before || null);
      store.lastSegment = Math.max(store.lastSegment, m.channelSegment);
      if (m.userId !== session.userId) {
        fresh.push(m);
      }
    }
    renderSeen();
    if (nearBottom) {
      list.scrollTop = list.scrollHeight;
    }
    return fresh;
  }

  // renderSeen shows, under the person's own latest message, which other
  // members have read it ("Seen by Bob, Carol"), as most chat apps do.
  function renderSeen() {
    for (const s of $('messages').querySelectorAll('.seen')) {
      s.remove();
    }
    let last = null;
    for (const m of store.messages) {
      if (m.userId === session.userId) {
        last = m;
      }
    }
    if (!last) {
      return;
    }
    const names = [];
    for (const [userId, segment] of store.reads) {
      if (userId !== session.userId && segment >= last.channelSegment) {
        names.push(displayNameOf(userId));
      }
    }
    const li = $('messages').querySelector('li[data-message-id="' + CSS.escape(last.messageId) + '"]');
    if (li && names.length > 0) {
      names.sort();
      li.append(el('div', 'seen', 'Seen by ' + names.join(', ')));
    }
  }

  function renderTyping() {
    const names = Array.from(store.typing.keys(), displayNameOf).sort();
    let text = '';
    if (names.length === 1) {
      text = names[0] + ' is typing…';
    } else if (names.length === 2) {
      text = names[0] + ' and ' + names[1] + ' are typing…';
    } else if (names.length > 2) {
      text = 'Several people are typing…';
    }
    $('typing').textContent = text;
  }

  function stopTyping(userId) {
    const timer = store.typing.get(userId);
    if (timer !== undefined) {
      clearTimeout(timer);
      store.typing.delete(userId);
      renderTyping();
    }
  }

  function clearTyping() {
    for (const timer of store.typing.values()) {
      clearTimeout(timer);
    }
    store.typing.clear();
    renderTyping();
  }

  // ---- data loading -------------------------------------------------------

  // serial makes an async function run one call at a time: a call made
  // while one runs runs once more right after it, so the latest state is
  // always read.
  function serial(fn) {
    let current = null;
    let again = false;
    return function () {
      if (current) {
        again = true;
        return current;
      }
      current = (async () => {
        try {
          do {
            again = false;
            await fn();
          } while (again);
        } finally {
          current = null;
        }
      })();
      return current;
    };
  }

  const loadChannels = serial(async () => {
    const token = session.token;
    if (!token) {
      return;
    }
    // The stream may bring messages while the lists are read: those the
    // lists' counts already include must not count twice, and those they
    // do not include (newer than a channel's messageCount in the answer)
    // must count on top of them.
    const whileLoading = [];
    store.countedWhileLoading = whileLoading;
    let mine, others;
    try {
      [mine, others] = await Promise.all([
        api('POST', '/channels', { filter: 'member', options: { limit: 100 } }),
        api('POST', '/channels', { filter: 'notMember', options: { limit: 50 } }),
      ]);
    } finally {
      if (store.countedWhileLoading === whileLoading) {
        store.countedWhileLoading = null;
      }
    }
    if (session.token !== token) {
      return; // signed out meanwhile
    }
    store.mine = mine.channels || [];
    store.others = others.channels || [];
    rememberUsers(mine.users);
    store.unread.clear();
    store.mentions.clear();
    store.myReads.clear();
    store.counted.clear();
    for (const c of store.mine) {
      store.counted.set(c.channelId, c.messageCount || 0);
    }
    for (const cu of mine.channelUsers || []) {
      if (cu.userId === session.userId) {
        setOwnRead(cu);
      }
    }
    for (const m of whileLoading) {
      countUnread(m);
    }
    const list = $('my-channels');
    list.dataset.loads = String(Number(list.dataset.loads || 0) + 1); // lists applied, for tests
    if (store.open && !store.mine.some((c) => c.channelId === store.open)) {
      const gone = store.open;
      closeChannel(); // left, removed, banned or closed
      showStatus('You are no longer a member of ' + gone + '.');
    }
    renderChannels();
  });

  // loadDirectory reads the channels the user may join (no event tells
  // about channels of others).
  const loadDirectory = serial(async () => {
    const token = session.token;
    if (!token) {
      return;
    }
    const others = await api('POST', '/channels', { filter: 'notMember', options: { limit: 50 } });
    if (session.token !== token) {
      return;
    }
    store.others = others.channels || [];
    renderChannels();
  });

  // loadMessages (re)reads the open channel's newest page. Messages that
  // the stream brought meanwhile, newer than that page, stay.
  async function loadMessages() {
    const channelId = store.open;
    if (!channelId) {
      return;
    }
    const token = session.token;
    const res = await api('POST', '/messages', { channelId: channelId, options: { last: PAGE } });
    if (store.open !== channelId || session.token !== token) {
      return; // another channel opened meanwhile
    }
    rememberUsers(res.users);
    const page = res.messages || [];
    const top = page.length > 0 ? page[page.length - 1].channelSegment : 0;
    const newer = store.messages.filter((m) => m.channelSegment > top);
    store.messages = [];
    store.lastSegment = 0;
    $('messages').replaceChildren();
    showMessages(page.concat(newer));
    $('messages').scrollTop = $('messages').scrollHeight;
    store.unseen = true;
    markReadIfSeen();
  }

  // setOwnRead records the person's own channelUser of a response: its
  // unread count and read marker.
  function setOwnRead(cu) {
    store.unread.set(cu.channelId, cu.unreadCount || 0);
    store.mentions.set(cu.channelId, cu.unreadMentionCount || 0);
    store.myReads.set(cu.channelId, cu.readToSegment || 0);
  }

  // loadReads reads the other members' read markers of the open channel
  // (the stream does not carry them): when the channel opens, on each
  // connection and when a message arrives in it.
  const loadReads = serial(async () => {
    const channelId = store.open;
    if (!channelId) {
      return;
    }
    const token = session.token;
    const res = await api('GET', '/channel/' + seg(channelId));
    if (store.open !== channelId || session.token !== token) {
      return;
    }
    rememberUsers(res.users);
    for (const cu of res.channelUsers || []) {
      if (cu.membership === 'member' && cu.userId !== session.userId) {
        store.reads.set(cu.userId, Math.max(store.reads.get(cu.userId) || 0, cu.readToSegment || 0));
      }
    }
    renderSeen();
  });

  // loadOwnReads reads the unread counts of the channels where the
  // person's marker moved in another tab or on another device (queued by
  // channel.didMarkRead), one channel at a time.
  const ownReadsDue = new Set();
  const loadOwnReads = serial(async () => {
    const token = session.token;
    while (ownReadsDue.size > 0) {
      const channelId = ownReadsDue.values().next().value;
      ownReadsDue.delete(channelId);
      let res;
      try {
        res = await api('GET', '/channel/' + seg(channelId));
      } catch (e) {
        if (e instanceof ApiError && e.status !== 401 && e.status !== 0) {
          continue; // no longer a member: the membership event re-reads the list
        }
        throw e;
      }
      if (session.token !== token) {
        return;
      }
      for (const cu of res.channelUsers || []) {
        if (cu.userId === session.userId && cu.channelId === channelId) {
          setOwnRead(cu);
        }
      }
      renderChannels();
    }
  });

  // markRead moves the person's read marker to the last message shown.
  const markRead = serial(async () => {
    const channelId = store.open;
    const segment = store.lastSegment;
    if (!channelId || segment < 1) {
      return;
    }
    const res = await api('POST', '/channel/' + seg(channelId) + '/read', { segment: segment });
    for (const cu of res.channelUsers || []) {
      if (cu.userId === session.userId) {
        setOwnRead(cu);
      }
    }
    renderChannels();
  });

  // markReadIfSeen marks the open channel read when the person can see
  // it: the tab is visible. A hidden tab marks it when it shows again.
  function markReadIfSeen() {
    if (!store.unseen || !visible() || !store.open) {
      return;
    }
    store.unseen = false;
    markRead().catch(handleError);
  }

  // ---- live ---------------------------------------------------------------

  // The event stream. Every connection asks for a new ticket and resumes
  // after the last event id seen, so that nothing is missed across a
  // reconnection; when the server cannot resume (resumed:false) the page
  // reads again what it shows.
  const live = {
    running: false,
    ws: null,
    lastId: '', // the id of the last logged event received
    attempt: 0, // failed attempts since the last connection
    timer: 0,
    badResumes: 0, // connections with after= that failed before didConnect
  };

  function startLive() {
    live.running = true;
    live.lastId = '';
    live.attempt = 0;
    live.badResumes = 0;
    showConnection('connecting');
    connect();
    // The lists show at once; stream.didConnect reads them again, so that
    // nothing between this read and the stream's start is missed.
    loadChannels().catch(handleError);
    loadBlocks().catch(handleError);
  }

  function stopLive() {
    live.running = false;
    clearTimeout(live.timer);
    const ws = live.ws;
    live.ws = null;
    if (ws) {
      ws.close(1000, 'signed out');
    }
  }

  // retry schedules the next attempt: 0.5 s doubling up to 10 s, each
  // delay drawn between its half and its whole so that many pages do not
  // come back at the same instant.
  function retry() {
    clearTyping();
    showConnection('reconnecting', 'Reconnecting…');
    const cap = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * Math.pow(2, live.attempt));
    live.attempt++;
    clearTimeout(live.timer);
    live.timer = setTimeout(connect, cap / 2 + Math.random() * cap / 2);
  }

  async function connect() {
    clearTimeout(live.timer);
    if (!live.running || live.ws) {
      return;
    }
    const token = session.token;
    let ticket;
    try {
      ticket = (await api('POST', '/events/ticket')).ticket;
    } catch (e) {
      if (!live.running || session.token !== token) {
        return;
      }
      if (e instanceof ApiError && (e.status === 401 || e.status === 403)) {
        live.running = false; // refused: retrying would not help
        showConnection('closed', 'Disconnected: ' + e.message);
        handleError(e);
        return;
      }
      if (e instanceof ApiError && e.status === 404) {
        live.running = false;
        showConnection('closed', 'This server offers no event stream: news shows when a channel is opened again.');
        return;
      }
      retry(); // the server is away or failing: try again later
      return;
    }
    if (!live.running || session.token !== token || live.ws) {
      return;
    }
    const url = new URL(API + '/events', location.href);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    url.search = '';
    url.searchParams.set('ticket', ticket);
    // A server that refuses the resume twice (a log that lost its events,
    // as with a memory store after a restart) is joined live instead;
    // resumed:false then makes the page read everything again.
    const resuming = live.lastId !== '' && live.badResumes < 2;
    if (resuming) {
      url.searchParams.set('after', live.lastId);
    } else {
      live.lastId = ''; // an id of a log this server does not have
    }
    const ws = new WebSocket(url.href);
    live.ws = ws;
    let connected = false;
    ws.addEventListener('message', (m) => {
      if (live.ws !== ws) {
        return;
      }
      let f;
      try {
        f = JSON.parse(m.data);
      } catch (e) {
        return; // not a frame
      }
      if (f.event === 'stream.didConnect') {
        connected = true;
        live.attempt = 0;
        live.badResumes = 0;
      }
      if (f.id) {
        live.lastId = f.id;
      }
      onFrame(f);
    });
    ws.addEventListener('close', (ev) => {
      if (live.ws !== ws) {
        return; // replaced or stopped
      }
      live.ws = null;
      if (!live.running) {
        return;
      }
      if (ev.code === 4003) {
        live.running = false;
        clearTyping();
        signOut();
        showStatus('This user was banned: this page no longer receives messages.', true);
        showConnection('closed', 'Disconnected: this user was banned.');
        return;
      }
      if (!connected && resuming) {
        live.badResumes++;
      }
      retry();
    });
  }

  function onFrame(f) {
    const d = f.data || {};
    rememberUsers(d.users);
    switch (f.event) {
      case 'stream.didConnect':
        onConnected(!!d.resumed);
        break;
      case 'message.didCreate':
      case 'message.didUpdate':
      case 'message.didDelete':
        onMessages(f.event, d.messages || []);
        break;
      case 'channel.didStartTyping':
        onTyping(d);
        break;
      case 'channel.didMarkRead':
        onOwnRead(d);
        break;
      case 'channel.didCreate':
      case 'channel.didJoin':
      case 'channel.didAddUsers':
      case 'channel.didRemoveUsers':
      case 'channel.didBanUsers':
      case 'channel.didUnbanUsers':
      case 'channel.didClose':
      case 'channel.didUpdate':
        loadChannels().catch(handleError);
        break;
      default:
        // Reactions, flags, mutes and user updates change nothing shown.
    }
  }

  function onConnected(resumed) {
    showConnection('live');
    $('connection').dataset.resumed = String(resumed);
    if ($('status').classList.contains('error') && lastErrorWasNetwork) {
      clearStatus();
    }
    lastErrorWasNetwork = false;
    const work = [loadReads()];
    if (resumed) {
      // The stream replays what happened meanwhile; only the channels of
      // others and the read markers (not replayed) are read again.
      work.push(loadDirectory());
    } else {
      work.push(loadChannels(), loadMessages());
    }
    Promise.all(work).catch(handleError);
  }

  // countUnread counts a new message of another person in a channel that
  // is not open, unless the counts include it already (its segment is
  // not above the highest they include).
  function countUnread(m) {
    const seg = m.channelSegment || 0;
    if (seg <= (store.counted.get(m.channelId) || 0)) {
      return;
    }
    store.counted.set(m.channelId, seg);
    store.unread.set(m.channelId, (store.unread.get(m.channelId) || 0) + 1);
    if (mentionsMe(m)) {
      store.mentions.set(m.channelId, (store.mentions.get(m.channelId) || 0) + 1);
    }
  }

  function onMessages(event, ms) {
    const open = [];
    for (const m of ms) {
      if (m.channelId === store.open) {
        open.push(m);
        stopTyping(m.userId);
      } else if (event === 'message.didCreate' && m.userId !== session.userId && !m.isDeleted) {
        if (store.countedWhileLoading) {
          store.countedWhileLoading.push(m);
        }
        countUnread(m);
      }
    }
    if (open.length > 0) {
      if (showMessages(open).length > 0) {
        store.unseen = true;
        markReadIfSeen();
      }
      if (event === 'message.didCreate') {
        // The other members' markers may have moved meanwhile: no event
        // tells, so a new message reads them again.
        loadReads().catch(handleError);
      }
    }
    renderChannels();
  }

  // onOwnRead: the person's marker moved, here or in another tab or on
  // another device (the stream sends only the person's own markers). A
  // move beyond what this page knows re-reads that channel's unread count,
  // so that its badge and the tab's title clear.
  function onOwnRead(d) {
    if (d.userId !== session.userId || !d.channelId) {
      return;
    }
    const to = d.readToSegment || 0;
    if (to <= (store.myReads.get(d.channelId) || 0)) {
      return; // this page's own call, or an older move
    }
    store.myReads.set(d.channelId, to);
    if (d.channelId === store.open && to >= store.lastSegment) {
      store.unseen = false; // read elsewhere: nothing left to mark here
    }
    ownReadsDue.add(d.channelId);
    loadOwnReads().catch(handleError);
  }

  function onTyping(d) {
    if (d.channelId !== store.open || d.userId === session.userId) {
      return;
    }
    clearTimeout(store.typing.get(d.userId));
    store.typing.set(d.userId, setTimeout(() => stopTyping(d.userId), TYPING_SHOW_MS));
    renderTyping();
  }

  document.addEventListener('visibilitychange', markReadIfSeen);
  window.addEventListener('online', () => {
    if (live.running && !live.ws) {
      live.attempt = 0;
      connect();
    }
  });

  // ---- actions ------------------------------------------------------------

  let lastErrorWasNetwork = false;

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
    startLive();
  }

  function signOut() {
    stopLive();
    sessionStorage.removeItem(SESSION_KEY);
    session.token = '';
    session.userId = '';
    store.mine = [];
    store.others = [];
    store.unread.clear();
    store.mentions.clear();
    store.counted.clear();
    store.myReads.clear();
    ownReadsDue.clear();
    store.blocked = [];
    renderBlocked();
    closeChannel();
    renderChannels();
    renderSignedIn();
  }

  function closeChannel() {
    store.open = null;
    store.messages = [];
    store.lastSegment = 0;
    store.reads.clear();
    store.unseen = false;
    clearTyping();
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
      await Promise.all([loadMessages(), loadReads()]);
    } catch (e) {
      handleError(e);
    }
  }

  async function joinChannel(channelId) {
    try {
      await api('POST', '/channel/' + seg(channelId) + '/join', {});
      showStatus('Joined ' + channelId + '.');
      await loadChannels();
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

  $('public-refresh').addEventListener('click', act(() => loadDirectory()));

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
    await loadChannels();
    await openChannel(channelId);
  }));

  // Typing: one call when the person starts, then at most one every
  // TYPING_SEND_MS while they go on; a failure is not worth a message.
  let typingSentAt = 0;
  $('send-text').addEventListener('input', () => {
    const now = Date.now();
    if (!store.open || !$('send-text').value.trim() || now - typingSentAt < TYPING_SEND_MS) {
      return;
    }
    typingSentAt = now;
    api('POST', '/channel/' + seg(store.open) + '/typing', {}).catch(() => {});
  });

  $('send-form').addEventListener('submit', act(async () => {
    const input = $('send-text');
    const text = input.value;
    const channelId = store.open;
    if (!text.trim() || !channelId) {
      return;
    }
    const res = await api('POST', '/message', { channelId: channelId, type: 'text', data: { text: text } });
    input.value = '';
    typingSentAt = 0;
    rememberUsers(res.users);
    if (store.open === channelId) {
      showMessages(res.messages || []);
    }
  }));

  $('image-file').addEventListener('change', act(async () => {
    const input = $('image-file');
    const file = input.files && input.files[0];
    const channelId = store.open;
    if (!file || !channelId) {
      return;
    }
    const form = new FormData();
    form.append('channelId', channelId);
    form.append('file', file, file.name);
    showStatus('Uploading ' + file.name + '...');
    const res = await upload('/messages/images', form);
    input.value = '';
    showStatus('Sent ' + file.name + '.');
    rememberUsers(res.users);
    if (store.open === channelId) {
      showMessages(res.messages || []);
    }
  }));

  $('leave').addEventListener('click', act(async () => {
    const channelId = store.open;
    if (!channelId) {
      return;
    }
    await api('POST', '/channel/' + seg(channelId) + '/leave', {});
    closeChannel();
    showStatus('Left ' + channelId + '.');
    await loadChannels();
  }));

  // ---- blocks -------------------------------------------------------------

  function renderBlocked() {
    const list = $('blocked-users');
    list.replaceChildren();
    for (const b of store.blocked) {
      const li = el('li');
      li.dataset.userId = b.blockedId;
      li.append(el('span', 'name', displayNameOf(b.blockedId)));
      const unblock = el('button', 'link unblock', 'Unblock');
      unblock.type = 'button';
      unblock.addEventListener('click', act(() => unblockUser(b.blockedId)));
      li.append(unblock);
      list.append(li);
    }
    $('no-blocked').hidden = store.blocked.length > 0;
  }

  function setBlocks(res) {
    rememberUsers(res.users);
    store.blocked = res.blocks || [];
    renderBlocked();
  }

  const loadBlocks = serial(async () => {
    const token = session.token;
    if (!token) {
      return;
    }
    const res = await api('GET', '/users/' + seg(session.userId) + '/blocks');
    if (session.token === token) {
      setBlocks(res);
    }
  });

  // blockUser blocks userId; the open channel is read again without its
  // messages (the server leaves them out, here and on the stream).
  async function blockUser(userId) {
    setBlocks(await api('POST', '/users/' + seg(session.userId) + '/blocks', { userId: userId }));
    showStatus('Blocked ' + displayNameOf(userId) + '. Unblock under "Blocked users".');
    await loadMessages();
  }

  async function unblockUser(userId) {
    setBlocks(await api('DELETE', '/users/' + seg(session.userId) + '/blocks?userId=' + encodeURIComponent(userId)));
    showStatus('Unblocked ' + displayNameOf(userId) + '.');
    await loadMessages();
  }

  // ---- start --------------------------------------------------------------

  renderSignedIn();
  if (loadSession()) {
    renderSignedIn();
    startLive();
  }
})();
