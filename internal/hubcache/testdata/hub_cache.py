"""Lays out a Hugging Face cache with huggingface_hub's own cache-writing
code, then asks huggingface_hub and transformers (offline) where each
revision's config.json is.

Input: {"repo": id, "revisions": [{"revision": r, "commit": hash,
"files": {name: text}}], "ask": [revision, ...]}. The cache is the one the
environment picks (HF_HUB_CACHE, HF_HOME, ...), as for agentrl.
Output: {"snapshots": {revision: folder of config.json per transformers},
"scan": {commit: [refs]}, "model_type": {revision: ...}}.
"""
import hashlib
import json
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"

from huggingface_hub import constants, scan_cache_dir, try_to_load_from_cache  # noqa: E402
from huggingface_hub.file_download import (  # noqa: E402
    _cache_commit_hash_for_specific_revision,
    _create_symlink,
    _get_pointer_path,
    repo_folder_name,
)
from transformers import AutoConfig  # noqa: E402
from transformers.utils import cached_file  # noqa: E402


def write(cache, repo, revision, commit, files):
    """The steps of file_download._hf_hub_download_to_cache_dir after its
    HEAD call: blob under blobs/<etag>, the revision's ref, the snapshot's
    pointer (a relative symlink to the blob)."""
    storage = os.path.join(cache, repo_folder_name(repo_id=repo, repo_type="model"))
    for name, text in files.items():
        data = text.encode()
        etag = hashlib.sha256(data).hexdigest()
        blob = os.path.join(storage, "blobs", etag)
        pointer = _get_pointer_path(storage, commit, name)
        os.makedirs(os.path.dirname(blob), exist_ok=True)
        os.makedirs(os.path.dirname(pointer), exist_ok=True)
        _cache_commit_hash_for_specific_revision(storage, revision, commit)
        tmp = blob + ".incomplete"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, blob)
        _create_symlink(blob, pointer, new_blob=True)


def main():
    with open(sys.argv[1]) as f:
        req = json.load(f)
    cache = constants.HF_HUB_CACHE
    repo = req["repo"]
    for r in req["revisions"]:
        write(cache, repo, r["revision"], r["commit"], r["files"])
    out = {"cache": cache, "snapshots": {}, "model_type": {}, "hidden_size": {}, "scan": {}}
    for rev in req["ask"]:
        hub = try_to_load_from_cache(repo, "config.json", cache_dir=cache, revision=rev)
        tf = cached_file(repo, "config.json", revision=rev)
        if hub != tf:
            raise SystemExit(f"{rev}: huggingface_hub finds {hub}, transformers {tf}")
        out["snapshots"][rev] = os.path.dirname(tf)
        cfg = AutoConfig.from_pretrained(repo, revision=rev)
        out["model_type"][rev] = cfg.model_type
        out["hidden_size"][rev] = cfg.hidden_size
    for info in scan_cache_dir(cache).repos:
        if info.repo_id == repo:
            for rv in info.revisions:
                out["scan"][rv.commit_hash] = {"refs": sorted(rv.refs), "path": str(rv.snapshot_path)}
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)


main()
