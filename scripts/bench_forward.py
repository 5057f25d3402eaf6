#!/usr/bin/env python3
"""CPU cost of a GetRateLimits item answered by the node asked versus one forwarded to its owner.

Starts two weir.jar nodes (A and B, static peers) pinned to one core and h2load pinned to the other,
finds keys that A owns and keys that B owns (B's answers carry metadata.owner), then drives A with
calls of ITEMS items on A's keys, then on B's keys. For each run it reads both JVMs' CPU time from
/proc before and after, so the figures are CPU microseconds per item on each node, not throughput,
and hold even when other work shares the machine (the JIT compiler threads are left out: their work
is warm-up, not a per-item cost). It also reads the forwarding batches from A's
/metrics (items per GetPeerRateLimits call). Run once with batching (the default) and once with
BATCHING=off to separate the per-call cost of a peer hop from its per-item cost.

  scripts/bench_forward.py                  # ITEMS=1: 30 s warm-up each, 6 rounds of 5 s + 5 s
  ITEMS=10 ROUNDS=10 scripts/bench_forward.py
  BATCHING=off scripts/bench_forward.py     # WEIR_DISABLE_BATCHING=true on both nodes
  MODE=rls scripts/bench_forward.py         # Envoy ShouldRateLimit, one descriptor per call
  LIGHT_RPS=100 scripts/bench_forward.py    # also a light-load run: 1 stream at 100 calls/s
  PROFILE=/tmp/prof scripts/bench_forward.py  # a flight recording of each measured run per node
  STREAMS=1x1 ITEMS=16 scripts/bench_forward.py  # one call at a time: batches of exactly 16
  OWNER_CPU=0 scripts/bench_forward.py      # the owner on h2load's core, not the front's
  SYSCALLS=1 scripts/bench_forward.py       # system calls per item on each node (perf stat)
  BEHAVIOR=global scripts/bench_forward.py  # GLOBAL items: the other node's keys answered locally

MODE=rls loads ../shared/bench/edge.yaml on both nodes and sends one remote_address descriptor per call
(ITEMS is 1), on an address whose counter A owns, then on one B owns. BEHAVIOR=global sends GLOBAL
items (in MODE=rls, a config whose remote_address rule has `behavior: [global]`): A answers B's keys
from its own copy and syncs the hits to B in the background, so "forwarded" then means "B's keys".

After warming both up it measures ROUNDS rounds, each a local and a forwarded run of RUN_SECONDS in
alternating order, so that a drift in the machine's speed falls on both alike. Before each round it
times a fixed loop on the nodes' core while they are idle: on a shared VM the core's speed moves by tens
of percent from minute to minute, and this shows when. Each run prints how busy the front's core was (a
run that left it idle was bound by latency, not CPU); each round then prints per run items/s, CPU us
per item on A (front) and B (owner), in the kernel, context switches per item, mean batch size, call
latency p50/p99, the JIT compilers' and the garbage collector's CPU in the run, and the round's
forwarded/local throughput; last come their median, min and max, and the ratios of the best rounds
(most items/s, least CPU per item). With LIGHT_RPS, one connection and one stream send that many calls
per second for RUN_SECONDS, local then forwarded, and their p50/p99 are printed.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grpc_body import field_bytes, field_varint  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
JAR = os.environ.get("JAR", "service/server/target/weir.jar")
ITEMS = int(os.environ.get("ITEMS", "1"))
SECONDS = int(os.environ.get("RUN_SECONDS", "5"))
# Measured rounds, each a local and a forwarded run of RUN_SECONDS (alternating which goes first).
ROUNDS = int(os.environ.get("ROUNDS", "6"))
WARMUP = int(os.environ.get("WARMUP", "30"))
BATCHING = os.environ.get("BATCHING", "on")
MODE = os.environ.get("MODE", "v1")
# A folder: each measured run is recorded by JDK Flight Recorder on both nodes (KIND-NODE.jfr there),
# with the JFR settings file PROFILE_SETTINGS (default: the JDK's "profile"). The nodes then start with
# Flight Recorder on and recording no event: its first start in a running JVM throws away the JIT's
# compiled code (a node answered about 1/20 of its calls in the next 5 s, and needed over 15 s to
# recover), so a recording started only for the measured run would profile the JIT catching up.
PROFILE = os.environ.get("PROFILE", "")
PROFILE_SETTINGS = os.environ.get("PROFILE_SETTINGS", "profile")
LIGHT_RPS = int(os.environ.get("LIGHT_RPS", "0"))
# h2load's connections x streams per connection; 1x1 sends one call at a time, so each call's items
# for the other node leave as one batch of exactly ITEMS (the forwarding cost at that batch size).
CONNECTIONS, STREAMS = (int(n) for n in os.environ.get("STREAMS", "4x16").split("x"))
NODE_CPU = os.environ.get("NODE_CPU", "1")
# The owner's CPU (node B), NODE_CPU unless set: OWNER_CPU=0 puts the owner beside h2load, to see what
# the peer hop costs when the two nodes do not share a core (throughput is then not comparable).
OWNER_CPU = os.environ.get("OWNER_CPU", NODE_CPU)
# Extra JVM flags for both nodes; "{node}" becomes a or b (for example a flight recording per node).
NODE_JAVA_OPTS = os.environ.get("NODE_JAVA_OPTS", "")
LOAD_CPU = os.environ.get("LOAD_CPU", "0")
# SYSCALLS=1: count each node's system calls during the measured runs (perf stat on the
# syscalls tracepoints; needs perf and root) and print the busiest per item.
SYSCALLS = os.environ.get("SYSCALLS", "") == "1"
COUNTED_SYSCALLS = ("read", "write", "writev", "epoll_wait", "epoll_pwait", "futex", "eventfd2",
                    "recvfrom", "sendto", "sendmsg", "recvmsg", "epoll_ctl", "sched_yield")
TICKS = os.sysconf("SC_CLK_TCK")
# BEHAVIOR=global: every item carries Gubernator's GLOBAL behavior.
BEHAVIOR = os.environ.get("BEHAVIOR", "")
if BEHAVIOR not in ("", "global"):
    sys.exit(f"BEHAVIOR must be empty or global, got {BEHAVIOR!r}")
GLOBAL = 2  # pb.gubernator.Behavior.GLOBAL
# The rule MODE=rls counts, as in ../shared/bench/edge.yaml, with the global behavior.
GLOBAL_RLS_CONFIG = """domain: edge
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 1000000000
      behavior: [global]
