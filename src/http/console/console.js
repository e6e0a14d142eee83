// payorch operator console (docs/console.md). Plain JavaScript, no library.
//
// Rules this file keeps:
//  - The admin token lives in sessionStorage only and leaves the page only as an
//    `Authorization: Bearer` header on same-origin API calls: never in a URL, a cookie or a log.
//  - Every string that came from a tenant, a vendor or an operator (payee, metadata, notes,
//    vendor messages, evidence) is put in the page as text (textContent / text nodes), never
//    parsed as HTML: nothing here assigns markup to an element.
'use strict';

(() => {
  const TOKEN_KEY = 'payorch.admin_token';
  const REFRESH_MS = 3000;
  const CASE_PAGE = 200;
  const CASE_PAGES_MAX = 10; // the queue view reads at most 2000 open cases
  const PAYMENT_STATES = ['PROCESSING', 'UNKNOWN', 'SUCCEEDED', 'FAILED_FINAL'];
  const REFUND_STATES = ['DEFERRED', 'PROCESSING', 'UNKNOWN', 'SUCCEEDED', 'FAILED_FINAL'];
  const CASE_REASONS = ['retry_budget_exhausted', 'unrecoverable_contract', 'key_retention_expiring',
    'late_contradiction', 'callback_mismatch', 'vendor_key_mismatch', 'payment_corrected',
    'over_refunded'];

  const $ = (id) => document.getElementById(id);

  // el('td', {className: 'num'}, 'text', otherNode): strings become text nodes, never markup.
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    if (props) {
      for (const [k, v] of Object.entries(props)) {
        if (v === undefined || v === null || v === false) continue;
        if (k === 'className') node.className = v;
        else if (k === 'dataset') Object.assign(node.dataset, v);
        else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
        else node.setAttribute(k, v === true ? '' : String(v));
      }
    }
    append(node, children);
    return node;
  }
  function append(node, children) {
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }
  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }
  function row(cells, props) {
    return el('tr', props, cells.map((c) => (c instanceof Node && c.tagName === 'TD' ? c : el('td', null, c))));
  }
  function head(...names) {
    return el('thead', null, el('tr', null, names.map((n) =>
      Array.isArray(n) ? el('th', {className: n[1]}, n[0]) : el('th', null, n))));
  }
  function fields(pairs) {
    const dl = el('dl', {className: 'fields'});
    for (const [k, v] of pairs) {
      if (v === undefined) continue;
      append(dl, [el('dt', null, k), el('dd', null, v === null || v === '' ? '—' : v)]);
    }
    return dl;
  }
  const stateTag = (s) => (s ? el('span', {className: 'state ' + s}, s) : '—');
  const mono = (s) => (s === null || s === undefined ? '—' : el('code', null, String(s)));
  function money(minor, currency) {
    if (typeof minor !== 'number') return '—';
    let shown = String(minor);
    try {
      const f = new Intl.NumberFormat('en', {style: 'currency', currency});
      const digits = f.resolvedOptions().maximumFractionDigits;
      shown = f.format(minor / 10 ** digits);
    } catch (e) { /* an unknown code: the minor units alone */ }
    return shown + ' (' + minor + ' minor)';
  }
  function age(seconds) {
    if (seconds === null || seconds === undefined) return '—';
    if (seconds < 120) return seconds + ' s';
    if (seconds < 7200) return Math.floor(seconds / 60) + ' min';
    if (seconds < 172800) return Math.floor(seconds / 3600) + ' h';
    return Math.floor(seconds / 86400) + ' d';
  }
  const since = (iso) => (iso ? age(Math.max(0, Math.floor((Date.now() - Date.parse(iso)) / 1000))) : '—');

  // ---- The token and the API ----

  const token = {
    get: () => sessionStorage.getItem(TOKEN_KEY),
    set: (t) => sessionStorage.setItem(TOKEN_KEY, t),
    clear: () => sessionStorage.removeItem(TOKEN_KEY),
  };

  class ApiError extends Error {
    constructor(status, problem) {
      super((problem && (problem.detail || problem.title)) || 'HTTP ' + status);
      this.status = status;
      this.problem = problem;
    }
  }

  // A same-origin call with the bearer token; JSON in and out. A 401 signs the page out.
  async function api(path, options = {}) {
    const t = options.token || token.get();
    const headers = {Accept: 'application/json'};
    if (t) headers.Authorization = 'Bearer ' + t;
    if (options.body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(path, {
      method: options.method || 'GET',
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      credentials: 'omit',
      cache: 'no-store',
      redirect: 'error',
    });
    let body = null;
    const type = res.headers.get('Content-Type') || '';
    if (type.includes('json')) body = await res.json();
    if (res.status === 401 && !options.token) signOut('The token was refused; sign in again.');
    if (!res.ok) throw new ApiError(res.status, body);
    return body;
  }

  function showBanner(message) {
    const b = $('banner');
    b.textContent = message || '';
    b.hidden = !message;
  }
  function problemText(e) {
    if (!(e instanceof ApiError)) return String(e && e.message ? e.message : e);
    const p = e.problem || {};
    const parts = [e.status + (p.title ? ' ' + p.title : '')];
    if (p.detail) parts.push(p.detail);
    for (const f of p.errors || []) parts.push(f.field + ': ' + f.message);
    return parts.join(' — ');
  }

  // ---- Signing in and out ----

  async function signIn(event) {
    event.preventDefault();
    const input = $('token');
    const candidate = input.value.trim();
    $('login-error').textContent = '';
    if (!candidate) return;
    try {
      // Any admin route answers 401 to a wrong token; this one reads little.
      await api('/v1/reconciliation?status=open&limit=1', {token: candidate});
    } catch (e) {
      $('login-error').textContent = e instanceof ApiError && e.status === 401
        ? 'This token was refused: it is not an admin or operator token of this payorchd.'
        : 'Could not check the token: ' + problemText(e);
      return;
    }
    input.value = '';
    token.set(candidate);
    start();
  }

  let timer = null;
  function signOut(message) {
    token.clear();
    if (timer) clearTimeout(timer);
    timer = null;
    $('app').hidden = true;
    $('tabs').hidden = true;
    $('logout').hidden = true;
    $('login').hidden = false;
    $('login-error').textContent = message || '';
    $('node').textContent = '';
  }

  function start() {
    $('login').hidden = true;
    $('app').hidden = false;
    $('tabs').hidden = false;
    $('logout').hidden = false;
    route();
    refresh();
  }

  // ---- Overview (refreshed every few seconds) ----

  async function refresh() {
    if (timer) clearTimeout(timer);
    timer = null;
    if (!token.get()) return;
    try {
      const status = await api('/status');
      renderOverview(status);
      showBanner('');
    } catch (e) {
      if (token.get()) showBanner('Could not read /status: ' + problemText(e));
    }
    if (token.get()) timer = setTimeout(refresh, REFRESH_MS);
  }

  function countsTable(table, counts, states) {
    clear(table);
    const body = el('tbody');
    let total = 0;
    for (const s of states) {
      const n = (counts && counts[s]) || 0;
      total += n;
      append(body, [row([s, el('td', {className: 'num', dataset: {state: s}}, String(n))])]);
    }
    append(body, [row([el('td', null, el('strong', null, 'total')), el('td', {className: 'num'}, String(total))])]);
    append(table, [body]);
  }

  function renderOverview(s) {
    $('node').textContent = 'node ' + (s.node && s.node.id ? s.node.id : '?') + ' · v' + s.version +
      (s.ready ? '' : ' · NOT READY');
    $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
    countsTable($('payment-counts'), s.payments, PAYMENT_STATES);
    countsTable($('refund-counts'), s.refunds, REFUND_STATES);

    const open = s.reconciliation ? s.reconciliation.open : 0;
    $('queue-count').textContent = open > 0 ? String(open) : '';
    const backlog = clear($('backlog'));
    append(backlog, [el('tbody', null,
      row(['open cases', el('td', {className: 'num', id: 'open-cases'}, String(open))]),
      row(['oldest open case', el('td', {className: 'num'}, age(s.reconciliation && s.reconciliation.oldest_open_age_s))]),
      row(['outbox pending', el('td', {className: 'num', id: 'outbox-pending'}, String(s.outbox ? s.outbox.pending : 0))]),
      row(['outbox oldest', el('td', {className: 'num'}, age(s.outbox && s.outbox.oldest_pending_age_s))]),
      row(['storage', el('td', {className: 'num'}, s.storage && s.storage.writable
        ? el('span', {className: 'ok'}, 'writable')
        : el('span', {className: 'error'}, 'NOT writable: ' +
            (s.storage && s.storage.last_error ? s.storage.last_error.kind + ' ' + s.storage.last_error.message : '?')))]))]);

    const caps = {};
    for (const p of s.providers || []) caps[p.name] = p.risk || null;
    const exposure = clear($('exposure'));
    const rows = s.unknown_exposure || [];
    $('exposure-empty').hidden = rows.length > 0;
    if (rows.length > 0) {
      append(exposure, [head('provider', 'currency', ['payments', 'num'], ['cap', 'num'], ['amount', 'num'], ['cap', 'num'], 'of cap')]);
      const body = el('tbody');
      for (const e of rows) {
        const cap = caps[e.provider];
        const countShare = cap ? e.count / cap.max_unknown_count : 0;
        const amountShare = cap ? e.amount_minor / cap.max_unknown_amount_minor : 0;
        const share = Math.max(countShare, amountShare);
        append(body, [row([e.provider, e.currency,
          el('td', {className: 'num'}, String(e.count)),
          el('td', {className: 'num'}, cap ? String(cap.max_unknown_count) : '—'),
          el('td', {className: 'num'}, money(e.amount_minor, e.currency)),
          el('td', {className: 'num'}, cap ? money(cap.max_unknown_amount_minor, e.currency) : '—'),
          el('td', null, el('progress', {max: '100', value: String(Math.min(100, Math.round(share * 100)))}),
            ' ' + Math.round(share * 100) + '%')])]);
      }
      append(exposure, [body]);
    }

    const providers = clear($('providers'));
    append(providers, [head('provider', 'intake', 'breaker', 'last error')]);
    const pbody = el('tbody');
    for (const p of s.providers || []) {
      append(pbody, [row([p.name,
        p.intake_paused ? el('span', {className: 'error'}, 'PAUSED (at a risk cap)') : el('span', {className: 'ok'}, 'open'),
        p.breaker === 'open' ? el('span', {className: 'error'}, 'open') : el('span', {className: 'ok'}, p.breaker),
        p.last_error ? el('span', {className: 'warn'}, p.last_error) : '—'])]);
    }
    append(providers, [pbody]);
  }

  // ---- Reconciliation queue ----

  let openCases = [];
  let unreadableCases = [];

  async function loadQueue() {
    const cases = [];
    const unreadable = [];
    let cursor = null;
    let truncated = false;
    for (let page = 0; page < CASE_PAGES_MAX; ++page) {
      const q = '/v1/reconciliation?status=open&limit=' + CASE_PAGE + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '');
      const body = await api(q);
      cases.push(...body.data);
      unreadable.push(...(body.unreadable || []));
      cursor = body.next_cursor;
      if (!cursor) break;
      if (page === CASE_PAGES_MAX - 1) truncated = true;
    }
    cases.sort((a, b) => (a.opened_at < b.opened_at ? -1 : a.opened_at > b.opened_at ? 1 : a.id < b.id ? -1 : 1));
    openCases = cases;
    unreadableCases = unreadable;
    fillFilter($('filter-reason'), [...CASE_REASONS, ...cases.map((c) => c.reason)]);
    fillFilter($('filter-provider'), cases.map((c) => c.provider));
    renderQueue(truncated);
  }

  function fillFilter(select, values) {
    const chosen = select.value;
    const unique = [...new Set(values)].sort();
    clear(select);
    append(select, [el('option', {value: ''}, 'any'), unique.map((v) => el('option', {value: v}, v))]);
    select.value = unique.includes(chosen) ? chosen : '';
  }

  function renderQueue(truncated) {
    const reason = $('filter-reason').value;
    const provider = $('filter-provider').value;
    const shown = openCases.filter((c) => (!reason || c.reason === reason) && (!provider || c.provider === provider));
    $('queue-summary').textContent = shown.length + ' of ' + openCases.length + ' open, oldest first' +
      (truncated ? ' (the oldest ' + openCases.length + ' of more)' : '') +
      (unreadableCases.length ? '; ' + unreadableCases.length + ' unreadable, not shown: ' +
        unreadableCases.map((u) => u.id).join(', ') + ' (logged as store.case_unreadable)' : '');
    const table = clear($('cases'));
    $('cases-empty').hidden = shown.length > 0;
    if (shown.length === 0) return;
    append(table, [head('opened', 'waiting', 'reason', 'provider', 'tenant', 'operation', 'payment / refund')]);
    const body = el('tbody');
    for (const c of shown) {
      append(body, [row([c.opened_at, since(c.opened_at), c.reason, c.provider, c.tenant_id || '—',
        c.operation_id || '—', mono(c.refund_id || c.payment_id)],
      {className: 'clickable', dataset: {caseId: c.id}, onclick: () => { location.hash = '#case/' + c.id; }})]);
    }
    append(table, [body]);
  }

  // ---- One case: evidence, its payment or refund, resolve ----

  function viewFields(v) {
    if (!v) return el('p', {className: 'muted'}, 'No payment matched this case.');
    const isRefund = typeof v.id === 'string' && v.id.startsWith('re_');
    const pairs = [
      [isRefund ? 'refund' : 'payment', mono(v.id)],
      ['tenant', v.tenant_id],
      ['operation id', v.operation_id],
      ['state', stateTag(v.state)],
      ['amount', money(v.amount_minor, v.currency)],
    ];
    if (isRefund) pairs.push(['of payment', mono(v.payment_id)], ['reason', v.reason]);
    else pairs.push(['payee', v.payee], ['provider', v.provider], ['refunded', money(v.amount_refunded_minor, v.currency)]);
    pairs.push(['client key', mono(v.client_key)], ['vendor reference', v.vendor_reference],
      ['attempts', String(v.attempt_count)], ['created', v.created_at], ['updated', v.updated_at]);
    if (v.failure) pairs.push(['failure', [v.failure.code || '', v.failure.message ? ': ' + v.failure.message : '']]);
    if (!isRefund && v.description) pairs.push(['description', v.description]);
    if (v.metadata && Object.keys(v.metadata).length > 0)
      pairs.push(['metadata', el('pre', null, JSON.stringify(v.metadata, null, 2))]);
    return fields(pairs);
  }

  function evidenceList(evidence) {
    if (!evidence || evidence.length === 0) return el('p', {className: 'muted'}, 'No evidence recorded.');
    return el('ol', {className: 'evidence'}, evidence.map((e) =>
      el('li', null, el('strong', null, (e.source || 'evidence') + ' '), el('span', {className: 'muted'}, e.at || ''),
        el('pre', null, JSON.stringify(e, null, 2)))));
  }

  async function showCase(caseId) {
    const body = clear($('case-body'));
    append(body, [el('p', {className: 'muted'}, 'Loading ' + caseId + '…')]);
    let c;
    let subject = null;
    try {
      c = await api('/v1/reconciliation/' + encodeURIComponent(caseId));
      if (c.refund_id) subject = await api('/v1/admin/refunds/' + encodeURIComponent(c.refund_id));
      else if (c.payment_id) subject = await api('/v1/admin/payments/' + encodeURIComponent(c.payment_id));
    } catch (e) {
      clear(body);
      append(body, [el('p', {className: 'error'}, 'Could not read the case: ' + problemText(e))]);
      return;
    }
    clear(body);
    const caseFields = [
      ['case', mono(c.id)], ['status', c.status], ['reason', c.reason], ['provider', c.provider],
      ['opened', c.opened_at + ' (' + since(c.opened_at) + ' ago)'],
    ];
    if (c.resolution) {
      caseFields.push(['resolved', c.resolved_at], ['outcome', c.resolution.outcome], ['by', c.resolution.by],
        ['note', c.resolution.note], ['vendor reference', c.resolution.vendor_reference]);
    }
    append(body, [el('h2', null, 'Case ', el('code', null, c.id)),
      el('div', {className: 'columns'},
        el('div', {className: 'panel'}, el('h3', null, 'Case'), fields(caseFields)),
        el('div', {className: 'panel', id: 'case-subject'}, el('h3', null, c.refund_id ? 'Refund' : 'Payment'), viewFields(subject))),
      el('div', {className: 'panel'}, el('h3', null, 'Evidence'), evidenceList(c.evidence))]);
    if (c.status === 'open') append(body, [resolveForm(c)]);
    const result = el('div', {id: 'resolve-result'});
    append(body, [result]);
    if (subject) await appendTimeline(result, {id: subject.id});
  }

  function resolveForm(c) {
    const allowed = c.allowed_outcomes || ['succeeded', 'failed_final'];
    const labels = {succeeded: 'Succeeded — the vendor took the money',
      failed_final: 'Failed — the vendor holds no charge', retry: 'Retry — resume automatic work with the same key'};
    // novalidate: the script checks the form and says what is missing in the page.
    const form = el('form', {className: 'panel', id: 'resolve-form', autocomplete: 'off', novalidate: true},
      el('h3', null, 'Resolve'),
      el('div', {className: 'outcomes'}, allowed.map((o) =>
        el('label', null, el('input', {type: 'radio', name: 'outcome', value: o, required: true}), labels[o] || o))),
      c.retry_refused ? el('p', {className: 'muted', id: 'retry-refused'}, 'Retry is not offered: ', c.retry_refused) : null,
      el('label', {for: 'resolve-reference'}, 'Vendor reference (optional)'),
      el('input', {id: 'resolve-reference', type: 'text', spellcheck: 'false', maxlength: '255'}),
      el('label', {for: 'resolve-note'}, 'Note (required: what you checked, and where)'),
      el('textarea', {id: 'resolve-note', required: true, maxlength: '2000'}),
      el('button', {type: 'submit'}, 'Resolve case'),
      el('p', {className: 'error', id: 'resolve-error', role: 'alert'}));
    form.addEventListener('submit', (event) => resolveCase(event, c, form));
    return form;
  }

  async function resolveCase(event, c, form) {
    event.preventDefault();
    const chosen = form.querySelector('input[name=outcome]:checked');
    const note = $('resolve-note').value;
    const reference = $('resolve-reference').value.trim();
    const error = $('resolve-error');
    error.textContent = '';
    if (!chosen) { error.textContent = 'Choose an outcome.'; return; }
    if (!note.trim()) { error.textContent = 'A note is required: say why.'; return; }
    const body = {outcome: chosen.value, note};
    if (reference) body.vendor_reference = reference;
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    let answer;
    try {
      answer = await api('/v1/reconciliation/' + encodeURIComponent(c.id) + '/resolve', {method: 'POST', body});
    } catch (e) {
      error.textContent = 'Not resolved: ' + problemText(e);
      button.disabled = false;
      return;
    }
    form.remove();
    const result = clear($('resolve-result'));
    const after = answer.refund || answer.payment;
    append(result, [el('div', {className: 'panel', id: 'resolved'},
      el('h3', null, 'Resolved'),
      fields([['case', answer.case.status + ' · ' + answer.case.resolution.outcome + ' by ' + answer.case.resolution.by],
        [answer.refund ? 'refund state' : 'payment state', after ? stateTag(after.state) : '—']]))]);
    const subject = $('case-subject');
    if (after && subject) {
      clear(subject);
      append(subject, [el('h3', null, answer.refund ? 'Refund' : 'Payment'), viewFields(after)]);
    }
    if (after) await appendTimeline(result, {id: after.id});
    loadQueue().catch(() => {});
  }

  // ---- Timeline (lookup and case) ----

  // GET /v1/admin/timeline for {id} | {client_key} | {operation_id[, tenant_id]}: its matches.
  async function timelineOf(query) {
    return (await api('/v1/admin/timeline?' + new URLSearchParams(query).toString())).matches;
  }

  async function appendTimeline(container, query) {
    let matches;
    try {
      matches = await timelineOf(query);
    } catch (e) {
      append(container, [el('p', {className: 'error'}, 'Could not read the timeline: ' + problemText(e))]);
      return;
    }
    for (const m of matches) append(container, [timelinePanel(m, true)]);
  }

  function timelineRow(e) {
    let what;
    let cause = '';
    if (e.kind === 'transition') {
      what = [e.from ? [stateTag(e.from), ' → '] : 'created → ', stateTag(e.to)];
      cause = e.cause;
    } else if (e.kind === 'case_opened') {
      what = ['case opened: ', e.reason];
      cause = e.case_id;
    } else if (e.kind === 'case_resolved') {
      what = ['case resolved: ', e.outcome, ' by ', e.by, e.note ? ' — “' + e.note + '”' : ''];
      cause = e.case_id;
    } else {
      what = [e.event_type || e.kind];
    }
    const corrected = typeof e.event_type === 'string' && e.event_type.endsWith('.corrected');
    return row([e.at, el('td', null, what), cause || '—', e.fence === undefined || e.fence === null ? '—' : String(e.fence),
      e.event_type || '—', mono(e.request_id)], {className: corrected ? 'corrected' : undefined, dataset: {kind: e.kind}});
  }

  // One match of the timeline: the row's fields (unless `brief`: the case page shows them
  // already), its refunds, its timeline and its cases.
  function timelinePanel(m, brief) {
    const v = m.refund || m.payment;
    const panel = el('div', {className: 'panel timeline', dataset: {id: v ? v.id : ''}});
    append(panel, [el('h3', null, m.kind === 'refund' ? 'Refund ' : 'Payment ', mono(v && v.id), ' ',
      el('span', {className: 'muted'}, 'tenant ' + m.tenant_id))]);
    if (!brief) append(panel, [viewFields(v)]);
    if (m.payment && m.payment.refunds && m.payment.refunds.length > 0) {
      append(panel, [el('h3', null, 'Refunds'), el('div', {className: 'scroll'}, el('table', null,
        head('refund', 'operation', 'state', 'amount'),
        el('tbody', null, m.payment.refunds.map((r) => row([mono(r.id), r.operation_id, stateTag(r.state), money(r.amount_minor, r.currency)])))))]);
    }
    append(panel, [el('h3', null, 'Timeline'), el('div', {className: 'scroll'}, el('table', {className: 'events'},
      head('at', 'what', 'cause', 'fence', 'event', 'request id'),
      el('tbody', null, (m.timeline || []).map(timelineRow))))]);
    if (m.cases && m.cases.length > 0) {
      append(panel, [el('h3', null, 'Cases'), el('ul', null, m.cases.map((c) => el('li', null,
        el('a', {href: '#case/' + c.id}, c.id), ' ', c.reason, ' · ', c.status)))]);
    }
    return panel;
  }

  async function lookup(event) {
    if (event) event.preventDefault();
    const q = $('lookup-q').value.trim();
    const tenant = $('lookup-tenant').value.trim();
    const out = clear($('lookup-result'));
    if (!q) return;
    let query;
    if (/^(pay|re)_/.test(q)) query = {id: q};
    else if (/^ck_/.test(q)) query = {client_key: q};
    else query = tenant ? {operation_id: q, tenant_id: tenant} : {operation_id: q};
    let matches;
    try {
      matches = await timelineOf(query);
    } catch (e) {
      append(out, [el('p', {className: 'error'}, problemText(e))]);
      return;
    }
    if (matches.length === 0) {
      append(out, [el('p', {className: 'muted', id: 'lookup-none'}, 'Nothing matches ', el('code', null, q), '.')]);
      return;
    }
    for (const m of matches) append(out, [timelinePanel(m)]);
  }

  // ---- Navigation: #overview, #queue, #case/<id>, #lookup ----

  function route() {
    if (!token.get()) return;
    const hash = location.hash.replace(/^#/, '') || 'overview';
    const [tab, arg] = hash.split('/', 2);
    const target = ['overview', 'queue', 'case', 'lookup'].includes(tab) ? tab : 'overview';
    for (const section of document.querySelectorAll('.tab')) section.hidden = section.id !== target;
    for (const a of document.querySelectorAll('#tabs a'))
      a.classList.toggle('active', a.dataset.tab === target || (target === 'case' && a.dataset.tab === 'queue'));
    if (target === 'queue') loadQueue().catch((e) => showBanner('Could not read the queue: ' + problemText(e)));
    if (target === 'case' && arg) showCase(decodeURIComponent(arg));
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('login-form').addEventListener('submit', signIn);
    $('logout').addEventListener('click', () => signOut(''));
    $('lookup-form').addEventListener('submit', lookup);
    $('filter-reason').addEventListener('change', () => renderQueue(false));
    $('filter-provider').addEventListener('change', () => renderQueue(false));
    window.addEventListener('hashchange', route);
    if (token.get()) start();
    else signOut('');
  });
})();
