/* A bot for benchmarks/bench_clock_fairness.py: spends FRACTION of what its clock allows on each move
 * (busy-spinning, like an engine) and reports its own time for the move, from the moment its read of the
 * turn line returned to just before it writes the move, in an `info` sent with the move and on stderr.
 * It plays the first legal placement in cell order (roots only matter: a move joins two roots).
 *
 *     cc -O2 -o spender spender.c && ./spender 0.9
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char line[1 << 20], out[4096];
static int size[26 * 99], width, height, cells;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The text just after `"key":` in the current line, or NULL. */
static const char *after(const char *key) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = strstr(line, pattern);
    return at ? at + strlen(pattern) : NULL;
}

/* A number field; -1 when null or absent. */
static double number(const char *key) {
    const char *at = after(key);
    return (at && *at != 'n') ? atof(at) : -1;
}

static const char *cell(const char *at, int *index) {
    int file = *at++ - 'a', rank = 0;
    while (*at >= '0' && *at <= '9') rank = rank * 10 + (*at++ - '0');
    *index = (rank - 1) * width + file;
    return at;
}

static void say(const char *text) {
    size_t left = strlen(text);
    while (left > 0) {
        ssize_t wrote = write(1, text, left);
        if (wrote <= 0) exit(1);
        text += wrote, left -= (size_t)wrote;
    }
}

/* The allowance for this move, ms: the per-move limit, or remaining / 10 + increment (never more than remaining). */
static double allowance(const char *color) {
    double allow = number("move_limit_ms");
    if (allow < 0) {
        double remaining = number(color[0] == 'b' ? "black_ms" : "white_ms");
        allow = remaining / 10 + number("increment_ms");
        if (allow > remaining) allow = remaining;
    }
    return allow;
}

static void choose(char *move, size_t length) {
    for (int i = 0; i < cells; i++) size[i] = 1;
    const char *at = after("moves");
    for (at = at ? at + 1 : ""; *at == '"'; at += (at[1] == ',') ? 2 : 1) {
        at++;
        if (*at == 'p') {
            at += 4;
            continue;
        }
        int pit, root;
        at = cell(cell(at, &pit), &root);
        size[root] += size[pit], size[pit] = 0;
    }
    snprintf(move, length, "pass");
    for (int p = 0; p < cells; p++) {
        int around[4] = {p % width ? p - 1 : -1, (p + 1) % width ? p + 1 : -1, p - width, p + width};
        for (int k = 0; k < 4; k++) {
            int q = around[k];
            if (q >= 0 && q < cells && size[p] && size[q] && size[p] >= size[q]) {
                snprintf(move, length, "%c%d%c%d", 'a' + p % width, p / width + 1, 'a' + q % width, q / width + 1);
                return;
            }
        }
    }
}

int main(int argc, char **argv) {
    double fraction = argc > 1 ? atof(argv[1]) : 0.9;
    char color[8] = "black", game_id[160] = "", move[32];
    int moves_made = 0;
    while (fgets(line, sizeof line, stdin)) {
        long long got = now_ns();
        const char *type = after("type");
        if (!type) continue;
        if (!strncmp(type, "\"hello\"", 7)) {
            say("{\"type\":\"hello\",\"protocol\":1,\"name\":\"spender-c\"}\n");
        } else if (!strncmp(type, "\"new_game\"", 10)) {
            sscanf(after("game_id"), "\"%150[^\"]", game_id);
            sscanf(after("color"), "\"%7[^\"]", color);
            width = (int)number("width"), height = (int)number("height"), cells = width * height;
            moves_made = 0;
            snprintf(out, sizeof out, "{\"type\":\"ready\",\"game_id\":\"%s\"}\n", game_id);
            say(out);
        } else if (!strncmp(type, "\"turn\"", 6)) {
            double allow = allowance(color);
            choose(move, sizeof move);
            long long until = got + (long long)(allow * fraction * 1e6);
            while (now_ns() < until) {
            }
            double took = (now_ns() - got) / 1e6;
            moves_made++;
            fprintf(stderr, "move %d self_ms=%.3f allow_ms=%.3f\n", moves_made, took, allow);
            fflush(stderr);
            snprintf(out, sizeof out,
                     "{\"type\":\"info\",\"text\":\"self_ms=%.3f allow_ms=%.3f\"}\n{\"type\":\"move\",\"move\":\"%s\"}\n",
                     took, allow, move);
            say(out);
        } else if (!strncmp(type, "\"ping\"", 6)) {
            snprintf(out, sizeof out, "{\"type\":\"pong\",\"id\":%d}\n", (int)number("id"));
            say(out);
        } else if (!strncmp(type, "\"quit\"", 6)) {
            return 0;
        }
    }
    return 0;
}
