"""A test agent program: plays the tiny test model's learned conversation
through the gateway (OPENAI_BASE_URL, OPENAI_API_KEY) with the standard
library only, or misbehaves as its first argument says."""
import json, os, subprocess, sys, time, urllib.error, urllib.request

mode = sys.argv[1]
task = json.loads(sys.stdin.readline())
assert task["question"] == os.environ["QUESTION"] and json.loads(os.environ["AGENTRL_TASK"]) == task
assert "answers" not in task
tools = [json.loads(os.environ["TOOL_JSON"])]


def chat(messages, key=None, **extra):
    body = dict(model=os.environ["OPENAI_MODEL"], messages=messages, tools=tools, **extra)
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json",
                                  "Authorization": "Bearer " + (key if key is not None else os.environ["OPENAI_API_KEY"])})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


first = [{"role": "system", "content": os.environ["SYSTEM"]}, {"role": "user", "content": task["question"]}]

if mode == "exit":
    print("partial", flush=True)
    sys.stderr.write("line one\nthe agent crashed: KeyError 'x'\n")
    sys.exit(3)
if mode == "hang":
    chat(first)
    time.sleep(60)
if mode == "silent":
    chat(first)
    sys.exit(0)
if mode == "flood":
    sys.stdout.write("x" * 100000)
    sys.exit(0)
if mode == "badreq":
    chat(first, temperature="hot")
if mode == "keys":
    # No key, and a made-up one: both refused; the episode's own works.
    codes = [chat(first, key="")[0], chat(first, key="sk-agentrl-0000")[0], chat(first)[0]]
    print(json.dumps({"answer": "Tarn" if codes == [401, 401, 200] else "codes %s" % codes}))
    sys.exit(0)
if mode == "spawn":
    child = subprocess.Popen(["sleep", "300"])
    with open(os.environ["PIDFILE"], "w") as f:
        f.write(str(child.pid))

status, c1 = chat(first)
assert status == 200, c1
msg = c1["choices"][0]["message"]
call = msg["tool_calls"][0]
history = first + [msg, {"role": "tool", "tool_call_id": call["id"], "content": os.environ["RESPONSE"]}]
if mode == "rewrite":
    # The agent keeps only the tool's answer, as a user message: the
    # prompt no longer extends the first request's.
    history = first + [{"role": "assistant", "content": "I searched."}, {"role": "tool", "tool_call_id": "x", "content": os.environ["RESPONSE"]}]
    history[2] = {"role": "assistant", "content": None, "tool_calls": [{"id": "x", "type": "function", "function": {"name": "search", "arguments": "{\"query\":\"Kamo composer\"}"}}]}
status, c2 = chat(history)
assert status == 200, c2
text = c2["choices"][0]["message"]["content"] or ""
answer = text.split("<answer>")[-1].split("</answer>")[0]
if mode == "json":
    print("thinking done")
    print(json.dumps({"answer": answer, "reward": 0.5}))
else:
    print(answer)
