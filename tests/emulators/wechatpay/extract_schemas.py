#!/usr/bin/env python3
"""Extracts from the community OpenAPI description of WeChat Pay API v3
(github.com/TheNorthMemory/wechatpay-openapi, compiled from the official docs) the request and
answer schemas of the endpoints the emulator serves, with every $ref inlined, into
wechatpay-v3-schemas.json (checked by schema_check.js), given a checkout of that repository:
    python3 extract_schemas.py path/to/wechatpay-openapi > wechatpay-v3-schemas.json
Needs PyYAML; run once when the description changes (the JSON is committed)."""
import json
import os
import sys

import yaml

ENDPOINTS = {
    # name: (file, method, answer status)
    "native": ("v3/pay/transactions/native.yaml", "post", 200),
    "jsapi": ("v3/pay/transactions/jsapi.yaml", "post", 200),
    "codepay": ("v3/pay/transactions/codepay.yaml", "post", 200),
    "query": ("v3/pay/transactions/out-trade-no/{out_trade_no}.yaml", "get", 200),
    "close": ("v3/pay/transactions/out-trade-no/{out_trade_no}/close.yaml", "post", 204),
    "refund": ("v3/refund/domestic/refunds.yaml", "post", 200),
    "refund_query": ("v3/refund/domestic/refunds/{out_refund_no}.yaml", "get", 200),
}


def load(path, cache={}):
    if path not in cache:
        with open(path, encoding="utf-8") as f:
            cache[path] = yaml.safe_load(f)
    return cache[path]


def resolve(node, base):
    """Inlines every $ref ('file#/Name', 'file#Name' or '#/Name') relative to `base`."""
    if isinstance(node, list):
        return [resolve(n, base) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        ref = node["$ref"]
        file_part, _, pointer = ref.partition("#")
        target_file = os.path.normpath(os.path.join(os.path.dirname(base), file_part)) if file_part else base
        target = load(target_file)
        for part in [p for p in pointer.split("/") if p]:
            target = target[part]
        rest = {k: v for k, v in node.items() if k != "$ref"}
        merged = dict(resolve(target, target_file))
        merged.update(resolve(rest, base))
        return merged
    return {k: resolve(v, base) for k, v in node.items()}


def main():
    root = sys.argv[1]
    out = {"source": "TheNorthMemory/wechatpay-openapi 4d6325b09af308025ba7677ead284feeea2680ba (community, from the official docs)",
           "endpoints": {}}
    for name, (rel, method, status) in ENDPOINTS.items():
        path = os.path.join(root, rel)
        op = load(path)[method]
        body = next((p for p in op.get("parameters", []) if p.get("in") == "body"), None)
        responses = op.get("responses", {})
        answer = responses.get(status, responses.get(str(status), {})) or {}
        out["endpoints"][name] = {
            "method": method.upper(),
            "request": resolve(body["schema"], path) if body else None,
            "answer": resolve(answer.get("schema"), path) if answer.get("schema") else None,
            "status": status,
        }
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1, sort_keys=True)
    sys.stdout.write("\n")


main()
