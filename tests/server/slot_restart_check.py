#!/usr/bin/env python3
"""Slot state across a server restart (ctest: server.slot_restart).

Server A answers a prompt greedily and saves its slot; A stops. Server B (a
new process on the same model file) restores the slot and gets the same
prompt: the cells come back from the file, so B evaluates only the last
prompt token (prompt_n) and continues with A's very words. A file saved by a
server on another model is refused with a 400 and B's slot keeps its cells.

Prints the restore time against the time A took to compute the prompt.
usage: slot_restart_check.py CRIA MODEL OTHER_MODEL SLOT_DIR [PROMPT_REPEAT]
"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

cria, model, other_model, slot_dir = sys.argv[1:5]
repeat = int(sys.argv[5]) if len(sys.argv) > 5 else 8
os.makedirs(slot_dir, exist_ok=True)
PROMPT = "Once upon a time, there was a little girl who liked to play in the park with her dog. " * repeat


def start(model_path):
    proc = subprocess.Popen([cria, "serve", "-m", model_path, "--port", "0", "-np", "1", "-c", "4096", "-t", "2",
                             "--slot-save-path", slot_dir], stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        m = re.search(r"listening on (http://\S+)", line)
        if m:
            return proc, m.group(1)
    raise SystemExit("the server did not start")


def post(base, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def slot_cells(base):
    """The slot's cached cells once it is idle (the list is published after the reply is sent)."""
    for _ in range(600):
        with urllib.request.urlopen(base + "/slots", timeout=30) as r:
            slot = json.loads(r.read())[0]
        if not slot["is_processing"]:
            return slot["n_cached"]
        time.sleep(0.05)
    raise SystemExit("the slot stayed busy")


def complete(base):
    code, r = post(base, "/v1/completions", {"prompt": PROMPT, "max_tokens": 24, "temperature": 0})
    assert code == 200, r
    return {"content": r["choices"][0]["text"], "timings": r["timings"]}


def stop(proc):
    proc.terminate()
    proc.wait(timeout=30)


failures = []
a, base_a = start(model)
first = complete(base_a)
code, saved = post(base_a, "/slots/0?action=save", {"filename": "restart.bin"})
assert code == 200, saved
stop(a)

other, base_o = start(other_model)
complete(base_o)
code, saved_o = post(base_o, "/slots/0?action=save", {"filename": "foreign.bin"})
assert code == 200, saved_o
stop(other)

b, base_b = start(model)
try:
    code, restored = post(base_b, "/slots/0?action=restore", {"filename": "restart.bin"})
    assert code == 200, restored
    n_cells = slot_cells(base_b)
    again = complete(base_b)
    if again["content"] != first["content"]:
        failures.append("the restored slot continued differently:\n%r\n%r" % (first["content"], again["content"]))
    if again["timings"]["prompt_n"] > 1:
        failures.append("the restored slot recomputed %d prompt tokens" % again["timings"]["prompt_n"])
    # A foreign file: refused, and the slot keeps what it held.
    before = slot_cells(base_b)
    code, refused = post(base_b, "/slots/0?action=restore", {"filename": "foreign.bin"})
    if code != 400 or "another model" not in json.dumps(refused):
        failures.append("a foreign slot file was not refused: %d %s" % (code, refused))
    if slot_cells(base_b) != before:
        failures.append("a refused file changed the slot (%d cells, then %d)" % (before, slot_cells(base_b)))
    # A truncated one too.
    path = os.path.join(slot_dir, "restart.bin")
    with open(path, "rb") as f:
        data = f.read()
    with open(os.path.join(slot_dir, "cut.bin"), "wb") as f:
        f.write(data[: len(data) * 2 // 3])
    code, refused = post(base_b, "/slots/0?action=restore", {"filename": "cut.bin"})
    if code != 400 or slot_cells(base_b) != before:
        failures.append("a truncated slot file was not refused cleanly: %d %s" % (code, refused))
finally:
    stop(b)

print("prompt: %d tokens; computed by server A in %.1f ms; file %d bytes; restored by server B in %.1f ms "
      "(%d cells), then %d prompt token(s) evaluated" %
      (first["timings"]["prompt_n"], first["timings"]["prompt_ms"], len(data), restored["timings"]["restore_ms"],
       n_cells, again["timings"]["prompt_n"]))
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
