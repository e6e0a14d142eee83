// The operator console (docs/console.md) in a real browser: Debian's Chromium, driven by
// playwright-core, against a real payorchd and the demo vendor payorch-vendor-sim, both on
// 127.0.0.1 in a temporary folder. Run by ctest (`console`) with the build folder in
// PAYORCH_BIN_DIR. With PAYORCH_CONSOLE_SCREENSHOTS=DIR the overview and a case are saved there
// (docs/console-*.png are made so).
'use strict';

const {test, before, after} = require('node:test');
const assert = require('node:assert/strict');
const {spawn} = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const bin = process.env.PAYORCH_BIN_DIR || path.resolve(__dirname, '../../build');
const chromiumPath = process.env.PAYORCH_CHROMIUM || '/usr/bin/chromium';
const ci = process.env.CI === 'true';
const slowdown = Number(process.env.PAYORCH_TEST_SLOWDOWN || '1');

const adminToken = 'console-admin-token-0001';
const tenantToken = 'console-tenant-token-0001';
const hostile = '<img src=x onerror=alert(1)>';

// Without Chromium the suite cannot run: on CI that fails; elsewhere it says so and skips.
const haveChromium = fs.existsSync(chromiumPath);
if (!haveChromium) {
  const why = 'console browser tests skipped: no Chromium at ' + chromiumPath + ' (apt-get install chromium)';
  if (ci) throw new Error(why.replace('skipped', 'cannot run') + '; with CI=true a missing browser fails the run');
  console.log(why);
}
const browserTest = haveChromium ? test : test.skip;

let dir;
let sim;
let daemon;
let base;
let simBase;
let browser;
let context;
let page;
const requests = [];   // every URL the browser asked for
const dialogs = [];    // every alert/confirm the page opened (none may)
let navigations = 0;   // main-frame loads: the overview must refresh without one

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, check, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs * slowdown;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await check();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await sleep(100);
  }
  throw new Error('timed out waiting for ' + what + ' (last: ' + String(last) + ')');
}

function start(program, args, log) {
  const out = fs.openSync(log, 'a');
  const child = spawn(path.join(bin, program), args, {stdio: ['ignore', out, out]});
  child.exitInfo = null;
  child.on('exit', (code, signal) => { child.exitInfo = {code, signal}; });
  return child;
}

async function portFrom(file, child, log) {
  return waitFor('the port file ' + file, () => {
    if (child.exitInfo) throw new Error('exited: ' + JSON.stringify(child.exitInfo) + '\n' + fs.readFileSync(log, 'utf8').slice(-3000));
    const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() : '';
    return text ? Number(text) : null;
  });
}

// A port nothing listens on: connecting is refused, so a call there is certainly not sent.
async function refusedPort() {
  const server = net.createServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const {port} = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

async function call(method, urlPath, tokenValue, body, type = 'application/json') {
  const headers = {Authorization: 'Bearer ' + tokenValue};
  if (body !== undefined) headers['Content-Type'] = type;
  const res = await fetch(base + urlPath, {method, headers,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body)});
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch (e) { /* not JSON */ }
  return {status: res.status, headers: res.headers, json, text};
}

let serial = 0;
async function pay(fields) {
  const operation_id = 'console-' + process.pid + '-' + (++serial);
  const res = await call('POST', '/v1/payments', tenantToken, {operation_id, amount_minor: 1250, currency: 'EUR',
    payee: 'merchant-1', source: 'tok_ok', ...fields});
  assert.equal(res.status, 201, res.text);
  return res.json;
}

async function payment(operationId) {
  const res = await call('GET', '/v1/payments/' + operationId, tenantToken);
  assert.equal(res.status, 200, res.text);
  return res.json;
}

async function openCaseOf(paymentId) {
  return waitFor('an open case for ' + paymentId, async () => {
    const res = await call('GET', '/v1/reconciliation?status=open&limit=200', adminToken);
    return res.json.data.find((c) => c.payment_id === paymentId) || null;
  });
}

async function shoot(name) {
  const target = process.env.PAYORCH_CONSOLE_SCREENSHOTS || dir;
  fs.mkdirSync(target, {recursive: true});
  await page.screenshot({path: path.join(target, name), fullPage: true});
}

async function noHorizontalOverflow() {
  return page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1);
}

