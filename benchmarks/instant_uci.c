/* An instant scripted UCI engine for benchmarks/bench_vs_fastchess.py: fastchess checks every move against its
 * own board, so rather than generating moves this engine plays one fixed legal game, the GAME below, from the
 * standard start: on `go` it answers the next move of GAME after the `position startpos moves ...` it was
 * given. Both sides run this engine, so every game is GAME, 63 plies ending in White's checkmate (about as
 * long as an 8x8 Alternator game between two first-legal-placement bots: 62 moves). GAME is a random legal
 * game (python-chess, seed 20, a mate in one always played) written out once. With an argument THINK_MS it
 * sleeps that long before each move.
 *
 *     cc -O2 -o instant_uci instant_uci.c && ./instant_uci [THINK_MS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *GAME[] = {
    "h2h3", "d7d6", "b1a3", "b8c6", "b2b4", "c8e6", "a3b5", "a7a6", "f2f3", "d8b8", "b5d4", "e6c8", "b4b5",
    "c6d4", "g2g4", "a6a5", "b5b6", "d4c6", "e2e3", "e7e6", "a2a3", "a8a6", "d1e2", "c6e5", "e2c4", "c7b6",
    "a3a4", "h7h5", "g4g5", "b8a7", "c4d5", "e8d8", "d2d4", "d8e7", "d5d6", "e7e8", "d6e6", "e8d8", "e6e5",
    "f8b4", "e1d1", "c8g4", "e5h2", "d8e8", "h2f2", "h5h4", "f2h4", "g4f5", "a1a3", "f5h7", "f3f4", "h7g6",
    "f1c4", "e8f8", "h4h5", "h8h7", "a3b3", "a7b8", "c4e6", "g6c2", "d1c2", "b6b5", "h5f7",
};
static const int PLIES = sizeof GAME / sizeof GAME[0];
static char line[1 << 16], out[128];

static void say(const char *text) {
    size_t left = strlen(text);
    while (left > 0) {
        ssize_t wrote = write(1, text, left);
        if (wrote <= 0) exit(1);
        text += wrote, left -= (size_t)wrote;
    }
}

/* The number of moves after "moves" in a position command. */
static int plies(const char *command) {
    const char *at = strstr(command, " moves ");
    if (!at) return 0;
    int count = 0;
    for (at += 6; *at; at++)
        if (*at == ' ' && at[1] > ' ') count++;
    return count;
}

int main(int argc, char **argv) {
    long think_ms = argc > 1 ? atol(argv[1]) : 0;
    struct timespec think = {think_ms / 1000, (think_ms % 1000) * 1000000L};
    int ply = 0;
    while (fgets(line, sizeof line, stdin)) {
        if (!strncmp(line, "go", 2)) {
            if (think_ms > 0) nanosleep(&think, NULL);
            snprintf(out, sizeof out, "bestmove %s\n", ply < PLIES ? GAME[ply] : "0000");
            say(out);
        } else if (!strncmp(line, "position", 8)) {
            ply = plies(line);
        } else if (!strncmp(line, "isready", 7)) {
            say("readyok\n");
        } else if (!strncmp(line, "uci", 3) && (line[3] == '\n' || line[3] == '\r' || line[3] == 0)) {
            say("id name instant-uci\nid author bench\nuciok\n");
        } else if (!strncmp(line, "quit", 4)) {
            return 0;
        }
    }
    return 0;
}
