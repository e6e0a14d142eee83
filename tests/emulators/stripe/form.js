'use strict';
// Stripe's form-encoded request bodies (https://docs.stripe.com/api): nested parameters in
// brackets, `metadata[client_key]=…`, `automatic_payment_methods[enabled]=true`, arrays as
// `payment_method_types[]=card` or `payment_method_types[0]=card`.

function parseForm(text) {
  const out = {};
  for (const [key, value] of new URLSearchParams(text)) {
    const m = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(key);
    if (!m) throw new Error(`unreadable parameter name ${key}`);
    const path = [m[1], ...[...m[2].matchAll(/\[([^[\]]*)\]/g)].map((x) => x[1])];
    let node = out;
    for (let i = 0; i < path.length - 1; i++) {
      const next = path[i + 1];
      const wantArray = next === '' || /^\d+$/.test(next);
      if (node[path[i]] === undefined) node[path[i]] = wantArray ? [] : {};
      node = node[path[i]];
    }
    const last = path[path.length - 1];
    if (Array.isArray(node) && last === '') node.push(value);
    else node[last] = value;
  }
  return out;
}

// Canonical JSON (sorted keys): what "the same parameters" means for an idempotency key.
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  return JSON.stringify(v);
}

module.exports = { parseForm, canonical };