"""


def flight_recorder_on(work):
    """Returns the JVM flags that start Flight Recorder recording nothing (none without PROFILE)."""
    if not PROFILE:
        return []
    empty = os.path.join(work, "no-events.jfc")
    with open(empty, "w") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<configuration version="2.0" label="none"/>\n')
    return [f"-XX:StartFlightRecording=settings={empty}"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid, kernel_only=False):
    """CPU time of the JVM's threads, leaving out the JIT compiler threads (warm-up, not per item)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            if "CompilerThre" in name:
                continue
            fields = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
            total += int(fields[12]) if kernel_only else int(fields[11]) + int(fields[12])
        except FileNotFoundError:
            continue
    return total / TICKS


def jit_and_gc_seconds(pid):
    """CPU time so far of the JVM's JIT compiler threads and of its garbage collector's threads."""
    jit = gc = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            fields = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        used = int(fields[11]) + int(fields[12])
        if "CompilerThre" in name:
            jit += used
        elif name.startswith(("GC Thread", "G1 ")):
            gc += used
    return jit / TICKS, gc / TICKS


def core_speed():
    """Milliseconds a fixed CPU-bound loop takes on the nodes' core while they are idle: a gauge of
    the machine's own speed (a VM's host may slow it down), read before each round."""
    out = subprocess.run(["taskset", "-c", NODE_CPU, sys.executable, "-c",
                          "import time\nt=time.perf_counter()\nx=0\nfor i in range(3000000): x+=i\n"
                          "print((time.perf_counter()-t)*1e3)"],
                         capture_output=True, text=True, check=True).stdout
    return float(out)


