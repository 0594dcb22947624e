"""TensorBoard reads a run's tb/ folder: every events file under it loads
in TensorBoard's EventAccumulator, with scalar tags and their points.

usage: tb_check.py TB_DIR
"""
import os
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

root = sys.argv[1]
dirs = sorted({d for d, _, files in os.walk(root) if any(f.startswith("events.out.tfevents") for f in files)})
if not dirs:
    sys.exit(f"tb_check: no events files under {root}")
tags = points = 0
for d in dirs:
    ea = EventAccumulator(d, size_guidance={"scalars": 0})
    ea.Reload()
    for tag in ea.Tags()["scalars"]:
        tags += 1
        points += len(ea.Scalars(tag))
print(f"tb_check: {len(dirs)} event folder(s), {tags} scalar tags, {points} points")
if tags == 0:
    sys.exit("tb_check: FAILED (no scalars)")
