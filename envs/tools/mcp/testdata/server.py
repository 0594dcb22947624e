"""A small MCP server over stdio for the tests (Python standard library only).

Tools: echo, add, pid, sleep, hang, fail, barrier, exit. tools/list pages two
tools at a time. Every tools/call runs on its own thread, so calls overlap.
After the handshake the server sends the client a notification and a
request (roots/list), which a client must answer or ignore.
"""
import json
import os
import sys
import threading
import time

out_lock = threading.Lock()
barrier_cv = threading.Condition()
barrier_waiting = 0

TOOLS = [
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                     "properties": {"text": {"type": "string", "pattern": ".*"}},
                     "required": ["text"], "additionalProperties": False}},
    {"name": "add", "description": "Add two numbers.",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                     "required": ["a", "b"]}},
    {"name": "pid", "description": "The server's process id.", "inputSchema": {"type": "object"}},
    {"name": "sleep", "description": "Sleep, then answer.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
    {"name": "hang", "description": "Never answers.", "inputSchema": {"type": "object"}},
    {"name": "fail", "description": "Always an error result.", "inputSchema": {"type": "object"}},
    {"name": "barrier", "description": "Answers once n calls wait here together (or after 5 s).",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
    {"name": "exit", "description": "The server exits at once.", "inputSchema": {"type": "object"}},
]


def send(msg):
    line = json.dumps(msg)
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def text(s, is_error=False):
    return {"content": [{"type": "text", "text": s}], "isError": is_error}


def run_tool(name, args):
    global barrier_waiting
    if name == "echo":
        return text(args["text"])
    if name == "add":
        return text(repr(args["a"] + args["b"]))
    if name == "pid":
        return text(str(os.getpid()))
    if name == "sleep":
        time.sleep(args.get("seconds", 0))
        return text("slept")
    if name == "hang":
        time.sleep(3600)
    if name == "fail":
        return text("it went wrong", True)
    if name == "barrier":
        with barrier_cv:
            barrier_waiting += 1
            barrier_cv.notify_all()
            ok = barrier_cv.wait_for(lambda: barrier_waiting >= args["n"], timeout=5)
        return text("together" if ok else "alone")
    if name == "exit":
        os._exit(3)
    raise KeyError(name)


def call(msg):
    p = msg["params"]
    names = [t["name"] for t in TOOLS]
    if p["name"] not in names:
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": "unknown tool " + p["name"]}})
        return
    send({"jsonrpc": "2.0", "id": msg["id"], "result": run_tool(p["name"], p.get("arguments") or {})})


for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "test-server", "version": "1"}}})
    elif method == "notifications/initialized":
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hello"}})
        send({"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"})
    elif method == "tools/list":
        start = int((msg.get("params") or {}).get("cursor") or 0)
        res = {"tools": TOOLS[start:start + 2]}
        if start + 2 < len(TOOLS):
            res["nextCursor"] = str(start + 2)
        send({"jsonrpc": "2.0", "id": mid, "result": res})
    elif method == "tools/call":
        threading.Thread(target=call, args=(msg,), daemon=True).start()
    elif mid is not None and method:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no " + method}})
    # responses to our roots/list and notifications such as cancelled are ignored
