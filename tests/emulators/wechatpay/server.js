'use strict';
// An emulator of WeChat Pay API v3 (direct merchants) for payorch's tests, Node standard
// library only:
//   node server.js --listen 127.0.0.1:0 --port-file F --ledger FILE
//        [--keys DIR] [--mchid M] [--appid A] [--merchant-serial S] [--platform-serial P]
//        [--close-min-delay-ms N (300000: the docs' 5 minutes)] [--refund-delay-ms N (200)]
//        [--notify-scale X (1: the documented retry schedule)] [--hold-notifications 1]
// Keys (DIR, default ./keys, test-only): merchant_public.pem verifies requests,
// platform_private.pem signs answers and notifications, api_v3_key.txt encrypts resources.
// Endpoints (paths, fields and codes: github.com/TheNorthMemory/wechatpay-openapi, wechat.js):
//   POST /v3/pay/transactions/native | jsapi | codepay
//   GET  /v3/pay/transactions/out-trade-no/{out_trade_no}?mchid=
//   POST /v3/pay/transactions/out-trade-no/{out_trade_no}/close
//   POST /v3/refund/domestic/refunds, GET /v3/refund/domestic/refunds/{out_refund_no}
// Every request must carry Authorization: WECHATPAY2-SHA256-RSA2048 with this mchid, the
// merchant serial, a timestamp within 5 minutes and a valid signature (else 401 SIGN_ERROR);
// every answer, errors and 204 included, is signed (Wechatpay-Timestamp/-Nonce/-Signature/
// -Serial). Request bodies are checked against the description's schemas (schema_check.js,
// strict): a body that does not conform gets 400 PARAM_ERROR and is recorded
// (GET /_emu/schema_problems).
// Test controls (no signature):
//   POST /_emu/pay {out_trade_no}: the user pays (NOTPAY/USERPAYING → SUCCESS, notified)
//   POST /_emu/refund_outcome {out_refund_no, status: SUCCESS|CLOSED|ABNORMAL}
//   POST /_emu/settings {close_min_delay_ms, refund_delay_ms, auto_refund_status (SUCCESS |
//        CLOSED | ABNORMAL | null: refunds stay PROCESSING until /_emu/refund_outcome)}
//   POST /_emu/faults {mode, count, delay_ms, path}: the next `count` API requests (-1: all)
//        whose path matches the regular expression `path`:
//        fail_before_commit  500 SYSTEM_ERROR, nothing done
//        commit_then_5xx     done and committed, then 500 SYSTEM_ERROR
//        commit_then_hang    done and committed, no answer (socket closed after delay_ms)
//        delayed_commit      500 SYSTEM_ERROR at once, done delay_ms later
//        latency             held delay_ms, then done and answered
//   POST /_emu/notify_url {url}: where notifications go from now on ("" : each one's own)
//   POST /_emu/notify_schedule {scale}: the retry schedule times `scale`
//   POST /_emu/switches {duplicate_notifications, hold_notifications}
//   POST /_emu/release_notifications {reverse}: send the held ones now (newest first)
//   GET  /_emu/ledger, GET /_emu/schema_problems, GET /_emu/stats (requests, refused
//        signatures, closes, early_closes_refused, notification_posts)
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');

const {parseArgs, listenWithPortFile, sleep} = require('../shared');
const {Ledger} = require('./ledger');
const {Notifier, signHeaders} = require('./notify');
const schema = require('./schema_check');
const wechat = require('./wechat');

