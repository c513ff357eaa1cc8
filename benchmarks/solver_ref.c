/* A reference exact solver for Alternator, for benchmarks/bench_solver.py to compare the Python solver
 * (sample_bots/solver.py) with: a straightforward negamax with alpha-beta (fail-soft) and a transposition
 * table of value bounds and best moves (2^22 entries, always replaced), keyed on a Zobrist hash of the
 * stems, the side to move and the passes just made. Moves are tried table move first, then by the margin
 * they take at once, pass last. No symmetry, no null windows, no enhanced cut-offs: the plain design a C
 * programmer would write first, so that the Python solver's figures have a floor to be measured against.
 * Same rules as ../shared/RULES.md: a placement (p, q) needs p and q adjacent roots and size(p) >= size(q).
 *
 *     cc -O2 -o solver_ref solver_ref.c && ./solver_ref WIDTH HEIGHT [MOVE ...]
 *
 * Prints one line: the final Black - White tree margin with perfect play (before komi), a best move, the
 * nodes searched and the CPU seconds taken.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXN 64
#define TT_BITS 22
#define PASS_MOVE (-1)
#define NO_MOVE (-2)
#define INF 30000 /* fits the int16_t bounds of an entry */

typedef struct {
    uint64_t key;
    int16_t lower, upper;
    int16_t move;
} Entry;

