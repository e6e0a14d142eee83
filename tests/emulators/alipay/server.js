'use strict';
// An emulator of Alipay's OpenAPI gateway for payorch's tests (Node standard library only):
//   node server.js --listen 127.0.0.1:0 --port-file F --app-id ID --app-public-key PEM_FILE
//                  --alipay-private-key PEM_FILE [--min-close-delay-ms N] [--tls-cert PEM --tls-key PEM]
// POST /gateway.do with the common parameters (app_id, method, format, charset, sign_type,
// timestamp, version, notify_url, biz_content, sign) in the query string and/or a form body, as
// alipay-sdk sends them (signatures: gateway.js). Methods (trades.js): alipay.trade.pay,
// alipay.trade.precreate, alipay.trade.query, alipay.trade.close, alipay.trade.refund,
// alipay.trade.fastpay.refund.query. Gateway refusals (公共错误码,
// https://opendocs.alipay.com/common/02km9f): 40001 isv.missing-method / -app-id / -signature /
// -signature-type / -timestamp / -version; 40002 isv.invalid-app-id, isv.invalid-signature-type,
// isv.invalid-signature, isv.invalid-method. Every answer is signed with the Alipay key.
// Test controls (no signature):
//   POST /_emu/faults {mode, count, delay_ms, method}: the next `count` gateway calls (-1:
//     every one) whose method matches the regular expression `method` (any when absent):
//     fail_before_commit  HTTP 500, nothing done
//     commit_then_5xx     done, then HTTP 500
//     commit_then_hang    done, then no answer (socket closed after delay_ms when given)
//     delayed_commit      held for delay_ms, then done and answered
//     latency             done at once, answered after delay_ms
//     refund_not_done     alipay.trade.refund answers 10000 with fund_change "N" and refunds
//                         nothing (the refund query then finds no refund data)
//   POST /_emu/pay {out_trade_no}     the buyer pays (a precreate QR code is scanned first);
//                                     409 when the trade is not waiting for payment
//   POST /_emu/scan {out_trade_no}    the buyer scans a precreate QR code
//   POST /_emu/switches {duplicate, reorder, retry_scale}   notifications
//   POST /_emu/notify_url {url}       where notifications go from now on (any request's own
//                                     notify_url otherwise)
//   POST /_emu/min_close_delay {ms}   a close of a younger trade is refused (ACQ.SYSTEM_ERROR)
//   GET  /_emu/ledger                 trades, refunds, closes (with their age), notification deliveries
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');

const {parseArgs, listenWithPortFile, sleep} = require('../shared');
const gw = require('./gateway');
const {Trades} = require('./trades');
const {Notifier} = require('./notify');


function sendJson(res, status, body) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {'Content-Type': 'application/json;charset=utf-8', 'Content-Length': Buffer.byteLength(text)});
  res.end(text);
}

const methods = {
  'alipay.trade.pay': (trades, biz, params) => trades.create(biz, 'pay', params.notify_url),
  'alipay.trade.precreate': (trades, biz, params) => trades.create(biz, 'precreate', params.notify_url),
  'alipay.trade.query': (trades, biz) => trades.query(biz),
  'alipay.trade.close': (trades, biz) => trades.close(biz),
  'alipay.trade.refund': (trades, biz) => trades.refund(biz),
  'alipay.trade.fastpay.refund.query': (trades, biz) => trades.refundQuery(biz),
};

