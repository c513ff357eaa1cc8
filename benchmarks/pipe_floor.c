/* The host's floor for benchmarks/bench_clock_fairness.py: what a move's "referee minus bot" time is when
 * nothing but two C processes and a pipe each way sit between the clocks. PAIRS parent/child pairs run at
 * once (as games do at a concurrency); each parent stamps, writes a byte, and stamps again when the child's
 * answer is read; the child stamps its read and its write around a busy spin of SPIN_US. Prints every
 * (parent time - child time) in microseconds, one per line, for the benchmark to take percentiles of.
 *
 *     cc -O2 -o pipe_floor pipe_floor.c && ./pipe_floor SPIN_US ROUNDS PAIRS
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void pair(long long spin_ns, int rounds, int out) {
    int down[2], up[2];
    if (pipe(down) || pipe(up)) exit(1);
    if (fork() == 0) {
        char byte;
        long long t[2];
        close(down[1]), close(up[0]);
        while (read(down[0], &byte, 1) == 1) {
            t[0] = now_ns();
            while (now_ns() < t[0] + spin_ns) {
            }
            t[1] = now_ns();
            if (write(up[1], t, sizeof t) != sizeof t) exit(1);
        }
        exit(0);
    }
    close(down[0]), close(up[1]);
    for (int i = 0; i < rounds; i++) {
        long long t[2], start = now_ns();
        if (write(down[1], "x", 1) != 1 || read(up[0], t, sizeof t) != sizeof t) exit(1);
        long long end = now_ns();
        dprintf(out, "%.3f\n", ((end - start) - (t[1] - t[0])) / 1e3);
    }
    close(down[1]);
    wait(NULL);
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    long long spin_ns = atoll(argv[1]) * 1000LL;
    int rounds = atoi(argv[2]), pairs = atoi(argv[3]);
    for (int p = 0; p < pairs; p++) {
        if (fork() == 0) {
            pair(spin_ns, rounds, 1);
            exit(0);
        }
    }
    while (wait(NULL) > 0) {
    }
    return 0;
}
