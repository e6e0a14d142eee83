'use strict';
// Prints a standard notification whose items are signed by @adyen/api-library's HmacValidator:
//   node sign_notification.js HEX_KEY '<JSON array of NotificationRequestItem>'
// payorch's adapter tests feed the output to providers/adyen, so that its HMAC is checked
// against Adyen's own implementation rather than only against itself.
const {hmacValidator: HmacValidator} = require('@adyen/api-library');

const [key, itemsJson] = process.argv.slice(2);
const validator = new HmacValidator();
const items = JSON.parse(itemsJson).map((item) => {
  const signed = {...item, additionalData: {...(item.additionalData || {})}};
  signed.additionalData.hmacSignature = validator.calculateHmac(signed, key);
  return {NotificationRequestItem: signed};
});
process.stdout.write(JSON.stringify({live: 'false', notificationItems: items}));