before(async () => {
  if (!haveChromium) return;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-console-'));
  const simLog = path.join(dir, 'sim.log');
  sim = start('payorch-vendor-sim', ['--listen', '127.0.0.1:0', '--port-file', path.join(dir, 'sim.port'),
    '--db', path.join(dir, 'sim.db'), '--callback-url', 'none', '--pending-delay', '300ms'], simLog);
  const simPort = await portFrom(path.join(dir, 'sim.port'), sim, simLog);
  simBase = 'http://127.0.0.1:' + simPort;
  const downPort = await refusedPort();
  const provider = (name, port, retry) => `
  - name: ${name}
    adapter: sim
    base_url: http://127.0.0.1:${port}
    api_key: sim-demo-key
    timeouts: {connect: 2s, request: 10s}
    contract: {key_retention: 24h, recovery: lookup, not_found_final_after: 30s}
    retry: ${retry}
    risk: {max_unknown_count: 50, max_unknown_amount_minor: 5000000}
    callback: {secret: sim-callback-secret, tolerance: 5m, retry_horizon: 24h}`;
  fs.writeFileSync(path.join(dir, 'payorchd.yaml'), `
server:
  listen: 127.0.0.1:0
database:
  driver: sqlite
  path: ${path.join(dir, 'payorch.db')}
engine:
  poll_interval: 100ms
admin:
  token: ${adminToken}
tenants:
  - id: shop
    token: ${tenantToken}
providers:${provider('sim', simPort, '{max_attempts: 10, initial_backoff: 200ms, max_backoff: 1s, give_up_after: 1h}')}${
  provider('down', downPort, '{max_attempts: 2, initial_backoff: 100ms, max_backoff: 200ms, give_up_after: 1h}')}
routing:
  default_provider: sim
`);
  const daemonLog = path.join(dir, 'payorchd.log');
  daemon = start('payorchd', ['serve', '--config', path.join(dir, 'payorchd.yaml'), '--port-file', path.join(dir, 'payorchd.port')], daemonLog);
  base = 'http://127.0.0.1:' + await portFrom(path.join(dir, 'payorchd.port'), daemon, daemonLog);

  const {chromium} = require('playwright-core');
  browser = await chromium.launch({executablePath: chromiumPath, headless: true,
    args: process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : []});
  context = await browser.newContext({viewport: {width: 1280, height: 800}});
  // Record every request the page makes; anything not for 127.0.0.1 is refused and recorded.
  await context.route('**/*', (route) => {
    requests.push(route.request().url());
    if (new URL(route.request().url()).hostname !== '127.0.0.1') return route.abort();
    return route.continue();
  });
  page = await context.newPage();
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) ++navigations; });
});

after(async () => {
  if (browser) await browser.close();
  for (const child of [daemon, sim]) {
    if (!child || child.exitInfo) continue;
    child.kill('SIGTERM');
    await waitFor('exit', () => child.exitInfo, 10000).catch(() => child.kill('SIGKILL'));
  }
  if (dir && !process.env.PAYORCH_KEEP_TEST_DIR) fs.rmSync(dir, {recursive: true, force: true});
});

