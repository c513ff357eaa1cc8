/* An instant Alternator bot for benchmarks/bench_vs_fastchess.py: it answers hello, ready, pong, and plays the
 * first legal placement in cell order (pass when none) from the turn's move list, in a few microseconds. With an
 * argument THINK_MS it sleeps that long before each move (a bot that thinks without using the CPU).
 * One write per reply, nothing on stderr: the referee's cost is all that varies.
 *
 *     cc -O2 -o instant_bot instant_bot.c && ./instant_bot [THINK_MS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char line[1 << 20], out[512];
static int size[26 * 99], width = 8, height = 8, cells = 64;

/* The text just after `"key":` in the current line, or NULL. */
static const char *after(const char *key) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = strstr(line, pattern);
    return at ? at + strlen(pattern) : NULL;
}

static void say(const char *text) {
    size_t left = strlen(text);
    while (left > 0) {
        ssize_t wrote = write(1, text, left);
        if (wrote <= 0) exit(1);
        text += wrote, left -= (size_t)wrote;
    }
}

static const char *cell(const char *at, int *index) {
    int file = *at++ - 'a', rank = 0;
    while (*at >= '0' && *at <= '9') rank = rank * 10 + (*at++ - '0');
    *index = (rank - 1) * width + file;
    return at;
}

/* The first legal placement (p, q) in cell order: p and q roots, adjacent, size(p) >= size(q). */
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
    long think_ms = argc > 1 ? atol(argv[1]) : 0;
    struct timespec think = {think_ms / 1000, (think_ms % 1000) * 1000000L};
    char game_id[160] = "", move[32];
    while (fgets(line, sizeof line, stdin)) {
        const char *type = after("type");
        if (!type) continue;
        if (!strncmp(type, "\"turn\"", 6)) {
            choose(move, sizeof move);
            if (think_ms > 0) nanosleep(&think, NULL);
            snprintf(out, sizeof out, "{\"type\":\"move\",\"move\":\"%s\"}\n", move);
            say(out);
        } else if (!strncmp(type, "\"hello\"", 7)) {
            say("{\"type\":\"hello\",\"protocol\":1,\"name\":\"instant-c\"}\n");
        } else if (!strncmp(type, "\"new_game\"", 10)) {
            const char *id = after("game_id");
            if (id) sscanf(id, "\"%150[^\"]", game_id);
            width = atoi(after("width") ? after("width") : "8");
            height = atoi(after("height") ? after("height") : "8");
            cells = width * height;
            snprintf(out, sizeof out, "{\"type\":\"ready\",\"game_id\":\"%s\"}\n", game_id);
            say(out);
        } else if (!strncmp(type, "\"ping\"", 6)) {
            const char *id = after("id");
            snprintf(out, sizeof out, "{\"type\":\"pong\",\"id\":%d}\n", id ? atoi(id) : 0);
            say(out);
        } else if (!strncmp(type, "\"quit\"", 6)) {
            return 0;
        }
    }
    return 0;
}
