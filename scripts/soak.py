#!/usr/bin/env python3
"""Soak test of `cria serve` (issue #14): for DURATION seconds, against one
server process, run at once
  - 8 streaming chat clients and 8 non-streaming completion clients, in loops
    (--streams, --plain);
  - slowloris sockets: each sends a request line and one header, then a byte
    a second, and reconnects when the server drops it;
  - clients that hang up: mid-stream, and while waiting for a whole reply;
  - a /health probe every 50 ms (a fresh connection each time);
and sample the server's RSS every second. Reports errors (by kind), the
/health latency (p50 / p99 / max), 503s from the full queue, and the RSS
drift (the last 30 s against the 30 s after warm-up). Exit status 1 when a
target is missed: the server died, a request got a 5xx other than the full
queue's 503, /health p99 >= 100 ms, or RSS drift >= 10%.

Only the Python standard library is used.
"""
import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

STOP = threading.Event()
LOCK = threading.Lock()
STATS = {
    "stream_ok": 0, "stream_err": 0, "plain_ok": 0, "plain_err": 0, "queue_full_503": 0,
    "server_5xx": 0, "other_4xx": 0, "slowloris_dropped": 0, "slowloris_408": 0,
    "hangups": 0, "health_fail": 0,
}
ERRORS = []          # (kind, detail), the first few of each kind
HEALTH_MS = []       # (t, ms)
RSS = []             # (t, kB)


def count(key, n=1):
    with LOCK:
        STATS[key] += n


def error(kind, detail):
    with LOCK:
        if sum(1 for k, _ in ERRORS if k == kind) < 5:
            ERRORS.append((kind, str(detail)[:300]))


def classify(status, body, kind):
    if status == 200:
        count(kind + "_ok")
    elif status == 503:
        count("queue_full_503")
    elif status >= 500:
        count("server_5xx")
        error(kind + " %d" % status, body)
    else:
        count("other_4xx")
        error(kind + " %d" % status, body)


def conn(args, timeout=60):
    return http.client.HTTPConnection("127.0.0.1", args.port, timeout=timeout)


def stream_client(args, i):
    body = json.dumps({"messages": [{"role": "user", "content": "Tell me a story, number %d." % i}],
                       "max_tokens": args.max_tokens, "stream": True, "temperature": 0.8, "seed": i})
    while not STOP.is_set():
        try:
            c = conn(args)
            c.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            r = c.getresponse()
            data = r.read().decode("utf-8", "replace")
            if r.status == 200 and "data: [DONE]" not in data:
                count("stream_err")
                error("stream without [DONE]", data[-200:])
            else:
                classify(r.status, data, "stream")
            c.close()
        except Exception as e:  # connection refused / reset: the server is in trouble
            count("stream_err")
            error("stream exception", repr(e))
            time.sleep(0.2)


def plain_client(args, i):
    body = json.dumps({"prompt": "Once upon a time, %d" % i, "max_tokens": args.max_tokens, "temperature": 0.8, "seed": i})
    while not STOP.is_set():
        try:
            c = conn(args)
            c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
            r = c.getresponse()
            classify(r.status, r.read().decode("utf-8", "replace"), "plain")
            c.close()
        except Exception as e:
            count("plain_err")
            error("plain exception", repr(e))
            time.sleep(0.2)


def slowloris(args, i):
    while not STOP.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", args.port), timeout=30)
            s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % args.port)
            s.settimeout(1.0)
            while not STOP.is_set():
                try:
                    got = s.recv(256)
                    if got.startswith(b"HTTP/1.1 408"):
                        count("slowloris_408")
                    count("slowloris_dropped")
                    break  # answered or closed: start again
                except socket.timeout:
                    s.sendall(b"X")  # one more byte of a header that never ends
        except OSError:
            count("slowloris_dropped")
        finally:
            try:
                s.close()
            except Exception:
                pass


def hangups(args):
    n = 0
    while not STOP.is_set():
        n += 1
        try:
            s = socket.create_connection(("127.0.0.1", args.port), timeout=30)
            streaming = n % 2 == 0
            body = json.dumps({"prompt": "The house", "max_tokens": 200, "stream": streaming}).encode()
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % (args.port, len(body)) + body)
            if streaming:
                s.recv(512)  # the first chunk, then leave
            else:
                time.sleep(0.2)
            s.close()
            count("hangups")
        except OSError as e:
            error("hang-up client", repr(e))
        time.sleep(0.3)


