#!/usr/bin/env python3
"""store-diff.py A B: compares two trajectory stores (store.db) in every column both have,
but the run's name, its config and git revision and the timing columns (times, *_ms, latency).

Integer and text columns must be equal; float arrays (logprobs, values, advantages, ...)
are reported by their largest absolute difference; the iterations' metrics are compared
key by key, timing and memory keys left out, by their largest difference relative to
the larger magnitude (at least 1e-6).
Columns and metric keys that only one store has are listed, not compared.
Exit status 1 when a row count or an integer or text column differs."""
import json
import re
import sqlite3
import struct
import sys

SKIP_COL = re.compile(r'^(run|name|config|git_rev|created_at|started_at|resumed_at)$|_ms$|latency|^duration')
SKIP_KEY = re.compile(r'tok/s|tokens_per_s|(^|/)s$|_s$|time|_ms|seconds|duration|latency|wait|_gb$|engine/')
FLOAT_BLOBS = {'logprobs', 'critic_values', 'advantages', 'returns', 'train_logprobs', 'entropies'}


def columns(db, table):
    return [r[1] for r in db.execute(f'pragma table_info({table})')]


def main(a_path, b_path):
    a, b = sqlite3.connect(a_path), sqlite3.connect(b_path)
    tables = [n for (n,) in a.execute("select name from sqlite_master where type='table' order by name")]
    exact_diffs, blob_max, metric_max = 0, {}, {}
    for t in tables:
        if not b.execute("select 1 from sqlite_master where type='table' and name=?", (t,)).fetchone():
            print(f'{t}: only in {a_path}')
            continue
        ca, cb = columns(a, t), columns(b, t)
        cols = [c for c in ca if c in cb and not SKIP_COL.search(c)]
        key = ','.join(cols[:2])
        ra = a.execute(f'select {",".join(cols)} from {t} order by {key}').fetchall()
        rb = b.execute(f'select {",".join(cols)} from {t} order by {key}').fetchall()
        only = sorted(set(ca) ^ set(cb))
        if len(ra) != len(rb):
            print(f'{t}: {len(ra)} rows against {len(rb)}')
            exact_diffs += 1
            continue
        n = 0
        for x, y in zip(ra, rb):
            for c, u, v in zip(cols, x, y):
                if u == v:
                    continue
                if c == 'metrics':
                    mu, mv = json.loads(u), json.loads(v)
                    for k in set(mu) & set(mv):
                        if SKIP_KEY.search(k) or mu[k] == mv[k]:
                            continue
                        scale = max(abs(mu[k]), abs(mv[k]), 1e-6)
                        metric_max[k] = max(metric_max.get(k, 0), abs(mu[k] - mv[k]) / scale)
                elif c in FLOAT_BLOBS and isinstance(u, bytes) and isinstance(v, bytes) and len(u) == len(v):
                    m = len(u) // 4
                    d = max(abs(p - q) for p, q in zip(struct.unpack(f'<{m}f', u), struct.unpack(f'<{m}f', v)))
                    blob_max[c] = max(blob_max.get(c, 0), d)
                else:
                    n += 1
                    if n <= 5:
                        print(f'{t}.{c}: {str(u)[:60]!r} against {str(v)[:60]!r}')
        exact_diffs += n
        print(f'{t}: {len(ra)} rows, {len(cols)} columns, {n} exact differences' + (f'; in one store only: {only}' if only else ''))
    for c, d in sorted(blob_max.items()):
        print(f'float array {c}: largest |a - b| {d:.3g}')
    for k, d in sorted(metric_max.items(), key=lambda kv: -kv[1]):
        print(f'metric {k}: largest relative difference {d:.3g}')
    return 1 if exact_diffs else 0


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