function main() {
  const args = parseArgs(process.argv.slice(2), ['listen', 'port-file', 'ledger']);
  const keys = args.keys || path.join(__dirname, 'keys');
  const settings = {
    mchid: args.mchid || '1900000109',
    appid: args.appid || 'wxd678efh567hg6787',
    merchantSerial: args['merchant-serial'] || 'MERCHANT0SERIAL0TEST',
    close_min_delay_ms: Number(args['close-min-delay-ms'] ?? 300000),
    refund_delay_ms: Number(args['refund-delay-ms'] ?? 200),
    auto_refund_status: 'SUCCESS',
  };
  const merchantPublicKey = fs.readFileSync(path.join(keys, 'merchant_public.pem'), 'utf8');
  const platform = {privateKey: fs.readFileSync(path.join(keys, 'platform_private.pem'), 'utf8'),
    serial: args['platform-serial'] || 'PLATFORM0SERIAL0TEST'};
  const apiV3Key = fs.readFileSync(path.join(keys, 'api_v3_key.txt'), 'utf8').trim();
  const ledger = new Ledger(args.ledger);
  const switches = {duplicate_notifications: false, hold_notifications: args['hold-notifications'] === '1'};
  const notifier = new Notifier({ledger, platform, apiV3Key, switches});
  notifier.scale = Number(args['notify-scale'] || 1);
  const schemaProblems = [];
  // closes: close requests that reached the business; early_closes_refused: those refused
  // RULE_LIMIT for coming before close_min_delay_ms.
  const stats = {requests: 0, refused_signatures: 0, closes: 0, early_closes_refused: 0};
  let fault = {mode: null, count: 0, delay_ms: 0, path: null};

  // Commits a business result and queues its notifications.
  function apply(result) {
    const notes = result.notifications.map((n) => notifier.queue(n.url, n.event_type, n.summary, n.original_type, n.resource));
    ledger.commit(...result.records, ...notes);
    for (const n of notes) notifier.schedule(n.id, 0);
    if (result.refund) scheduleRefund(result.refund);
  }

  function scheduleRefund(outRefundNo) {
    setTimeout(() => {
      if (!settings.auto_refund_status) return;
      const r = ledger.refunds.get(outRefundNo);
      if (!r || r.status !== 'PROCESSING') return;
      apply(wechat.settleRefund(ledger, settings, outRefundNo, settings.auto_refund_status, Date.now()));
    }, settings.refund_delay_ms);
  }

  // After a restart: refunds still PROCESSING settle, undelivered notifications go out.
  for (const r of ledger.refunds.values()) if (r.status === 'PROCESSING') scheduleRefund(r.out_refund_no);
  notifier.kickAll();

  function send(res, status, body) {
    const text = body === undefined ? '' : JSON.stringify(body);
    const headers = {...signHeaders(text, platform), 'Request-ID': crypto.randomUUID()};
    if (text) Object.assign(headers, {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text)});
    res.writeHead(status, headers);
    res.end(text);
  }
  const sendError = (res, status, code, message) => send(res, status, {code, message});

  function plain(res, status, body) {
    const text = JSON.stringify(body);
    res.writeHead(status, {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text)});
    res.end(text);
  }

  // The Authorization header (https://wechatpay-api.gitbook.io/wechatpay-api-v3/qian-ming-zhi-nan-1/qian-ming-sheng-cheng).
  function authorized(req, target, raw) {
    const m = /^WECHATPAY2-SHA256-RSA2048\s+(.+)$/.exec(req.headers.authorization || '');
    if (!m) return 'no WECHATPAY2-SHA256-RSA2048 Authorization';
    const fields = {};
    for (const part of m[1].matchAll(/(\w+)="([^"]*)"/g)) fields[part[1]] = part[2];
    if (fields.mchid !== settings.mchid) return `mchid ${fields.mchid}`;
    if (fields.serial_no !== settings.merchantSerial) return `serial_no ${fields.serial_no}`;
    if (!fields.nonce_str || !fields.signature || !/^\d+$/.test(fields.timestamp || '')) return 'incomplete Authorization';
    if (Math.abs(Date.now() / 1000 - Number(fields.timestamp)) > 300) return 'timestamp too far from now';
    const message = `${req.method}\n${target}\n${fields.timestamp}\n${fields.nonce_str}\n${raw}\n`;
    let ok = false;
    try { ok = crypto.createVerify('RSA-SHA256').update(message).verify(merchantPublicKey, fields.signature, 'base64'); } catch { ok = false; }
    return ok ? null : 'signature does not verify';
  }

  function route(method, url, query) {
    let m;
    if (method === 'POST' && (m = /^\/v3\/pay\/transactions\/(native|jsapi|codepay)$/.exec(url)))
      return {name: m[1], run: (body, now) => wechat.createOrder(ledger, settings, m[1], body, now)};
    if (method === 'GET' && (m = /^\/v3\/pay\/transactions\/out-trade-no\/([^/]+)$/.exec(url)))
      return {name: 'query', run: () => wechat.query(ledger, settings, decodeURIComponent(m[1]), query.get('mchid'))};
    if (method === 'POST' && (m = /^\/v3\/pay\/transactions\/out-trade-no\/([^/]+)\/close$/.exec(url)))
      return {name: 'close', run: (body, now) => wechat.close(ledger, settings, decodeURIComponent(m[1]), body, now)};
    if (method === 'POST' && url === '/v3/refund/domestic/refunds')
      return {name: 'refund', run: (body, now) => wechat.createRefund(ledger, settings, body, now)};
    if (method === 'GET' && (m = /^\/v3\/refund\/domestic\/refunds\/([^/]+)$/.exec(url)))
      return {name: 'refund_query', run: () => wechat.queryRefund(ledger, decodeURIComponent(m[1]))};
    return null;
  }

  function takeFault(url) {
    if (!fault.mode || fault.count === 0) return null;
    if (fault.path && !new RegExp(fault.path).test(url)) return null;
    if (fault.count > 0) fault.count -= 1;
    return {...fault};
  }

  async function api(req, res, raw, target, url, query) {
    stats.requests += 1;
    const refusal = authorized(req, target, raw);
    if (refusal) {
      stats.refused_signatures += 1;
      return sendError(res, 401, 'SIGN_ERROR', `签名错误: ${refusal}`);
    }
    const handler = route(req.method, url, query);
    if (!handler) return sendError(res, 404, 'NOT_FOUND', '请求的资源不存在');
    let body = {};
    if (req.method === 'POST') {
      try { body = JSON.parse(raw); } catch { return sendError(res, 400, 'PARAM_ERROR', '请求体不是合法的JSON'); }
      const problems = schema.validateRequest(handler.name, body);
      if (problems.length) {
        schemaProblems.push(...problems);
        return sendError(res, 400, 'PARAM_ERROR', problems.join('; '));
      }
    }
    const f = takeFault(url);
    if (f && f.mode === 'fail_before_commit') return sendError(res, 500, 'SYSTEM_ERROR', '系统异常，请稍后重试');
    if (f && f.mode === 'delayed_commit') {
      setTimeout(() => { const later = handler.run(body, Date.now()); if (later.status < 300) apply(later); }, f.delay_ms || 500);
      return sendError(res, 500, 'SYSTEM_ERROR', '系统异常，请稍后重试');
    }
    if (f && f.mode === 'latency') await sleep(f.delay_ms || 500);
    const result = handler.run(body, Date.now());
    if (handler.name === 'close') {
      stats.closes += 1;
      if (result.body && result.body.code === 'RULE_LIMIT') stats.early_closes_refused += 1;
    }
    if (result.status < 300) apply(result);
    if (f && f.mode === 'commit_then_5xx') return sendError(res, 500, 'SYSTEM_ERROR', '系统异常，请稍后重试');
    if (f && f.mode === 'commit_then_hang') {
      if (f.delay_ms) setTimeout(() => req.socket.destroy(), f.delay_ms);
      return undefined;
    }
    return send(res, result.status, result.body);
  }

  async function control(req, res, raw, url) {
    if (req.method === 'GET' && url === '/_emu/ledger') return plain(res, 200, ledger.snapshot());
    if (req.method === 'GET' && url === '/_emu/schema_problems') return plain(res, 200, schemaProblems);
    if (req.method === 'GET' && url === '/_emu/stats') return plain(res, 200, {...stats, notification_posts: notifier.posts});
    let body;
    try { body = JSON.parse(raw || '{}'); } catch { return plain(res, 400, {error: 'bad json'}); }
    if (req.method !== 'POST') return plain(res, 404, {error: 'no such control'});
    switch (url) {
      case '/_emu/pay': {
        const result = wechat.pay(ledger, body.out_trade_no, Date.now());
        if (result.status < 300) apply(result);
        return plain(res, result.status, result.body);
      }
      case '/_emu/refund_outcome': {
        const result = wechat.settleRefund(ledger, settings, body.out_refund_no, body.status, Date.now());
        if (result.status < 300) apply(result);
        return plain(res, result.status, result.body);
      }
      case '/_emu/settings':
        for (const k of ['close_min_delay_ms', 'refund_delay_ms', 'auto_refund_status']) if (k in body) settings[k] = body[k];
        return plain(res, 200, settings);
      case '/_emu/faults': {
        const modes = ['fail_before_commit', 'commit_then_5xx', 'commit_then_hang', 'delayed_commit', 'latency', null];
        if (!modes.includes(body.mode ?? null)) return plain(res, 400, {error: `unknown mode ${body.mode}`});
        fault = {mode: body.mode ?? null, count: body.count ?? 1, delay_ms: body.delay_ms ?? 0, path: body.path ?? null};
        return plain(res, 200, fault);
      }
      case '/_emu/notify_url':
        notifier.overrideUrl = body.url || null;
        notifier.kickAll();
        return plain(res, 200, {url: notifier.overrideUrl});
      case '/_emu/notify_schedule':
        notifier.scale = Number(body.scale);
        return plain(res, 200, {scale: notifier.scale});
      case '/_emu/switches':
        for (const k of Object.keys(switches)) if (k in body) switches[k] = Boolean(body[k]);
        if (!switches.hold_notifications) notifier.kickAll();
        return plain(res, 200, switches);
      case '/_emu/release_notifications':
        await notifier.release(Boolean(body.reverse));
        return plain(res, 200, ledger.snapshot().notifications);
      default:
        return plain(res, 404, {error: 'no such control'});
    }
  }

  function onRequest(req, res) {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const parsed = new URL(req.url, 'http://emulator');
      const url = parsed.pathname;
      const done = url.startsWith('/_emu/') ? control(req, res, raw, url) : api(req, res, raw, req.url, url, parsed.searchParams);
      done.catch((err) => {
        process.stderr.write(`wechatpay emulator: ${err.stack}\n`);
        if (!res.headersSent) sendError(res, 500, 'SYSTEM_ERROR', 'emulator error');
      });
    });
  }

  const server = http.createServer(onRequest);
  listenWithPortFile(server, args.listen, args['port-file']);
  const stop = () => { notifier.stop(); server.close(); server.closeAllConnections?.(); process.exit(0); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main();