def context_switches(pid):
    """Voluntary and involuntary context switches of all the JVM's threads so far."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            for line in open(f"/proc/{pid}/task/{tid}/status"):
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    total += int(line.split()[1])
        except FileNotFoundError:
            continue
    return total


def post(http_port, path, body):
    req = urllib.request.Request(
        f"http://127.0.0.1:{http_port}{path}", data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


def metric(http_port, name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=5).read().decode()
    return sum(float(m.group(1)) for m in re.finditer(r"^" + name + r"\{[^}]*\} (\S+)$", text, re.M))


def body(keys):
    payload = b""
    for key in keys:
        item = (field_bytes(1, b"bench_fwd") + field_bytes(2, key.encode()) + field_varint(3, 1)
                + field_varint(4, 10**12) + field_varint(5, 3_600_000)
                + (field_varint(7, GLOBAL) if BEHAVIOR == "global" else b""))
        payload += field_bytes(1, item)
    return b"\x00" + len(payload).to_bytes(4, "big") + payload


def rls_body(address):
    """A ShouldRateLimit request of domain edge with one descriptor, remote_address=ADDRESS."""
    entry = field_bytes(1, b"remote_address") + field_bytes(2, address.encode())
    payload = field_bytes(1, b"edge") + field_bytes(2, field_bytes(1, entry))
    return b"\x00" + len(payload).to_bytes(4, "big") + payload


def lp(text):
    return f"{len(text.encode())}:{text}"


RLS_NAME = "envoy:" + lp("edge") + "/" + lp("remote_address")
METHODS = {"v1": "/pb.gubernator.V1/GetRateLimits",
           "rls": "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"}


def h2load(grpc_port, path, seconds, log=None, light=False):
    shape = ["-c1", "-m1", f"--rps={LIGHT_RPS}"] if light else [f"-c{CONNECTIONS}", f"-m{STREAMS}"]
    out = subprocess.run(
        ["taskset", "-c", LOAD_CPU, "h2load", *shape, "-t1", "-D", str(seconds), "-d", path,
         "-H", "content-type: application/grpc", "-H", "te: trailers",
         *([f"--log-file={log}"] if log else []),
         f"http://127.0.0.1:{grpc_port}{METHODS[MODE]}"],
        capture_output=True, text=True, check=True).stdout
    done = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done", out).group(1))
    failed = int(re.search(r"(\d+) failed", out).group(1))
    return done, failed


def latency(log):
    """p50 and p99 in ms of the calls in h2load's log that HTTP-succeeded."""
    t = sorted(int(f[2]) for f in (line.split() for line in open(log)) if len(f) >= 3 and f[1] == "200")
    q = lambda p: t[min(len(t) - 1, int(p * len(t)))] / 1000 if t else float("nan")
    return q(0.50), q(0.99)


