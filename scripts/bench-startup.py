#!/usr/bin/env python3
"""bench-startup.py: start-up time of short commands, builds interleaved.

Each round runs every command once, in order (posix_spawn, stdout and
stderr to /dev/null, wait4 for the CPU time), so a burst of load from
other processes hits every build alike; 10 warm-up rounds first. Prints,
per command, the wall-clock median and best and the CPU (user + system)
median and best in ms, and the load (uptime) at the end.

Usage: python3 scripts/bench-startup.py ROUNDS 'BIN_A --help' 'BIN_B --help' ...
A command may start with VAR=value words (set in its environment only).
BENCHMARKS.md section 9 (issue 28) uses it with ROUNDS=400.
"""
import os
import shlex
import statistics
import sys
import time


def main():
    rounds = int(sys.argv[1])
    cmds = [shlex.split(c) for c in sys.argv[2:]]
    devnull = os.open(os.devnull, os.O_WRONLY)

    def run(argv):
        env = dict(os.environ)
        while argv and "=" in argv[0] and not argv[0].startswith(("/", ".")):
            k, v = argv[0].split("=", 1)
            env[k] = v
            argv = argv[1:]
        fa = [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
        t0 = time.perf_counter_ns()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=fa)
        _, status, ru = os.wait4(pid, 0)
        t1 = time.perf_counter_ns()
        if status != 0:
            sys.exit("%s: exit status %d" % (" ".join(argv), status))
        return (t1 - t0) / 1e6, (ru.ru_utime + ru.ru_stime) * 1e3

    for _ in range(10):
        for c in cmds:
            run(c)
    wall = [[] for _ in cmds]
    cpu = [[] for _ in cmds]
    for _ in range(rounds):
        for i, c in enumerate(cmds):
            w, u = run(c)
            wall[i].append(w)
            cpu[i].append(u)
    print(os.popen("uptime").read().strip())
    for i, c in enumerate(cmds):
        print("%-50s wall median %6.2f best %6.2f | cpu median %5.2f best %5.2f ms"
              % (" ".join(c)[-50:], statistics.median(wall[i]), min(wall[i]),
                 statistics.median(cpu[i]), min(cpu[i])))


if __name__ == "__main__":
    main()
