'use strict';
// Test harness for the WeChat Pay emulator: the emulator as a child process, a notification
// receiver that checks every delivery with wechatpay-axios-plugin's Rsa/Formatter and decrypts
// it with its Aes helper, and the library's client configured with the test keys.
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const {spawn} = require('node:child_process');

const {Wechatpay, Rsa, Aes, Formatter} = require('wechatpay-axios-plugin');

const {waitFor} = require('../shared');

const keysDir = path.join(__dirname, 'keys');
const mchid = '1900000109';
const appid = 'wxd678efh567hg6787';
const merchantSerial = 'MERCHANT0SERIAL0TEST';
const platformSerial = 'PLATFORM0SERIAL0TEST';
const apiV3Key = fs.readFileSync(path.join(keysDir, 'api_v3_key.txt'), 'utf8').trim();
const key = (name) => fs.readFileSync(path.join(keysDir, name), 'utf8');

function tempDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'wechatpay-emu-'));
}

// The library's client for the emulator, signing with `privateKey` (the merchant's by default).
function client(emulator, {privateKey = key('merchant_private.pem')} = {}) {
  return new Wechatpay({
    mchid, serial: merchantSerial, privateKey,
    certs: {[platformSerial]: key('platform_public.pem')},
    baseURL: `${emulator.base}/`,
  });
}

// Receives notifications; answers 204 when the library's helpers verify the signature and
// decrypt the resource, 401 otherwise; refuses the first `refuse` deliveries with a 500.
async function startReceiver({refuse = 0} = {}) {
  const receiver = {events: [], deliveries: 0, rejected: 0, times: []};
  const platformKey = Rsa.from(key('platform_public.pem'), Rsa.KEY_TYPE_PUBLIC);
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => { raw += c; });
    req.on('end', () => {
      receiver.deliveries += 1;
      receiver.times.push(Date.now());
      if (receiver.deliveries <= refuse) { res.writeHead(500); res.end(); return; }
      const h = req.headers;
      const ok = h['wechatpay-serial'] === platformSerial &&
        Rsa.verify(Formatter.response(h['wechatpay-timestamp'], h['wechatpay-nonce'], raw), h['wechatpay-signature'], platformKey);
      if (!ok) { receiver.rejected += 1; res.writeHead(401); res.end(); return; }
      const body = JSON.parse(raw);
      const {ciphertext, nonce, associated_data: aad} = body.resource;
      receiver.events.push({...body, plain: JSON.parse(Aes.AesGcm.decrypt(ciphertext, apiV3Key, nonce, aad))});
      res.writeHead(204);
      res.end();
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  receiver.url = `http://127.0.0.1:${server.address().port}/callbacks/wechatpay`;
  receiver.close = () => new Promise((r) => { server.closeAllConnections(); server.close(r); });
  return receiver;
}

async function startEmulator({dir, extra = []}) {
  const portFile = path.join(dir, `port-${Date.now()}-${Math.random()}`);
  const args = [path.join(__dirname, 'server.js'), '--listen', '127.0.0.1:0', '--port-file', portFile,
    '--ledger', path.join(dir, 'ledger.jsonl'), ...extra];
  const proc = spawn(process.execPath, args, {stdio: ['ignore', 'inherit', 'inherit']});
  const port = await waitFor(() => fs.existsSync(portFile) && Number(fs.readFileSync(portFile, 'utf8')),
    {what: 'the emulator port file'});
  return {
    proc, port, base: `http://127.0.0.1:${port}`,
    stop: () => new Promise((r) => { if (proc.exitCode !== null) return r(); proc.once('exit', r); proc.kill('SIGTERM'); }),
  };
}

// A control call: {status, body}.
async function control(emulator, urlPath, body) {
  const res = await fetch(`${emulator.base}${urlPath}`, body === undefined ? {} : {
    method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body)});
  return {status: res.status, body: await res.json()};
}

module.exports = {keysDir, mchid, appid, merchantSerial, platformSerial, apiV3Key, key, tempDir, waitFor, client,
  startReceiver, startEmulator, control};