browserTest('the page comes from payorchd with a strict policy, and loads nothing else', async () => {
  const res = await fetch(base + '/console');
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/html/);
  const csp = res.headers.get('content-security-policy');
  assert.match(csp, /default-src 'self'/);
  assert.match(csp, /script-src 'self'/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  const html = await res.text();
  assert.doesNotMatch(html, /<script>|<script [^>]*>[^<]|\son[a-z]+=|style=/i, 'no inline script, handler or style');
  assert.doesNotMatch(html, /https?:\/\//, 'no other origin named');
  const js = await fetch(base + '/console/console.js');
  assert.equal(js.status, 200);
  assert.match(js.headers.get('content-type'), /^text\/javascript/);
  assert.ok(js.headers.get('content-security-policy'));
  assert.doesNotMatch(await js.text(), /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/);
  assert.equal((await fetch(base + '/console/nope.js')).status, 404);
  assert.equal((await fetch(base + '/console', {method: 'POST'})).status, 405);
});

browserTest('a wrong token is refused and not kept', async () => {
  await page.goto(base + '/console');
  await page.fill('#token', 'not-the-admin-token');
  await page.click('#login-form button[type=submit]');
  await page.waitForFunction(() => document.getElementById('login-error').textContent.includes('refused'));
  assert.equal(await page.isHidden('#app'), true);
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  // A tenant's token is not an admin token either.
  await page.fill('#token', tenantToken);
  await page.click('#login-form button[type=submit]');
  await page.waitForFunction(() => document.getElementById('login-error').textContent.includes('refused'));
  assert.equal(await page.isHidden('#app'), true);
});

browserTest('signing in keeps the token in sessionStorage only; inline script cannot run', async () => {
  await page.fill('#token', adminToken);
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#overview:not([hidden]) #payment-counts td');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('payorch.admin_token')), adminToken);
  assert.equal(await page.evaluate(() => document.cookie), '');
  assert.equal(await page.inputValue('#token'), '');
  // The policy is in force: a script element with inline code does not run.
  const ran = await page.evaluate(async () => {
    const s = document.createElement('script');
    s.textContent = 'window.__inline_ran = true;';
    document.body.appendChild(s);
    await new Promise((r) => setTimeout(r, 50));
    return window.__inline_ran === true;
  });
  assert.equal(ran, false);
});

browserTest('the overview counts change as payments flow, without reloading', async () => {
  const succeeded = () => page.textContent('#payment-counts td[data-state=SUCCEEDED]').then(Number);
  const before = await succeeded();
  const loads = navigations;
  for (let i = 0; i < 3; ++i) await pay({});
  await page.waitForFunction((n) => Number(document.querySelector('#payment-counts td[data-state=SUCCEEDED]').textContent) >= n,
    before + 3, {timeout: 15000 * slowdown});
  assert.equal(navigations, loads, 'the figures were refreshed in place');
  assert.match(await page.textContent('#providers'), /down/);

  // A charge the vendor holds for 6 s: a submit in flight is money at risk, shown against the
  // provider's caps while it lasts.
  const fault = await fetch(simBase + '/_sim/faults', {method: 'POST',
    body: JSON.stringify({mode: 'commit_then_hang', count: 1, delay_ms: 6000, source: 'tok_ok'})});
  assert.equal(fault.status, 200, await fault.text());
  const held = await pay({amount_minor: 4200});
  await page.waitForSelector('#exposure tbody tr', {timeout: 15000 * slowdown});
  const exposure = await page.textContent('#exposure tbody tr');
  assert.match(exposure, /^sim/);
  assert.match(exposure, /EUR/);
  assert.match(exposure, /42\.00/);
  assert.match(exposure, /50/, 'the count cap');
  assert.match(exposure, /50,000\.00/, 'the amount cap');
  assert.ok(await noHorizontalOverflow());
  await shoot('console-overview.png');
  await waitFor('the held charge to settle', async () => ((await payment(held.operation_id)).state === 'SUCCEEDED'));
  await page.setViewportSize({width: 390, height: 844});
  assert.ok(await noHorizontalOverflow(), 'the overview fits a phone-width screen');
  await page.setViewportSize({width: 1280, height: 800});
});

browserTest('a case from a spent retry budget is opened, shown as text and resolved', async () => {
  const created = await pay({provider: 'down', payee: hostile, description: '<b>bold?</b>',
    metadata: {note: '<script>alert(2)</script>'}});
  const rc = await openCaseOf(created.id);
  assert.equal(rc.reason, 'retry_budget_exhausted');

  await page.click('#tabs a[data-tab=queue]');
  await page.selectOption('#filter-reason', 'retry_budget_exhausted');
  await page.selectOption('#filter-provider', 'down');
  const rowSelector = `#cases tr[data-case-id="${rc.id}"]`;
  await page.waitForSelector(rowSelector);
  await page.click(rowSelector);
  await page.waitForSelector('#case-subject dl');

  // Tenant strings are text: the markup shows literally and no element or dialog came of it.
  const subject = await page.textContent('#case-subject');
  assert.ok(subject.includes(hostile), subject);
  assert.ok(subject.includes('<script>alert(2)</script>'), subject);
  assert.equal(await page.evaluate(() => document.querySelectorAll('main img, main b').length), 0);
  // Retry is offered while the key is retained; the note is required.
  const outcomes = await page.$$eval('#resolve-form input[name=outcome]', (xs) => xs.map((x) => x.value));
  assert.deepEqual(outcomes, ['succeeded', 'failed_final', 'retry']);
  await shoot('console-case.png');
  await page.setViewportSize({width: 390, height: 844});
  assert.ok(await noHorizontalOverflow(), 'the case page fits a phone-width screen');
  await page.setViewportSize({width: 1280, height: 800});

  await page.check('#resolve-form input[value=failed_final]');
  await page.click('#resolve-form button[type=submit]');
  assert.match(await page.textContent('#resolve-error'), /note/i);
  await page.fill('#resolve-note', 'connect refused on every attempt: never reached the vendor');
  await page.click('#resolve-form button[type=submit]');
  await page.waitForSelector('#resolved');
  assert.match(await page.textContent('#resolved'), /FAILED_FINAL/);
  await page.waitForSelector('#resolve-result table.events');
  const events = await page.textContent('#resolve-result table.events');
  assert.match(events, /payment\.failed/);
  assert.match(events, /resolve_failed_final/);
  assert.match(events, /case opened: retry_budget_exhausted/);

  const after = await payment(created.operation_id);
  assert.equal(after.state, 'FAILED_FINAL');
  assert.equal(dialogs.length, 0, 'no dialog: ' + dialogs.join(', '));
  assert.ok(!requests.some((u) => new URL(u).pathname.endsWith('/x')), 'the hostile <img> never loaded');
});

browserTest('resolving a contradiction shows payment.corrected', async () => {
  const created = await pay({});
  const done = await waitFor('SUCCEEDED', async () => ((await payment(created.operation_id)).state === 'SUCCEEDED'));
  assert.ok(done);
  // The vendor's settlement file says the charge failed: a late contradiction.
  const csv = 'reference,status,amount_minor,currency,vendor_reference\n' + created.client_key + ',failed,1250,EUR,\n';
  const imported = await call('POST', '/v1/reconciliation/import?provider=sim', adminToken, csv, 'text/csv');
  assert.equal(imported.status, 200, imported.text);
  const rc = await openCaseOf(created.id);
  assert.equal(rc.reason, 'late_contradiction');

  await page.goto(base + '/console#case/' + rc.id);
  await page.waitForSelector('#resolve-form');
  const outcomes = await page.$$eval('#resolve-form input[name=outcome]', (xs) => xs.map((x) => x.value));
  assert.deepEqual(outcomes, ['succeeded', 'failed_final'], 'no retry for a terminal payment');
  assert.match(await page.textContent('#retry-refused'), /terminal/);
  await page.check('#resolve-form input[value=failed_final]');
  await page.fill('#resolve-reference', 'settlement-2026-12-03');
  await page.fill('#resolve-note', 'settlement file and vendor dashboard agree: the charge failed');
  await page.click('#resolve-form button[type=submit]');
  await page.waitForSelector('#resolve-result tr.corrected');
  assert.match(await page.textContent('#resolve-result tr.corrected'), /payment\.corrected/);
  assert.equal((await payment(created.operation_id)).state, 'FAILED_FINAL');
});

browserTest('a payment is found by id, operation id and client key, with its timeline', async () => {
  const created = await pay({});
  await waitFor('SUCCEEDED', async () => ((await payment(created.operation_id)).state === 'SUCCEEDED'));
  await page.click('#tabs a[data-tab=lookup]');
  for (const q of [created.operation_id, created.id, created.client_key]) {
    await page.fill('#lookup-q', q);
    await page.click('#lookup-form button[type=submit]');
    const panel = `#lookup-result .timeline[data-id="${created.id}"]`;
    await page.waitForSelector(panel);
    const kinds = await page.$$eval(panel + ' table.events tbody tr', (rows) => rows.map((r) => r.textContent));
    assert.ok(kinds.length >= 2, kinds.join('\n'));
    assert.match(kinds[0], /intake/);
    assert.match(kinds[0], /payment\.created/);
    assert.match(kinds[kinds.length - 1], /SUCCEEDED/);
    assert.match(kinds[kinds.length - 1], /payment\.succeeded/);
  }
  await page.fill('#lookup-q', 'no-such-operation');
  await page.click('#lookup-form button[type=submit]');
  await page.waitForSelector('#lookup-none');
});

browserTest('signing out forgets the token, and no request left 127.0.0.1', async () => {
  await page.click('#logout');
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  assert.equal(await page.isVisible('#login'), true);
  assert.ok(requests.length > 10);
  const elsewhere = requests.filter((u) => new URL(u).hostname !== '127.0.0.1');
  assert.deepEqual(elsewhere, []);
  assert.ok(!requests.some((u) => u.includes(adminToken)), 'the token never in a URL');
});