function main() {
  const args = parseArgs(process.argv.slice(2),
                         ['listen', 'port-file', 'app-id', 'app-public-key', 'alipay-private-key']);
  const appPublicKey = fs.readFileSync(args['app-public-key'], 'utf8');
  const alipayPrivateKey = fs.readFileSync(args['alipay-private-key'], 'utf8');
  const trades = new Trades({appId: args['app-id'], minCloseDelayMs: Number(args['min-close-delay-ms'] || 0)});
  const switches = {duplicate: false, reorder: false, retry_scale: 1};
  const notifier = new Notifier({alipayPrivateKey, switches});
  let fault = {mode: null, count: 0, delay_ms: 0, method: null};

  function takeFault(method) {
    if (!fault.mode || fault.count === 0) return null;
    if (fault.method && !new RegExp(fault.method).test(method)) return null;
    if (fault.count > 0) fault.count -= 1;
    return {...fault};
  }

  // The gateway's checks before any method runs; a response member, or null when they pass.
  function refusal(params) {
    const missing = [['method', 'isv.missing-method', '缺少方法名参数'], ['app_id', 'isv.missing-app-id', '缺少appId参数'],
      ['sign', 'isv.missing-signature', '缺少签名参数'], ['sign_type', 'isv.missing-signature-type', '缺少签名类型参数'],
      ['timestamp', 'isv.missing-timestamp', '缺少时间戳参数'], ['version', 'isv.missing-version', '缺少版本参数']];
    for (const [name, code, msg] of missing) if (!params[name]) return gw.missingArguments(code, msg);
    if (params.app_id !== args['app-id']) return gw.invalidArguments('isv.invalid-app-id', '无效的AppID参数');
    if (params.sign_type !== 'RSA2') return gw.invalidArguments('isv.invalid-signature-type', '无效的签名类型');
    if (!gw.verify(appPublicKey, gw.signingContent(params), params.sign))
      return gw.invalidArguments('isv.invalid-signature', '验签出错');
    if (!methods[params.method]) return gw.invalidArguments('isv.invalid-method', '不存在的方法名');
    return null;
  }

  async function gateway(req, res, raw, query) {
    const params = {};
    for (const [k, v] of query) params[k] = v;
    for (const [k, v] of new URLSearchParams(raw)) params[k] = v;
    const method = params.method || '';
    // An unknown method is answered as error_response.
    const answer = (response) => sendJson(res, 200,
      gw.answerText(alipayPrivateKey, methods[method] ? method : 'error', response));
    const refused = refusal(params);
    if (refused) return answer(refused);
    let biz;
    try { biz = JSON.parse(params.biz_content || '{}'); } catch { biz = null; }
    if (!biz || typeof biz !== 'object') return answer(gw.businessFailed('ACQ.INVALID_PARAMETER', '参数无效'));
    const f = takeFault(method);
    if (f && f.mode === 'fail_before_commit') return sendJson(res, 500, 'gateway error');
    if (f && f.mode === 'delayed_commit') await sleep(f.delay_ms || 500);
    if (f && f.mode === 'refund_not_done' && method === 'alipay.trade.refund') return answer(trades.refundNotDone(biz));
    const result = methods[method](trades, biz, params);
    for (const n of result.notify) notifier.queue(n);
    if (f && f.mode === 'commit_then_5xx') return sendJson(res, 500, 'gateway error');
    if (f && f.mode === 'commit_then_hang') {
      if (f.delay_ms) setTimeout(() => req.socket.destroy(), f.delay_ms);
      return undefined;
    }
    if (f && f.mode === 'latency') await sleep(f.delay_ms || 500);
    return answer(result.response);
  }

  function control(req, res, raw, url) {
    if (req.method === 'GET' && url === '/_emu/ledger')
      return sendJson(res, 200, {...trades.snapshot(), deliveries: notifier.deliveries, switches, fault});
    let body;
    try { body = JSON.parse(raw || '{}'); } catch { return sendJson(res, 400, {error: 'bad json'}); }
    if (req.method !== 'POST') return sendJson(res, 404, {error: 'no such control'});
    if (url === '/_emu/faults') {
      const modes = ['fail_before_commit', 'commit_then_5xx', 'commit_then_hang', 'delayed_commit', 'latency',
        'refund_not_done', null];
      if (!modes.includes(body.mode ?? null)) return sendJson(res, 400, {error: `unknown mode ${body.mode}`});
      fault = {mode: body.mode ?? null, count: body.count ?? 1, delay_ms: body.delay_ms ?? 0, method: body.method ?? null};
      return sendJson(res, 200, fault);
    }
    if (url === '/_emu/pay') {
      const r = trades.pay(body.out_trade_no);
      if (r.error) return sendJson(res, r.status, {error: r.error});
      for (const n of r.notify) notifier.queue(n);
      return sendJson(res, 200, {out_trade_no: r.trade.out_trade_no, trade_status: r.trade.status});
    }
    if (url === '/_emu/scan') {
      const r = trades.scan(body.out_trade_no);
      if (r.error) return sendJson(res, r.status || 404, {error: r.error});
      return sendJson(res, 200, {out_trade_no: r.trade.out_trade_no, trade_status: r.trade.status});
    }
    if (url === '/_emu/switches') {
      if ('duplicate' in body) switches.duplicate = Boolean(body.duplicate);
      if ('reorder' in body) switches.reorder = Boolean(body.reorder);
      if ('retry_scale' in body) switches.retry_scale = Number(body.retry_scale);
      return sendJson(res, 200, switches);
    }
    if (url === '/_emu/notify_url') {
      notifier.override = body.url || null;
      return sendJson(res, 200, {url: notifier.override});
    }
    if (url === '/_emu/min_close_delay') {
      trades.minCloseDelayMs = Number(body.ms || 0);
      return sendJson(res, 200, {ms: trades.minCloseDelayMs});
    }
    return sendJson(res, 404, {error: 'no such control'});
  }

  function onRequest(req, res) {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url, 'http://emulator');
      if (url.pathname.startsWith('/_emu/')) return control(req, res, raw, url.pathname);
      if (req.method !== 'POST' || url.pathname !== '/gateway.do') return sendJson(res, 404, 'not found');
      gateway(req, res, raw, url.searchParams).catch((err) => {
        process.stderr.write(`alipay emulator: ${err.stack}\n`);
        if (!res.headersSent) sendJson(res, 500, 'emulator error');
      });
      return undefined;
    });
  }

  const server = args['tls-cert']
    ? https.createServer({cert: fs.readFileSync(args['tls-cert']), key: fs.readFileSync(args['tls-key'])}, onRequest)
    : http.createServer(onRequest);
  listenWithPortFile(server, args.listen, args['port-file']);
  const stop = () => { notifier.stop(); server.close(); server.closeAllConnections?.(); process.exit(0); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main();
