'use strict';
// Starts the Stripe emulator as a process (real socket, real ledger file) and a webhook
// receiver, for stripe.test.js.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const API_KEY = 'sk_test_emulator';
const WEBHOOK_SECRET = 'whsec_emulator';

// A webhook endpoint that records each delivery (raw body and Stripe-Signature) and answers
// with `status()` (200 unless changed).
async function startReceiver() {
  const deliveries = [];
  const receiver = { deliveries, status: () => 200 };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const code = receiver.status();
      deliveries.push({ body: Buffer.concat(chunks).toString('utf8'), signature: req.headers['stripe-signature'], answered: code });
      res.writeHead(code).end();
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  receiver.url = `http://127.0.0.1:${server.address().port}/webhook`;
  receiver.close = () => new Promise((r) => server.close(r));
  return receiver;
}

async function waitFor(predicate, what, timeoutMs = 10000) {
  const until = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

// Starts server.js on port 0 with `ledger` (a fresh file unless given) and returns
// {port, baseUrl, ledger, stop(), control(path, body)}.
async function startEmulator({ webhookUrl, ledger, actionDelayMs = 200 } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stripe-emu-'));
  const portFile = path.join(dir, 'port');
  ledger = ledger ?? path.join(dir, 'ledger.jsonl');
  const args = [path.join(__dirname, 'server.js'), '--listen', '127.0.0.1:0', '--port-file', portFile,
    '--ledger', ledger, '--api-key', API_KEY, '--webhook-secret', WEBHOOK_SECRET,
    '--action-delay-ms', String(actionDelayMs)];
  if (webhookUrl) args.push('--webhook-url', webhookUrl);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise((r) => child.on('exit', r));
  await waitFor(() => fs.existsSync(portFile), 'the emulator port file');
  const port = Number(fs.readFileSync(portFile, 'utf8'));
  const baseUrl = `http://127.0.0.1:${port}`;
  const control = async (p, body) => {
    const res = await fetch(baseUrl + p, body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) });
    return res.json();
  };
  const stop = async (signal = 'SIGTERM') => { child.kill(signal); await exited; };
  return { port, baseUrl, ledger, control, stop };
}

module.exports = { API_KEY, WEBHOOK_SECRET, startEmulator, startReceiver, waitFor };