static int width, height, n;
static int is_root[MAXN], size[MAXN], sign[MAXN];
static int margin, stm = 1, passes;
static int nedges, edge_a[4 * MAXN], edge_b[4 * MAXN];
static uint64_t zmove[8 * MAXN], zturn, zpass[3], hash;
static Entry *table;
static long long nodes;

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t next_random(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Directed placement m: edge m / 2, from a to b when m is even, b to a when odd. */
static int pit_of(int m) { return m & 1 ? edge_b[m >> 1] : edge_a[m >> 1]; }
static int root_of(int m) { return m & 1 ? edge_a[m >> 1] : edge_b[m >> 1]; }

static void play(int m, int *saved) {
    int p = pit_of(m), q = root_of(m);
    *saved = size[p];
    is_root[p] = 0;
    size[q] += *saved;
    margin += 2 * *saved * sign[q];
    hash ^= zmove[m] ^ zturn ^ zpass[passes];
    passes = 0;
    stm = -stm;
}

static void unplay(int m, int saved, int old_passes) {
    int p = pit_of(m), q = root_of(m);
    stm = -stm;
    passes = old_passes;
    hash ^= zmove[m] ^ zturn ^ zpass[passes];
    margin -= 2 * saved * sign[q];
    size[q] -= saved;
    is_root[p] = 1;
}

static int negamax(int alpha, int beta) {
    int moves[4 * MAXN], gains[4 * MAXN], count = 0;
    nodes++;
    for (int e = 0; e < nedges; e++) {
        int a = edge_a[e], b = edge_b[e];
        if (!is_root[a] || !is_root[b]) continue;
        if (size[a] >= size[b]) moves[count] = 2 * e, gains[count++] = 2 * size[a] * sign[b] * stm;
        if (size[b] >= size[a]) moves[count] = 2 * e + 1, gains[count++] = 2 * size[b] * sign[a] * stm;
    }
    if (count == 0) return stm * margin; /* only passes are left: the game ends as it stands */
    Entry *entry = &table[hash & ((1u << TT_BITS) - 1)];
    int tt_move = NO_MOVE, lower = -INF, upper = INF;
    if (entry->key == hash) {
        lower = entry->lower, upper = entry->upper, tt_move = entry->move;
        if (lower >= beta) return lower;
        if (upper <= alpha) return upper;
        if (lower == upper) return lower;
        if (lower > alpha) alpha = lower;
        if (upper < beta) beta = upper;
    }
    /* insertion sort by gain, best first; then the table move to the front; pass last */
    for (int i = 1; i < count; i++) {
        int m = moves[i], g = gains[i], j = i - 1;
        while (j >= 0 && gains[j] < g) moves[j + 1] = moves[j], gains[j + 1] = gains[j], j--;
        moves[j + 1] = m, gains[j + 1] = g;
    }
    moves[count++] = PASS_MOVE;
    if (tt_move != NO_MOVE) {
        for (int i = 0; i < count; i++) {
            if (moves[i] == tt_move) {
                for (; i > 0; i--) moves[i] = moves[i - 1];
                moves[0] = tt_move;
                break;
            }
        }
    }
    int best = -INF, best_move = moves[0], a = alpha, old_passes = passes;
    for (int i = 0; i < count; i++) {
        int m = moves[i], value;
        if (m == PASS_MOVE) {
            if (old_passes) {
                value = stm * margin; /* a second pass in a row ends the game */
            } else {
                hash ^= zturn ^ zpass[0] ^ zpass[1];
                passes = 1, stm = -stm;
                value = -negamax(-beta, -a);
                passes = 0, stm = -stm;
                hash ^= zturn ^ zpass[0] ^ zpass[1];
            }
        } else {
            int saved;
            play(m, &saved);
            value = -negamax(-beta, -a);
            unplay(m, saved, old_passes);
        }
        if (value > best) {
            best = value, best_move = m;
            if (value > a) a = value;
            if (value >= beta) break;
        }
    }
    entry->key = hash;
    entry->lower = best > alpha ? best : -INF;
    entry->upper = best < beta ? best : INF;
    entry->move = (int16_t)best_move;
    return best;
}

static int cell_of(const char *text, const char **end) {
    int file = text[0] - 'a', rank = 0;
    const char *s = text + 1;
    if (file < 0 || file >= width) return -1;
    while (*s >= '0' && *s <= '9') rank = rank * 10 + (*s++ - '0');
    *end = s;
    return rank >= 1 && rank <= height ? (rank - 1) * width + file : -1;
}

static void cell_text(int c, char *out) { sprintf(out, "%c%d", 'a' + c % width, c / width + 1); }

static int find_move(int p, int q) {
    for (int e = 0; e < nedges; e++) {
        if (edge_a[e] == p && edge_b[e] == q) return 2 * e;
        if (edge_b[e] == p && edge_a[e] == q) return 2 * e + 1;
    }
    return NO_MOVE;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s WIDTH HEIGHT [MOVE ...]\n", argv[0]);
        return 2;
    }
    width = atoi(argv[1]), height = atoi(argv[2]), n = width * height;
    if (width < 2 || height < 2 || n > MAXN) {
        fprintf(stderr, "a board of 2x2 to 64 cells\n");
        return 2;
    }
    for (int c = 0; c < n; c++) {
        is_root[c] = 1, size[c] = 1;
        sign[c] = (c % width + c / width) % 2 == 0 ? 1 : -1;
        margin += sign[c];
        if (c % width + 1 < width) edge_a[nedges] = c, edge_b[nedges++] = c + 1;
        if (c + width < n) edge_a[nedges] = c, edge_b[nedges++] = c + width;
    }
    for (int m = 0; m < 2 * nedges; m++) zmove[m] = next_random();
    zturn = next_random();
    zpass[0] = 0, zpass[1] = next_random(), zpass[2] = next_random();
    hash = next_random(); /* not 0: an empty slot of the table has key 0 */
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "pass") == 0) {
            hash ^= zturn ^ zpass[passes] ^ zpass[passes + 1];
            passes++, stm = -stm;
            continue;
        }
        const char *end;
        int p = cell_of(argv[i], &end), q = p < 0 ? -1 : cell_of(end, &end);
        int m = q < 0 ? NO_MOVE : find_move(p, q);
        if (m == NO_MOVE || *end || !is_root[p] || !is_root[q] || size[p] < size[q] || passes >= 2) {
            fprintf(stderr, "move %d (%s) is illegal\n", i - 2, argv[i]);
            return 2;
        }
        int saved;
        play(m, &saved);
    }
    if (passes >= 2) {
        fprintf(stderr, "the game is over\n");
        return 2;
    }
    table = calloc((size_t)1 << TT_BITS, sizeof(Entry));
    if (!table) return 1;
    clock_t start = clock();
    int value = negamax(-INF, INF);
    double seconds = (double)(clock() - start) / CLOCKS_PER_SEC;
    /* the best move: the root's entry, or the first move that keeps the value when it was overwritten */
    Entry *entry = &table[hash & ((1u << TT_BITS) - 1)];
    int best = entry->key == hash ? entry->move : NO_MOVE;
    char move_text[16] = "pass";
    if (best >= 0) {
        char a[8], b[8];
        cell_text(pit_of(best), a), cell_text(root_of(best), b);
        snprintf(move_text, sizeof move_text, "%s%s", a, b);
    } else if (best == NO_MOVE) {
        snprintf(move_text, sizeof move_text, "?");
    }
    printf("%d %s %lld %.4f\n", stm * value, move_text, nodes, seconds);
    free(table);
    return 0;
}
