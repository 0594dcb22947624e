"""Renders conversations with transformers' apply_chat_template, from a
tokenizer folder (AutoTokenizer.from_pretrained).

argv: in.json {"dir": folder, "split_reasoning": bool, "call_ids": bool, "cases": [{"messages", "tools", "gen", "kwargs"}]}, out.json.
With call_ids (Gemma 4's template, which names a tool response after the
call whose id its tool_call_id gives), an assistant message whose content
holds a thought channel gets its text as reasoning_content, each call gets an id and the tool
messages after it answer the calls in order, as an OpenAI client sends
them; a response beyond the calls gets an id no call has.
With split_reasoning (a template that reads reasoning_content, Qwen3.8's),
an assistant message whose content holds "</think>" is given to the
template as a reasoning parser splits it: reasoning_content the text before
the first "</think>" (after the last "<think>" there), content the text
after the last.
For each case the answer holds the text and ids of the whole conversation,
or the error the template raised; and for each assistant message i whose
rendering is a prefix of the whole text, the text the model generated in
that turn: the conversation up to and including message i less the
conversation before it with the generation prompt.
Answer: [{"text", "ids", "error", "generated": {"i": text}}].
"""
import json, sys
from transformers import AutoTokenizer

req = json.load(open(sys.argv[1]))
tok = AutoTokenizer.from_pretrained(req["dir"])

def render(messages, tools, gen, kwargs):
    return tok.apply_chat_template(messages, tools=tools, add_generation_prompt=gen, tokenize=False, **kwargs)

def split(m):
    c = m["content"]
    if m["role"] != "assistant" or "</think>" not in c:
        return m
    m = dict(m)
    m["reasoning_content"] = c.split("</think>")[0].split("<think>")[-1]
    m["content"] = c.split("</think>")[-1]
    return m

def split_channel(m):
    """Gemma 4: reasoning_content is the first thought channel's text, as
    agentrl reads it off the content (the template strips the channel from
    the content itself)."""
    c = m["content"]
    if m["role"] != "assistant" or "<|channel>" not in c:
        return m
    after = c.split("<|channel>", 1)[1]
    if "<channel|>" not in after:
        return m
    body = after.split("<channel|>", 1)[0]
    if body.startswith("thought\n"):
        body = body[len("thought\n"):]
    if body.endswith("\n"):
        body = body[:-1]
    m = dict(m)
    m["reasoning_content"] = body
    return m

def with_ids(msgs):
    out, calls, n = [], [], 0
    for m in msgs:
        m = dict(m)
        if m["role"] == "assistant":
            calls = []
            for c in m.get("tool_calls") or []:
                n += 1
                calls.append("call_%d" % n)
            if calls:
                m["tool_calls"] = [dict(c, id=i) for c, i in zip(m["tool_calls"], calls)]
        elif m["role"] == "tool":
            m["tool_call_id"] = calls.pop(0) if calls else "no_such_call"
        out.append(m)
    return out

out = []
for case in req["cases"]:
    msgs, tools, kwargs = case["messages"], case["tools"], case.get("kwargs") or {}
    if req.get("split_reasoning"):
        msgs = [split(m) for m in msgs]
    if req.get("call_ids"):
        msgs = with_ids([split_channel(m) for m in msgs])
    try:
        text = render(msgs, tools, case["gen"], kwargs)
        enc = tok.apply_chat_template(msgs, tools=tools, add_generation_prompt=case["gen"], tokenize=True, **kwargs)
        ids = enc["input_ids"] if hasattr(enc, "keys") else enc
    except Exception as e:  # the template's raise_exception, a bad message
        out.append({"error": "%s: %s" % (type(e).__name__, e)})
        continue
    generated = {}
    for i, m in enumerate(msgs):
        if m["role"] != "assistant" or i == 0:
            continue
        try:
            prompt = render(msgs[:i], tools, True, kwargs)
            full = render(msgs[:i + 1], tools, False, kwargs)
        except Exception:
            continue
        if full.startswith(prompt) and text.startswith(full):
            generated[str(i)] = full[len(prompt):]
    out.append({"text": text, "ids": list(ids), "generated": generated})
json.dump(out, open(sys.argv[2], "w"))
