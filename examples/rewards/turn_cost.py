#!/usr/bin/env python3
"""An external reward (env.rewards.external.command): a cost of 0.1 per assistant
turn, so that among right answers the shorter episodes score higher; the
number of turns and of tool calls come back as components.

It reads one finished episode as JSON on stdin ({"task_id", "dataset",
"question", "gold", "answer", "stop", "turns": [{"text", "calls": [{"tool",
"args", "result", "ok"}]}]}) and prints {"reward": x, "components": {...}}.

    env:
      rewards:
        external:
          command: [python3, examples/rewards/turn_cost.py]
"""
import json
import sys

episode = json.load(sys.stdin)
turns = len(episode["turns"])
calls = sum(1 for turn in episode["turns"] for call in turn["calls"] if call["tool"])
print(json.dumps({"reward": -0.1 * turns, "components": {"turns": turns, "tool_calls": calls}}))
