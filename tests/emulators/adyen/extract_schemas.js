'use strict';
// Extracts from Adyen's CheckoutService-v71.json (Adyen/adyen-openapi, MIT licence, © Adyen
// B.V.) the schemas the emulator's answers are checked against, with everything they
// reference, into checkout-v71-schemas.json:
//   node extract_schemas.js /path/to/CheckoutService-v71.json > checkout-v71-schemas.json
const fs = require('node:fs');

const roots = ['PaymentResponse', 'PaymentRefundResponse', 'StandalonePaymentCancelResponse', 'ServiceError'];
const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const all = spec.components.schemas;
const keep = {};
function visit(name) {
  if (keep[name]) return;
  keep[name] = all[name];
  JSON.stringify(all[name], (k, v) => {
    if (k === '$ref' && typeof v === 'string') visit(v.replace('#/components/schemas/', ''));
    return v;
  });
}
roots.forEach(visit);
const out = {
  source: 'Adyen/adyen-openapi json/CheckoutService-v71.json (MIT licence, Copyright (c) 2017 Adyen bv)',
  info: {title: spec.info.title, version: spec.info.version},
  components: {schemas: Object.fromEntries(Object.keys(keep).sort().map((k) => [k, keep[k]]))},
};
process.stdout.write(JSON.stringify(out, null, 1) + '\n');
