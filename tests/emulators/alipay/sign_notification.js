'use strict';
// Prints an Alipay asynchronous notification as a form body, signed RSA2 with the emulator's
// test "Alipay" key over the parameters other than sign and sign_type (gateway.js), after
// checking that alipay-sdk's checkNotifySignV2 accepts it with the Alipay public key: a
// notification the official SDK believes, for payorch's callback tests.
//   node sign_notification.js '<JSON object of notification parameters>'
const fs = require('node:fs');
const path = require('node:path');

const {AlipaySdk} = require('alipay-sdk');
const {sign, signingContent} = require('./gateway');
const {formEncode} = require('./notify');

const keys = (name) => fs.readFileSync(path.join(__dirname, 'keys', name), 'utf8');
const params = JSON.parse(process.argv[2]);
// Empty values are signed too: that is how alipay-sdk's checkNotifySignV2 reads them.
params.sign = sign(keys('alipay_private.pem'), signingContent(params, {dropSignType: true, keepEmpty: true}));
const sdk = new AlipaySdk({appId: params.app_id || 'x', privateKey: keys('app_private.pem'), keyType: 'PKCS8',
  alipayPublicKey: keys('alipay_public.pem')});
if (!sdk.checkNotifySignV2({...params})) {
  process.stderr.write('alipay-sdk refuses the notification\n');
  process.exit(1);
}
process.stdout.write(formEncode(params));
