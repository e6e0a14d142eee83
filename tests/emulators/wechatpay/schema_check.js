'use strict';
// A minimal check of JSON values against the schemas extract_schemas.py took from the
// community OpenAPI description of WeChat Pay API v3 (wechatpay-v3-schemas.json): type,
// required, properties, enum, items and allOf. `strict` also reports members no schema names
// (for payorch's requests: every field it sends must be documented).
const fs = require('node:fs');
const path = require('node:path');

const {typeOk} = require('../shared');

const spec = JSON.parse(fs.readFileSync(path.join(__dirname, 'wechatpay-v3-schemas.json'), 'utf8'));

// The schema's own and its allOf branches' property schemas and required names.
function flatten(schema) {
  const properties = {};
  const required = [];
  const visit = (s) => {
    if (!s) return;
    Object.assign(properties, s.properties || {});
    required.push(...(s.required || []));
    (s.allOf || []).forEach(visit);
  };
  visit(schema);
  return {properties, required};
}

function check(schema, value, where, strict, problems) {
  if (!schema) return problems;
  if (schema.type && !typeOk(schema.type, value)) {
    problems.push(`${where}: expected ${schema.type}, got ${JSON.stringify(value)}`);
    return problems;
  }
  if (schema.enum && !schema.enum.includes(value)) problems.push(`${where}: ${JSON.stringify(value)} not in enum`);
  if (Array.isArray(value) && schema.items) value.forEach((v, i) => check(schema.items, v, `${where}[${i}]`, strict, problems));
  if (typeOk('object', value)) {
    const {properties, required} = flatten(schema);
    const typed = Object.keys(properties).length > 0 || required.length > 0;
    for (const r of required) if (!(r in value)) problems.push(`${where}: missing required ${r}`);
    for (const [k, v] of Object.entries(value)) {
      if (properties[k]) check(properties[k], v, `${where}.${k}`, strict, problems);
      else if (strict && typed) problems.push(`${where}: ${k} is not in the schema`);
    }
  }
  return problems;
}

// Where the community description is stricter than the official docs (which win): its query
// answer reuses the order's request base, whose required description and notify_url the
// official 查询订单 answer does not carry
// (https://pay.weixin.qq.com/doc/v3/merchant/4012556352 lists appid, mchid,
// out_trade_no, transaction_id, trade_type, trade_state, trade_state_desc, bank_type, attach,
// success_time, payer, amount, scene_info, promotion_detail).
const answerExemptions = {query: ['description', 'notify_url']};

// Problems of a request body (strict) or an answer body of endpoint `name`.
function validateRequest(name, value) {
  return check(spec.endpoints[name].request, value, `${name} request`, true, []);
}
function validateAnswer(name, value) {
  const exempt = answerExemptions[name] || [];
  return check(spec.endpoints[name].answer, value, `${name} answer`, false, [])
    .filter((p) => !exempt.some((field) => p === `${name} answer: missing required ${field}`));
}

module.exports = {spec, validateRequest, validateAnswer};
