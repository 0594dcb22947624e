"""A small agent program for the CLI tests: asks the policy the task's
question through the gateway, tells it "No results." once when it does not
answer, and prints the answer it gives (or "unknown"). With PIDDIR set it
records its pid there; with SLEEP it waits that many seconds first. With
REWRITE set it first asks once and then rewrites its history (a new system
message), so every episode is at least two segments."""
import json, os, sys, time, urllib.request

task = json.loads(sys.stdin.readline())
if os.environ.get("PIDDIR"):
    with open(os.path.join(os.environ["PIDDIR"], str(os.getpid())), "w") as f:
        f.write(task["id"])
time.sleep(float(os.environ.get("SLEEP", "0")))


def chat(messages):
    body = dict(model=os.environ["OPENAI_MODEL"], messages=messages)
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    with urllib.request.urlopen(req) as r:
        return json.load(r)["choices"][0]["message"]["content"] or ""


messages = [{"role": "system", "content": "Answer the question."}, {"role": "user", "content": task["question"]}]
if os.environ.get("REWRITE"):
    chat(messages)
    messages[0]["content"] = "Answer the question briefly."
for turn in range(2):
    text = chat(messages)
    if "<answer>" in text and "</answer>" in text:
        print(text.split("<answer>")[-1].split("</answer>")[0].strip())
        sys.exit(0)
    messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "No results."}]
print("unknown")
