'use strict';
// A minimal JSON-schema check for the subset CheckoutService-v71.json uses in the answers the
// emulator gives: type, required, properties, additionalProperties (false or a schema), enum,
// minLength/maxLength, items and $ref (#/components/schemas/…). Returns a list of problems.
const fs = require('node:fs');
const path = require('node:path');

const {typeOk} = require('../shared');

// The schemas extract_schemas.js took from CheckoutService-v71.json; ADYEN_CHECKOUT_SPEC may
// name the whole spec instead.
const specPath = path.join(__dirname, 'checkout-v71-schemas.json');

function loadSpec(file = process.env.ADYEN_CHECKOUT_SPEC || specPath) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

function check(spec, schema, value, where = '$', problems = []) {
  if (schema.$ref) {
    const name = schema.$ref.replace('#/components/schemas/', '');
    const target = spec.components.schemas[name];
    if (!target) { problems.push(`${where}: unknown $ref ${schema.$ref}`); return problems; }
    return check(spec, target, value, where, problems);
  }
  if (schema.type && !typeOk(schema.type, value)) {
    problems.push(`${where}: expected ${schema.type}, got ${JSON.stringify(value)}`);
    return problems;
  }
  if (schema.enum && !schema.enum.includes(value)) problems.push(`${where}: ${JSON.stringify(value)} not in enum`);
  if (typeof value === 'string') {
    if (schema.minLength !== undefined && value.length < schema.minLength) problems.push(`${where}: shorter than ${schema.minLength}`);
    if (schema.maxLength !== undefined && value.length > schema.maxLength) problems.push(`${where}: longer than ${schema.maxLength}`);
  }
  if (Array.isArray(value) && schema.items) value.forEach((v, i) => check(spec, schema.items, v, `${where}[${i}]`, problems));
  if (typeOk('object', value) && (schema.properties || schema.required || schema.additionalProperties !== undefined)) {
    for (const r of schema.required || []) if (!(r in value)) problems.push(`${where}: missing required ${r}`);
    for (const [k, v] of Object.entries(value)) {
      if (schema.properties && schema.properties[k]) check(spec, schema.properties[k], v, `${where}.${k}`, problems);
      else if (schema.additionalProperties === false) problems.push(`${where}: unexpected property ${k}`);
      else if (schema.additionalProperties && typeof schema.additionalProperties === 'object')
        check(spec, schema.additionalProperties, v, `${where}.${k}`, problems);
    }
  }
  return problems;
}

// Problems of `value` as an instance of components.schemas[name].
function validate(spec, name, value) {
  return check(spec, {$ref: `#/components/schemas/${name}`}, value);
}

module.exports = {loadSpec, validate};