def health_probe(args):
    while not STOP.is_set():
        t0 = time.monotonic()
        try:
            c = conn(args, timeout=10)
            c.request("GET", "/health")
            r = c.getresponse()
            r.read()
            c.close()
            ms = (time.monotonic() - t0) * 1000
            if r.status == 200:
                with LOCK:
                    HEALTH_MS.append((t0, ms))
            else:
                count("health_fail")
                error("health %d" % r.status, "")
        except Exception as e:
            count("health_fail")
            error("health exception", repr(e))
        time.sleep(0.05)


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def wait_ready(args, proc):
    for _ in range(600):
        if proc.poll() is not None:
            return False
        try:
            c = conn(args, timeout=1)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100.0 * (len(values) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cria", default="build/release/cria")
    ap.add_argument("--model", default="models/austen-1m/austen-1m-f16.gguf")
    ap.add_argument("--port", type=int, default=18089)
    ap.add_argument("--duration", type=float, default=300)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--slowloris", type=int, default=20)
    ap.add_argument("--streams", type=int, default=8, help="streaming clients")
    ap.add_argument("--plain", type=int, default=8, help="non-streaming clients")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()

    cmd = [args.cria, "serve", "-m", args.model, "--port", str(args.port), "-np", str(args.slots),
           "-t", str(args.threads), "--metrics"]
    log_path = os.path.join(tempfile.gettempdir(), "cria-soak-server-%d.log" % args.port)
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        if not wait_ready(args, proc):
            print("the server did not start (see %s)" % log_path)
            return 1
        threads = [threading.Thread(target=stream_client, args=(args, i)) for i in range(args.streams)]
        threads += [threading.Thread(target=plain_client, args=(args, i)) for i in range(args.plain)]
        threads += [threading.Thread(target=slowloris, args=(args, i)) for i in range(args.slowloris)]
        threads += [threading.Thread(target=hangups, args=(args,)), threading.Thread(target=health_probe, args=(args,))]
        for t in threads:
            t.daemon = True
            t.start()
        start = time.monotonic()
        died = False
        while time.monotonic() - start < args.duration:
            if proc.poll() is not None:
                died = True
                break
            RSS.append((time.monotonic() - start, rss_kb(proc.pid)))
            time.sleep(1)
        STOP.set()
        for t in threads:
            t.join(timeout=15)
        alive = proc.poll() is None
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()

    health = [ms for _, ms in HEALTH_MS]
    warm = [kb for t, kb in RSS if 30 <= t < 60] or [kb for _, kb in RSS[:30]]
    last = [kb for t, kb in RSS if t >= RSS[-1][0] - 30] if RSS else []
    drift = (statistics.mean(last) - statistics.mean(warm)) / statistics.mean(warm) if warm and last else float("nan")
    figures = dict(STATS)
    figures.update({
        "duration_s": round(RSS[-1][0] if RSS else 0, 1), "server_died": died or not alive,
        "health_n": len(health), "health_p50_ms": round(percentile(health, 50), 2),
        "health_p99_ms": round(percentile(health, 99), 2), "health_max_ms": round(max(health), 2) if health else None,
        "rss_warm_kb": round(statistics.mean(warm)) if warm else None, "rss_last_kb": round(statistics.mean(last)) if last else None,
        "rss_max_kb": max(kb for _, kb in RSS) if RSS else None, "rss_drift": round(drift, 4),
        "server_exit_code": proc.returncode,
    })
    print(json.dumps(figures, indent=2))
    for kind, detail in ERRORS:
        print("error: %s: %s" % (kind, detail))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"figures": figures, "errors": ERRORS}, f, indent=2)
    missed = []
    if figures["server_died"]:
        missed.append("the server died")
    if STATS["server_5xx"]:
        missed.append("%d answers were 5xx (other than the full queue's 503)" % STATS["server_5xx"])
    if STATS["stream_err"] or STATS["plain_err"] or STATS["health_fail"]:
        missed.append("requests failed")
    if not health or percentile(health, 99) >= 100:
        missed.append("/health p99 >= 100 ms")
    if not drift < 0.10:
        missed.append("RSS drift >= 10%")
    print("targets missed: " + "; ".join(missed) if missed else "all targets met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