def main():
    work = tempfile.mkdtemp()
    ga, ha, pa, gb, hb, pb = (free_port() for _ in range(6))
    peers = f"127.0.0.1:{ga}@{pa},127.0.0.1:{gb}@{pb}"
    env = dict(os.environ, WEIR_STATIC_PEERS=peers, WEIR_LOG_LEVEL="warn",
               WEIR_PEER_SECRET="bench-forward-secret")
    if BATCHING == "off":
        env["WEIR_DISABLE_BATCHING"] = "true"
    if MODE == "rls":
        os.makedirs(os.path.join(work, "rls"))
        if BEHAVIOR == "global":
            open(os.path.join(work, "rls", "edge.yaml"), "w").write(GLOBAL_RLS_CONFIG)
        else:
            shutil.copy(os.path.join(HERE, "..", "..", "shared", "bench", "edge.yaml"),
                        os.path.join(work, "rls"))
        env["WEIR_ENVOY_CONFIG"] = os.path.join(work, "rls")
    procs = []
    try:
        for g, h, p, name in ((ga, ha, pa, "a"), (gb, hb, pb, "b")):
            node_env = dict(env, WEIR_GRPC_ADDRESS=f"127.0.0.1:{g}", WEIR_HTTP_ADDRESS=f"127.0.0.1:{h}",
                            WEIR_PEER_ADDRESS=f"127.0.0.1:{p}")
            log = open(os.path.join(work, name + ".log"), "w")
            procs.append(subprocess.Popen(
                ["taskset", "-c", NODE_CPU if name == "a" else OWNER_CPU, "java", "-Xms1g",
                 "-Xmx1g", "-XX:+UseG1GC", *flight_recorder_on(work),
                 *NODE_JAVA_OPTS.replace("{node}", name).split(), "-jar", JAR],
                env=node_env, stdout=log, stderr=subprocess.STDOUT))
        for h in (ha, hb):
            for _ in range(300):
                try:
                    health = json.loads(urllib.request.urlopen(
                        f"http://127.0.0.1:{h}/v1/HealthCheck", timeout=2).read())
                    if health.get("peer_count") == 2:
                        break
                except Exception:
                    pass
                time.sleep(0.2)
            else:
                sys.exit(f"node on {h} did not see both peers; logs in {work}")
        local, forwarded = [], []
        i = 0
        want = 1 if MODE == "rls" else ITEMS
        while len(local) < want or len(forwarded) < want:
            i += 1
            if MODE == "rls":
                key = f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}"
                name, unique = RLS_NAME, lp("remote_address") + "=" + lp(key)
            else:
                key, name, unique = f"account:{i}", "bench_fwd", f"account:{i}"
            answer = post(ha, "/v1/GetRateLimits", {"requests": [
                {"name": name, "unique_key": unique, "hits": "0", "limit": "1000000000000",
                 "duration": "3600000"}]})["responses"][0]
            (forwarded if answer.get("metadata", {}).get("owner") else local).append(key)
        paths = {}
        for kind, keys in (("local", local[:want]), ("forwarded", forwarded[:want])):
            paths[kind] = os.path.join(work, kind + ".bin")
            open(paths[kind], "wb").write(rls_body(keys[0]) if MODE == "rls" else body(keys))
        # Both kinds are warm before either is measured; then rounds alternate them (local first in
        # even rounds, forwarded first in odd ones), so a drift of the machine's speed during the
        # run falls on both alike and each round's ratio compares runs seconds apart.
        for kind in ("local", "forwarded"):
            h2load(ga, paths[kind], WARMUP)
        ratios = []
        every = {"local": [], "forwarded": []}
        for r in range(ROUNDS):
            print(f"round {r + 1}: a fixed loop on the nodes' core took {core_speed():.0f} ms", flush=True)
            runs = {}
            for kind in (("local", "forwarded") if r % 2 == 0 else ("forwarded", "local")):
                runs[kind] = measure(kind, paths[kind], want, r, procs, ha, ga, work)
            for kind in ("local", "forwarded"):
                rate, us_a, us_b, batch, failed, cs_a, cs_b, k_a, k_b, lat, jit_gc = runs[kind]
                print(f"round {r + 1} {kind:9s} {MODE} items={want} batching={BATCHING}"
                      f"{' behavior=global' if BEHAVIOR else ''}: "
                      f"{rate:9.0f} items/s, "
                      f"CPU us/item front {us_a:6.2f} owner {us_b:6.2f} total {us_a + us_b:6.2f} "
                      f"(in the kernel: front {k_a:5.2f} owner {k_b:5.2f}), "
                      f"mean batch {batch:6.1f}, context switches/item front {cs_a:5.2f} "
                      f"owner {cs_b:5.2f}, p50 {lat[0]:.2f} ms p99 {lat[1]:.2f} ms, "
                      f"failed calls {failed}, JIT/GC CPU ms front "
                      f"{1e3 * jit_gc[0][0]:.0f}/{1e3 * jit_gc[0][1]:.0f} owner "
                      f"{1e3 * jit_gc[1][0]:.0f}/{1e3 * jit_gc[1][1]:.0f}")
            ratios.append(runs["forwarded"][0] / runs["local"][0])
            for kind in every:
                every[kind].append(runs[kind])
            print(f"round {r + 1} forwarded/local throughput {ratios[-1]:.3f}; "
                  f"CPU a forwarded item costs beyond a local one: "
                  f"{sum(runs['forwarded'][1:3]) - sum(runs['local'][1:3]):.2f} us", flush=True)
        ordered = sorted(ratios)
        median = (ordered[len(ordered) // 2] if len(ordered) % 2
                  else sum(ordered[len(ordered) // 2 - 1:len(ordered) // 2 + 1]) / 2)
        print(f"forwarded/local throughput over {ROUNDS} rounds: median {median:.3f}, "
              f"min {ordered[0]:.3f}, max {ordered[-1]:.3f}")
        # A slower machine only adds cost, so each path's best round is its cost at full speed.
        best = {kind: max(r[0] for r in rs) for kind, rs in every.items()}
        least = {kind: min(r[1] + r[2] for r in rs) for kind, rs in every.items()}
        print(f"best rounds: local {best['local']:.0f} items/s, forwarded {best['forwarded']:.0f} "
              f"items/s, ratio {best['forwarded'] / best['local']:.3f}; least CPU us/item local "
              f"{least['local']:.2f}, forwarded {least['forwarded']:.2f} (front + owner), ratio "
              f"{least['local'] / least['forwarded']:.3f}")
        if LIGHT_RPS:
            for kind in ("local", "forwarded"):
                log = os.path.join(work, kind + "-light.log")
                h2load(ga, os.path.join(work, kind + ".bin"), SECONDS, log, light=True)
                p50, p99 = latency(log)
                print(f"light load ({LIGHT_RPS} calls/s, 1 stream) {kind:9s}: "
                      f"p50 {p50:.3f} ms, p99 {p99:.3f} ms")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()


def measure(kind, path, want, r, procs, ha, ga, work):
    """One measured run of KIND's calls: items/s, CPU and kernel us per item on each node, context
    switches per item, the mean batch size and the latency; the first round may be profiled."""
    cpu_a, cpu_b = cpu_seconds(procs[0].pid), cpu_seconds(procs[1].pid)
    cs_a, cs_b = context_switches(procs[0].pid), context_switches(procs[1].pid)
    sys_a, sys_b = cpu_seconds(procs[0].pid, True), cpu_seconds(procs[1].pid, True)
    jit_gc = [jit_and_gc_seconds(proc.pid) for proc in procs]
    batches, batch_items = metric(ha, "weir_peer_batches_total"), metric(
        ha, "weir_peer_batch_items_total")
    log = os.path.join(work, f"{kind}-{r}.log")
    if PROFILE and r == 0:
        for proc, node in ((procs[0], "a"), (procs[1], "b")):
            subprocess.run(["jcmd", str(proc.pid), "JFR.start", f"settings={PROFILE_SETTINGS}",
                            f"duration={SECONDS}s",
                            f"filename={os.path.join(PROFILE, kind + '-' + node + '.jfr')}"],
                           capture_output=True, check=True)
    counters = [count_syscalls(proc.pid) for proc in procs] if SYSCALLS and r == 0 else []
    core_before = core_ticks()
    done, failed = h2load(ga, path, SECONDS, log)
    core = [after - before for before, after in zip(core_before, core_ticks())]
    # user, nice, system, irq and softirq against those plus idle and iowait (steal is not this VM's).
    busy = core[0] + core[1] + core[2] + core[5] + core[6]
    print(f"{kind:9s} run: the front's core (CPU {NODE_CPU}) was busy "
          f"{100 * busy / max(1, busy + core[3] + core[4]):.1f} % of the run", flush=True)
    calls = [stop_counting(c) for c in counters]
    used_a = cpu_seconds(procs[0].pid) - cpu_a
    used_b = cpu_seconds(procs[1].pid) - cpu_b
    sys_a = cpu_seconds(procs[0].pid, True) - sys_a
    sys_b = cpu_seconds(procs[1].pid, True) - sys_b
    switches_a = context_switches(procs[0].pid) - cs_a
    switches_b = context_switches(procs[1].pid) - cs_b
    jit_gc = [tuple(now - then for now, then in zip(jit_and_gc_seconds(proc.pid), before))
              for proc, before in zip(procs, jit_gc)]
    batches = metric(ha, "weir_peer_batches_total") - batches
    batch_items = metric(ha, "weir_peer_batch_items_total") - batch_items
    items = done * want
    for node, counted in zip("ab", calls):
        busiest = sorted(counted.items(), key=lambda kv: -kv[1])[:6]
        print(f"{kind:9s} node {node} system calls per item: " + ", ".join(
            f"{name} {n / items:.3f}" for name, n in busiest if n))
    return (items / SECONDS, 1e6 * used_a / items, 1e6 * used_b / items,
            batch_items / batches if batches else 0.0, failed,
            switches_a / items, switches_b / items,
            1e6 * sys_a / items, 1e6 * sys_b / items, latency(log), jit_gc)


def core_ticks():
    """The front's core's time so far in /proc/stat's columns (user, nice, system, idle, iowait, ...)."""
    for line in open("/proc/stat"):
        if line.startswith(f"cpu{NODE_CPU} "):
            return [int(x) for x in line.split()[1:]]
    sys.exit(f"/proc/stat has no line for CPU {NODE_CPU}")


def count_syscalls(pid):
    """Starts perf stat counting the system calls in COUNTED_SYSCALLS made by process pid."""
    events = ",".join(f"syscalls:sys_enter_{name}" for name in COUNTED_SYSCALLS)
    return subprocess.Popen(["perf", "stat", "-x", ";", "-e", events, "-p", str(pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def stop_counting(perf):
    """Stops a count_syscalls perf stat and returns its counts by system call name."""
    perf.send_signal(2)
    _, err = perf.communicate()
    counts = {}
    for line in err.splitlines():
        fields = line.split(";")
        if len(fields) > 2 and fields[2].startswith("syscalls:sys_enter_") and fields[0].isdigit():
            counts[fields[2][len("syscalls:sys_enter_"):]] = int(fields[0])
    return counts


if __name__ == "__main__":
    main()
