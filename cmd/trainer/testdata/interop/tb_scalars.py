"""Reads a run's tb/ folder with TensorBoard's own event reader, for
cmd/trainer/interop_test.go.

argv: in.json out.json. in.json: {"dir": the tb/ folder}. The folder is
loaded with tensorboard's EventAccumulator (every scalar kept: size 0), as
`tensorboard --logdir` does. out.json: {"scalars": {tag: [[step, value],
...]}, "files": the event files read}.
"""

import json
import os
import sys

from tensorboard.backend.event_processing import event_accumulator


def main():
    with open(sys.argv[1]) as fh:
        a = json.load(fh)
    acc = event_accumulator.EventAccumulator(a["dir"], size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    scalars = {}
    for tag in acc.Tags()["scalars"]:
        scalars[tag] = [[e.step, e.value] for e in acc.Scalars(tag)]
    files = sorted(f for f in os.listdir(a["dir"]) if ".tfevents." in f)
    with open(sys.argv[2], "w") as fh:
        json.dump({"scalars": scalars, "files": files}, fh)


if __name__ == "__main__":
    main()
