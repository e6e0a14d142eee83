'use strict';
// Test harness for the Adyen emulator: a throwaway TLS certificate, the emulator as a child
// process, a webhook receiver that checks every item with @adyen/api-library's HmacValidator,
// and raw HTTPS calls for schema checks.
const {execFileSync, spawn} = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');

const {hmacValidator: HmacValidator} = require('@adyen/api-library');

const {waitFor} = require('../shared');

const hmacKey = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
const apiKey = 'AQE_emulator_test_key';
const merchantAccount = 'PayorchECOM';

function tempDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'adyen-emu-'));
}

// A self-signed certificate whose CN the library's checkServerIdentity accepts (it pins
// *.test.terminal.adyen.com names when a certificatePath is given).
function makeCertificate(dir) {
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert,
    '-days', '1', '-subj', '/CN=emulator-adyen.test.terminal.adyen.com',
    '-addext', 'subjectAltName=IP:127.0.0.1'], {stdio: 'ignore'});
  return {cert, key};
}

// Receives notifications; answers "[accepted]" only when every item's HMAC holds under `key`,
// and refuses the first `refuse` deliveries with a 500 to exercise the emulator's retries.
async function startReceiver({key = hmacKey, refuse = 0} = {}) {
  const validator = new HmacValidator();
  const receiver = {items: [], deliveries: 0, rejected: 0, bodies: []};
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => { raw += c; });
    req.on('end', () => {
      receiver.deliveries += 1;
      if (receiver.deliveries <= refuse) { res.writeHead(500); res.end('busy'); return; }
      const body = JSON.parse(raw);
      const items = body.notificationItems.map((i) => i.NotificationRequestItem);
      if (!items.every((item) => validator.validateHMAC(item, key))) {
        receiver.rejected += 1;
        res.writeHead(401); res.end('bad signature'); return;
      }
      receiver.bodies.push(raw);
      receiver.items.push(...items);
      res.writeHead(200, {'Content-Type': 'text/plain'});
      res.end('[accepted]');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  receiver.url = `http://127.0.0.1:${server.address().port}/webhooks/adyen`;
  receiver.close = () => new Promise((r) => { server.closeAllConnections(); server.close(r); });
  return receiver;
}

async function startEmulator({dir, tls, webhookUrl, ledger = path.join(dir, 'ledger.jsonl'), extra = []}) {
  const portFile = path.join(dir, `port-${Date.now()}-${Math.random()}`);
  const args = [path.join(__dirname, 'server.js'), '--listen', '127.0.0.1:0', '--port-file', portFile,
    '--ledger', ledger, '--hmac-key', hmacKey, '--api-key', apiKey, '--received-delay-ms', '100', ...extra];
  if (webhookUrl) args.push('--webhook-url', webhookUrl);
  if (tls) args.push('--tls-cert', tls.cert, '--tls-key', tls.key);
  const proc = spawn(process.execPath, args, {stdio: ['ignore', 'inherit', 'inherit']});
  const port = await waitFor(() => fs.existsSync(portFile) && Number(fs.readFileSync(portFile, 'utf8')),
    {what: 'the emulator port file'});
  const scheme = tls ? 'https' : 'http';
  return {
    proc, port, ledger,
    base: `${scheme}://127.0.0.1:${port}`,
    stop: () => new Promise((r) => { if (proc.exitCode !== null) return r(); proc.once('exit', r); proc.kill('SIGTERM'); }),
  };
}

// A raw request to the emulator: {status, headers, body (parsed JSON or text)}.
function raw(emulator, tls, method, urlPath, {body, headers = {}} = {}) {
  const text = body === undefined ? '' : JSON.stringify(body);
  const url = new URL(urlPath, emulator.base);
  const transport = url.protocol === 'https:' ? https : http;
  const options = {method, headers: {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers}};
  if (tls) { options.ca = fs.readFileSync(tls.cert); }
  return new Promise((resolve, reject) => {
    const req = transport.request(url, options, (res) => {
      let data = '';
      res.on('data', (c) => { data += c; });
      res.on('end', () => {
        let parsed = data;
        try { parsed = JSON.parse(data); } catch { /* text */ }
        resolve({status: res.statusCode, headers: res.headers, body: parsed});
      });
    });
    req.on('error', reject);
    req.end(text);
  });
}

module.exports = {hmacKey, apiKey, merchantAccount, tempDir, makeCertificate, waitFor, startReceiver, startEmulator, raw};
