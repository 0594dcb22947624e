#!/usr/bin/env python3
"""An MCP server (stdio, Python standard library only) serving `search` over
an agentrl search index (the SQLite FTS5 file `trainer index` builds, or the
synthetic world's runs/<name>/index.db).

It answers as agentrl's built-in search tool does: the query's words
(lowercased, English stopwords dropped unless nothing else is left) are
OR-ed in one FTS5 query ranked by the index's BM25 (title weighted 2), and
the k best passages come back one per line as "Doc 1 (Title: t) text".

    python3 search_server.py --index runs/x/index.db --k 2
"""
import argparse
import json
import re
import sqlite3
import sys
import threading

STOPWORDS = set("""a an the and or not nor but if then than so as
of in on at to for by with from into onto about over under between
is are was were be been being am do does did has have had having
it its it's this that these those there here
i me my we our you your he him his she her they them their
what which who whom whose when where why how
s t can could would should will shall may might must""".split())

TOOL = {
    "name": "search",
    "description": "Search the passage collection by keywords (BM25); returns the best matching passages with their titles.",
    "inputSchema": {"type": "object", "properties": {"query": {"type": "string", "description": "keywords or a question to search for"}},
                    "required": ["query"]},
}

out_lock = threading.Lock()
local = threading.local()


def send(msg):
    with out_lock:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def terms(query):
    seen, out = set(), []
    for w in re.findall(r"[^\W_]+", query):
        w = w.lower()
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out[:64]


def search(index, k, query):
    ts = terms(query)
    if not ts:
        return "search: the query %s has no words to search for" % json.dumps(query), True
    content = [t for t in ts if t not in STOPWORDS] or ts
    expr = " OR ".join('"%s"' % t for t in content)
    if not hasattr(local, "db"):
        local.db = sqlite3.connect("file:%s?mode=ro" % index, uri=True)
    rows = local.db.execute("SELECT title, text FROM passages_fts WHERE passages_fts MATCH ? ORDER BY rank LIMIT ?",
                            (expr, k)).fetchall()
    if not rows:
        return "No results.", False
    one_line = lambda s: " ".join(s.split())
    return "\n".join("Doc %d (Title: %s) %s" % (i + 1, one_line(t), one_line(x)) for i, (t, x) in enumerate(rows)), False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", required=True)
    ap.add_argument("--k", type=int, default=2)
    args = ap.parse_args()

    def call(msg):
        p = msg.get("params") or {}
        if p.get("name") != "search":
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": "unknown tool %s" % p.get("name")}})
            return
        text, is_error = search(args.index, args.k, (p.get("arguments") or {}).get("query", ""))
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": text}], "isError": is_error}})

    for line in sys.stdin:
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                                          "serverInfo": {"name": "agentrl-search", "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [TOOL]}})
        elif method == "tools/call":
            threading.Thread(target=call, args=(msg,), daemon=True).start()
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
        elif mid is not None and method:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "method not found: " + method}})


if __name__ == "__main__":
    main()
