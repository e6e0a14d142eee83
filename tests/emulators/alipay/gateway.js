'use strict';
// The OpenAPI gateway's signatures, as the emulator of Alipay applies them
// ("OpenAPI 2.0 签名", https://opendocs.alipay.com/common/02kf5q; alipay-sdk 4.14.0 does the
// same on the client side):
// - a request is signed RSA2 (SHA256WithRSA, base64) by the app's private key over its
//   parameters other than `sign`, non-empty, sorted by name, written k=v&k=v;
// - an answer {"<method>_response": {...}, "sign": "..."} is signed by Alipay's private key
//   over the response member's JSON text, exactly as it is written in the body;
// - a notification is signed by Alipay's private key over its parameters other than sign and
//   sign_type, sorted, k=v&k=v (url-decoded values).
const crypto = require('node:crypto');

// `keepEmpty`: empty values written too ("k="), as alipay-sdk's checkNotifySign reads them.
function signingContent(params, {dropSignType = false, keepEmpty = false} = {}) {
  return Object.keys(params).sort()
    .filter((k) => k !== 'sign' && !(dropSignType && k === 'sign_type') && params[k] !== undefined &&
      (keepEmpty || params[k] !== ''))
    .map((k) => `${k}=${params[k]}`)
    .join('&');
}

function sign(privateKeyPem, content) {
  return crypto.createSign('RSA-SHA256').update(content, 'utf8').sign(privateKeyPem, 'base64');
}

function verify(publicKeyPem, content, signature) {
  try {
    return crypto.createVerify('RSA-SHA256').update(content, 'utf8').verify(publicKeyPem, signature, 'base64');
  } catch {
    return false;
  }
}

const responseKey = (method) => `${method.replaceAll('.', '_')}_response`;

// The body text of an answer to `method`: the member's text is what the signature covers.
function answerText(alipayPrivateKey, method, response) {
  const text = JSON.stringify(response);
  return `{"${responseKey(method)}":${text},"sign":"${sign(alipayPrivateKey, text)}"}`;
}

const ok = (fields = {}) => ({code: '10000', msg: 'Success', ...fields});
// 40004 业务处理失败 with the API's sub_code.
const businessFailed = (subCode, subMsg, fields = {}) =>
  ({code: '40004', msg: 'Business Failed', sub_code: subCode, sub_msg: subMsg, ...fields});
const missingArguments = (subCode, subMsg) => ({code: '40001', msg: 'Missing Required Arguments', sub_code: subCode, sub_msg: subMsg});
const invalidArguments = (subCode, subMsg) => ({code: '40002', msg: 'Invalid Arguments', sub_code: subCode, sub_msg: subMsg});

// "12.34" for 1234; the OpenAPI writes CNY amounts in yuan with two decimals.
const yuan = (minor) => `${Math.floor(minor / 100)}.${String(minor % 100).padStart(2, '0')}`;
// 1234 for "12.34" / "12.3" / "12"; null for anything else.
function minorOf(text) {
  if (typeof text !== 'string' || !/^\d{1,15}(\.\d{1,2})?$/.test(text)) return null;
  const [whole, fraction = ''] = text.split('.');
  return Number(whole) * 100 + Number(fraction.padEnd(2, '0'));
}

// "yyyy-MM-dd HH:mm:ss" in China Standard Time (UTC+8).
function beijingTime(ms = Date.now()) {
  return new Date(ms + 8 * 3600 * 1000).toISOString().replace('T', ' ').slice(0, 19);
}

module.exports = {signingContent, sign, verify, responseKey, answerText, ok, businessFailed,
  missingArguments, invalidArguments, yuan, minorOf, beijingTime};
