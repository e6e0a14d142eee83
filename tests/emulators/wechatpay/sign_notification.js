'use strict';
// A WeChat Pay API v3 notification built with wechatpay-axios-plugin's helpers, for payorch's
// C++ tests (support/wechatpay_emulator.h):
//   node sign_notification.js EVENT_TYPE RESOURCE_JSON [TIMESTAMP]
// prints {"headers": {Wechatpay-*}, "body": "…"}: the resource encrypted with Aes.AesGcm under
// the test APIv3 key, the body signed with Rsa.sign over Formatter.response with the test
// platform key.
const crypto = require('node:crypto');
const {Rsa, Aes, Formatter} = require('wechatpay-axios-plugin');
const {apiV3Key, key, platformSerial} = require('./harness');

const [eventType, resourceJson, timestampArg] = process.argv.slice(2);
const nonce = crypto.randomBytes(6).toString('hex');
const aad = 'transaction';
const body = JSON.stringify({
  id: `EV-${crypto.randomUUID()}`, create_time: '2026-12-02T10:00:00+08:00', resource_type: 'encrypt-resource',
  event_type: eventType, summary: 'payorch test',
  resource: {original_type: eventType.startsWith('REFUND') ? 'refund' : 'transaction', algorithm: 'AEAD_AES_256_GCM',
    ciphertext: Aes.AesGcm.encrypt(resourceJson, apiV3Key, nonce, aad), associated_data: aad, nonce},
});
const timestamp = timestampArg || String(Formatter.timestamp());
const headerNonce = Formatter.nonce();
const signature = Rsa.sign(Formatter.response(timestamp, headerNonce, body), Rsa.from(key('platform_private.pem')));
process.stdout.write(JSON.stringify({headers: {'wechatpay-timestamp': timestamp, 'wechatpay-nonce': headerNonce,
  'wechatpay-signature': signature, 'wechatpay-serial': platformSerial}, body}));
