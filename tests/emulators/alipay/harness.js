'use strict';
// Test harness for the Alipay emulator: the emulator as a child process, alipay-sdk clients
// pointed at it, and a notification receiver that checks every notification with alipay-sdk's
// checkNotifySignV2 and acknowledges with "success".
const {spawn} = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const {AlipaySdk} = require('alipay-sdk');

const {waitFor} = require('../shared');

const appId = '2021000000000001';
const keys = (name) => fs.readFileSync(path.join(__dirname, 'keys', name), 'utf8');
const appPrivateKey = keys('app_private.pem');
const alipayPublicKey = keys('alipay_public.pem');

function tempDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'alipay-emu-'));
}

function sdk(emulator, {privateKey = appPrivateKey, publicKey = alipayPublicKey, timeout = 5000} = {}) {
  return new AlipaySdk({appId, privateKey, alipayPublicKey: publicKey, keyType: 'PKCS8',
    gateway: `${emulator.base}/gateway.do`, timeout});
}

// Receives notifications; refuses the first `refuse` deliveries with "fail".
async function startReceiver({refuse = 0, client} = {}) {
  const receiver = {notifications: [], deliveries: 0, rejected: 0};
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => { raw += c; });
    req.on('end', () => {
      receiver.deliveries += 1;
      if (receiver.deliveries <= refuse) { res.writeHead(200); res.end('fail'); return; }
      const params = Object.fromEntries(new URLSearchParams(raw));
      if (!client.checkNotifySignV2(params)) { receiver.rejected += 1; res.writeHead(200); res.end('fail'); return; }
      receiver.notifications.push(params);
      res.writeHead(200, {'Content-Type': 'text/plain'});
      res.end('success');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  receiver.url = `http://127.0.0.1:${server.address().port}/v1/callbacks/alipay`;
  receiver.close = () => new Promise((r) => { server.closeAllConnections(); server.close(r); });
  return receiver;
}

async function startEmulator({dir, extra = []}) {
  const portFile = path.join(dir, `port-${Date.now()}-${Math.random()}`);
  const args = [path.join(__dirname, 'server.js'), '--listen', '127.0.0.1:0', '--port-file', portFile,
    '--app-id', appId, '--app-public-key', path.join(__dirname, 'keys', 'app_public.pem'),
    '--alipay-private-key', path.join(__dirname, 'keys', 'alipay_private.pem'), ...extra];
  const proc = spawn(process.execPath, args, {stdio: ['ignore', 'inherit', 'inherit']});
  const port = await waitFor(() => fs.existsSync(portFile) && Number(fs.readFileSync(portFile, 'utf8')),
    {what: 'the emulator port file'});
  const base = `http://127.0.0.1:${port}`;
  const control = async (route, body) => {
    const r = await fetch(`${base}${route}`, body === undefined ? {} : {method: 'POST', body: JSON.stringify(body)});
    return {status: r.status, body: await r.json()};
  };
  return {
    proc, port, base, control,
    stop: () => new Promise((r) => { if (proc.exitCode !== null) return r(); proc.once('exit', r); proc.kill('SIGTERM'); }),
  };
}

module.exports = {appId, appPrivateKey, alipayPublicKey, tempDir, waitFor, sdk, startReceiver, startEmulator};
