/* SPDX-License-Identifier: Apache-2.0 */
/* shm_client.c: test client of shared device memory through `gpuos serve`
 * (tests/t_shm.sh; issue 10). Every command opens vGPU VGPU and prints one line
 * of key=value results; the exit status is 0 when the command ran (its results
 * are for the script to judge), 2 on usage errors.
 *
 *   shm_client VGPU producer KEY BYTES DIR   create (mode 0600), attach, write
 *       pattern 1 over the first half, touch DIR/ready, wait for DIR/done, check
 *       that the second half holds 0xc0ffee words (the consumer's kernel), detach
 *   shm_client VGPU consumer KEY DIR         wait for DIR/ready, attach, check the
 *       first half, fill the second half with 0xc0ffee by the built-in fill
 *       kernel, touch DIR/done, detach
 *   shm_client VGPU hold KEY FILE            attach, write FILE, sleep (kill -9 me)
 *   shm_client VGPU create KEY BYTES MODE    get with CREAT|EXCL|MODE: id=, rc=
 *   shm_client VGPU attach KEY               get + attach (+ detach): rc=
 *   shm_client VGPU rm KEY | stat KEY | chmod KEY MODE
 *   shm_client VGPU hold_alloc SEED N MB DIR   swapping under host memory pressure
 *       (issue 23.3): allocates up to N buffers of MB, writing a pattern into
 *       each, until the first refusal; touches DIR/ready.SEED, waits for
 *       DIR/go.SEED, then reads every buffer it got back (a refused read is
 *       retried for up to 10 s) and compares it word by word:
 *       got=, alloc_rc=, check_rc= (a read that failed for good), retried=,
 *       mismatches= (words wrong or never read), error= (the first refusal's)
 *   shm_client VGPU many KEY N BYTES    creates keys KEY..KEY+N-1 (CREAT|EXCL|0600)
 *       until the first refusal: created=, then that refusal's rc= and error=
 *   $SHM_CLIENT_HELLO_PID: the pid this client claims in its HELLO (a lie)
 *   shm_client VGPU misuse KEY               mem_free of an attachment, a copy past
 *       its end, a detach of a non-segment: the three rcs
 *   shm_client VGPU work SEED N MB ROUNDS     swapping: N buffers of MB each; each
 *       round copies a pattern into one buffer (only it must be resident) and every
 *       other round launches fill on another (all of them must be); at the end
 *       every buffer is read back and compared word by word with what was written:
 *       mismatches= (0: byte-exact)
 *   shm_client VGPU work SEED N MB ROUNDS SMALL_MB   the same, and every round a
 *       fresh buffer of SMALL_MB is allocated, filled by a launch, read back,
 *       checked and freed (as PyTorch's caching allocator allocates mid-run,
 *       issue 42): an allocation while its own buffers are swapped out or
 *       another vGPU holds the turn
 *   shm_client a swapcost VGPU_B POOL_MB MB...   what one swap costs a tenant (a
 *       BAND-scheduled vGPU when the daemon runs BAND): for each size, vGPU a (this
 *       handle) allocates MB and measures launch + synchronise of an empty kernel
 *       (median of 9, resident); a second handle on VGPU_B allocates the rest of the
 *       pool plus MB/2, which evicts a's buffer; then a's next launch + synchronise
 *       (its buffer restored first). One line per size: bytes, resident_us,
 *       after_swap_us, evict_us (b's allocation), and a's bytes checked after.
 *   shm_client VGPU burst SEED MB PIECES ROUNDS   as a PyTorch job (issue 42): a
 *       2 MB buffer, one of MB, rounds of PIECES asynchronous fills of its pieces
 *       and a 2 MB allocation filled and freed, one synchronisation a round; at
 *       the end every piece is checked: burst rc= mismatches=
 *   shm_client a bounce VGPU_B MB   a's launch on one buffer while its other is
 *       swapped out (issue 42): swapped_before= (b's allocation evicted it),
 *       swapped_after= (0: restored before the kernel ran), mismatches=
 *   shm_client a turns VGPU_B N MB ROUNDS   two vGPUs in turns (issue 10.2): each
 *       of a and VGPU_B allocates N buffers of MB and writes every word by the
 *       built-in pattern kernel; then ROUNDS times, a's turn then b's: one launch
 *       per buffer checks every word against what the previous turn wrote
 *       (mismatches counted on the device), one rewrites it with a new seed,
 *       synchronise, read the counter. One line per turn: round, vgpu, ms,
 *       mismatches, the vGPU's swapped bytes and restores before and after. At
 *       the end every buffer of both is checked once more: final_mismatches=.
 *   shm_client VGPU patcheck 0          the pattern kernel's own check: clean=0,
 *       corrupted=3 (3 words overwritten), other_seed= (all words), outside_rc<0. */
#include "gpuos/gpuos.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static gpuos_vgpu *G;

/* A tenant that lies about its pid (tests/t_hostile2.sh, issue 23.2): with
 * $SHM_CLIENT_HELLO_PID set, getpid() (the pid the library puts in its HELLO)
 * answers that number instead of this process's. */
pid_t getpid(void)
{
    const char *e = getenv("SHM_CLIENT_HELLO_PID");
    return e && *e ? (pid_t)atoi(e) : (pid_t)syscall(SYS_getpid);
}

static uint32_t pat(uint64_t i, uint32_t seed) { return (uint32_t)(i * 2654435761u) ^ (seed * 0x9e3779b9u); }

static int wait_file(const char *path)
{
    struct stat st;
    for (int i = 0; i < 400; i++) {
        if (!stat(path, &st))
            return 0;
        usleep(50000);
    }
    return -1;
}

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
}

static int get_id(int key)
{
    int id = -1;
    int rc = gpuos_shm_get(G, key, 0, 0, &id);
    return rc ? rc : id;
}

static int check_pattern(gpuos_dptr d, uint64_t words, uint32_t seed, int constant)
{
    uint32_t *h = malloc(words * 4);
    if (!h || gpuos_memcpy_dtoh(G, h, d, words * 4))
        return -1;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < words; i++)
        bad += h[i] != (constant ? seed : pat(i, seed));
    free(h);
    return bad == 0;
}

/* fill's launch alone (asynchronous). */
static int fill_async(gpuos_dptr d, uint32_t v, uint64_t words)
{
    static gpuos_module m;
    static gpuos_function f;
    static int loaded;
    gpuos_params p;
    int rc;
    if (!loaded && ((rc = gpuos_module_load_builtin(G, "builtin", &m)) || (rc = gpuos_module_function(G, m, "fill", &f))))
        return rc;
    loaded = 1;
    gpuos_params_init(&p);
    uint32_t pad = 0;
    gpuos_params_add(&p, &d, 8);
    gpuos_params_add(&p, &v, 4);
    gpuos_params_add(&p, &pad, 4);
    gpuos_params_add(&p, &words, 8);
    gpuos_launch_config c = {.grid = {64}, .block = {256}};
    return gpuos_launch(G, f, &c, p.buf, p.len);
}

static int fill(gpuos_dptr d, uint32_t v, uint64_t words)
{
    int rc = fill_async(d, v, words);
    return rc ? rc : gpuos_synchronize(G);
}

/* `VGPU burst SEED MB PIECES ROUNDS` (issue 42, as a PyTorch job runs): a 2 MB
 * buffer, then one of MB; each round PIECES asynchronous launches fill the
 * big buffer's pieces with the round's values, a 2 MB buffer is allocated,
 * filled and freed, and the round ends with one synchronisation; at the end
 * every piece is read back. Prints "burst rc= mismatches= error=". */
static int burst(uint32_t seed, uint64_t bytes, int pieces, int rounds)
{
    gpuos_dptr blk, big, t;
    uint64_t piece = bytes / (uint64_t)pieces / 4 * 4, bad = 0;
    uint32_t *h = malloc(piece);
    int rc = !h || !piece;
    if (!rc && !(rc = gpuos_mem_alloc(G, 2 << 20, &blk)) && !(rc = fill(blk, seed, (2 << 20) / 4)))
        rc = gpuos_mem_alloc(G, bytes, &big);
    for (int r = 0; r < rounds && !rc; r++) {
        for (int k = 0; k < pieces && !rc; k++)
            rc = fill_async(big + (uint64_t)k * piece, seed * 100000u + (uint32_t)(r * pieces + k), piece / 4);
        if (!rc && !(rc = gpuos_mem_alloc(G, 2 << 20, &t))) {
            rc = fill_async(t, (uint32_t)r, (2 << 20) / 4);
            int frc = gpuos_mem_free(G, t);
            rc = rc ? rc : frc;
        }
        if (!rc)
            rc = gpuos_synchronize(G);
    }
    for (int k = 0; k < pieces && !rc; k++)
        if (!(rc = gpuos_memcpy_dtoh(G, h, big + (uint64_t)k * piece, piece)))
            for (uint64_t i = 0; i < piece / 4; i++)
                bad += h[i] != seed * 100000u + (uint32_t)((rounds - 1) * pieces + k);
    printf("burst rc=%d mismatches=%llu error=%s\n", rc, (unsigned long long)bad, rc ? gpuos_error() : "");
    free(h);
    return rc ? 1 : 0;
}

/* `a bounce VGPU_B MB` (issue 42): a's buffers x and y of MB (patterns
 * written, a fill launched through the ring), b's buffer of MB evicts x, then
 * a fill on y alone: a launch may touch any of its client's memory, so x must
 * be restored first (the ring bounces the launch to the daemon, which does
 * it), not left out while the kernel runs. */
static int bounce(const char *vb, uint64_t bytes)
{
    gpuos_vgpu *hb;
    gpuos_dptr x, y, z;
    gpuos_vgpu_facts f0, f1;
    uint64_t words = bytes / 4, bad = 0;
    uint32_t *h = malloc(bytes);
    int rc = !h || gpuos_open(NULL, vb, &hb);
    if (!rc && !(rc = gpuos_mem_alloc(G, bytes, &x)) && !(rc = gpuos_mem_alloc(G, bytes, &y))) {
        for (uint64_t i = 0; i < words; i++)
            h[i] = pat(i, 1);
        if (!(rc = gpuos_memcpy_htod(G, x, h, bytes)) && !(rc = fill(y, 7, words)) &&
            !(rc = gpuos_mem_alloc(hb, bytes, &z)) && !(rc = gpuos_vgpu_info(G, &f0)) && !(rc = fill(y, 9, words)))
            rc = gpuos_vgpu_info(G, &f1);
        if (!rc && !(rc = gpuos_memcpy_dtoh(G, h, x, bytes)))
            for (uint64_t i = 0; i < words; i++)
                bad += h[i] != pat(i, 1);
        if (!rc && !(rc = gpuos_memcpy_dtoh(G, h, y, bytes)))
            for (uint64_t i = 0; i < words; i++)
                bad += h[i] != 9;
    }
    printf("bounce rc=%d swapped_before=%llu swapped_after=%llu mismatches=%llu error=%s\n", rc,
           rc ? 0ull : (unsigned long long)f0.mem_swapped, rc ? 0ull : (unsigned long long)f1.mem_swapped,
           (unsigned long long)bad, rc ? gpuos_error() : "");
    free(h);
    return rc ? 1 : 0;
}

/* pattern (kernels/exec.cu) over words at d: write seed, or check against it
 * adding mismatches to the counter at out. Not synchronised. */
static int pattern(gpuos_vgpu *g, gpuos_function f, gpuos_dptr d, uint32_t seed, uint32_t check, uint64_t words,
                   gpuos_dptr out)
{
    gpuos_params p;
    gpuos_params_init(&p);
    gpuos_params_add(&p, &d, 8);
    gpuos_params_add(&p, &seed, 4);
    gpuos_params_add(&p, &check, 4);
    gpuos_params_add(&p, &words, 8);
    gpuos_params_add(&p, &out, 8);
    gpuos_launch_config c = {.grid = {1056}, .block = {512}};
    return gpuos_launch(g, f, &c, p.buf, p.len);
}

static double ms_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

#define TURNS_MAX 64
static uint32_t turn_seed(int v, int k, int r) { return (uint32_t)(v * 0x01000193u) ^ (uint32_t)(k * 7919) ^ (uint32_t)(r * 104729) ^ 0xa5a5u; }

/* One turn of vGPU v: check every buffer against round r-1's seeds (r > 0),
 * rewrite with round r's (write < 0: check only); mismatches in *bad. */
static int turn(gpuos_vgpu *g, gpuos_function f, int v, gpuos_dptr *b, int n, uint64_t words, gpuos_dptr cnt, int r,
                int write, uint64_t *bad)
{
    uint64_t zero = 0;
    int rc = gpuos_memcpy_htod(g, cnt, &zero, 8);
    for (int k = 0; k < n && !rc; k++) {
        if (r > 0)
            rc = pattern(g, f, b[k], turn_seed(v, k, r - 1), 1, words, cnt);
        if (!rc && write)
            rc = pattern(g, f, b[k], turn_seed(v, k, r), 0, words, 0);
    }
    if (!rc)
        rc = gpuos_synchronize(g);
    if (!rc)
        rc = gpuos_memcpy_dtoh(g, bad, cnt, 8);
    return rc;
}

/* work's allocation mid-run: SMALL bytes allocated, filled with v by a
 * launch, read back into h (at least SMALL bytes), checked, freed. An error's
 * rc (< 0), 1 for a wrong word, else 0. */
static int work_small(uint64_t small, uint32_t v, uint32_t *h)
{
    gpuos_dptr t;
    int rc = gpuos_mem_alloc(G, small, &t);
    if (rc)
        return rc;
    if (!(rc = fill(t, v, small / 4)) && !(rc = gpuos_memcpy_dtoh(G, h, t, small)))
        for (uint64_t i = 0; i < small / 4 && !rc; i++)
            rc = h[i] != v;
    int frc = gpuos_mem_free(G, t);
    return rc ? rc : frc;
}

static int turns(gpuos_vgpu *ga, const char *vb, int n, uint64_t bytes, int rounds)
{
    gpuos_vgpu *g[2] = {ga, NULL};
    gpuos_function f[2];
    gpuos_dptr b[2][TURNS_MAX], cnt[2];
    uint64_t words = bytes / 4, bad;
    int rc;
    if (n < 1 || n > TURNS_MAX || !words || rounds < 1)
        return 2;
    if (gpuos_open(NULL, vb, &g[1])) {
        printf("turns open %s: %s\n", vb, gpuos_error());
        return 1;
    }
    for (int v = 0; v < 2; v++) {
        gpuos_module m;
        double t0 = ms_now();
        if ((rc = gpuos_module_load_builtin(g[v], "builtin", &m)) ||
            (rc = gpuos_module_function(g[v], m, "pattern", &f[v])) || (rc = gpuos_mem_alloc(g[v], 8, &cnt[v]))) {
            printf("turns setup vgpu=%d rc=%d error=%s\n", v, rc, gpuos_error());
            return 1;
        }
        for (int k = 0; k < n; k++)
            if ((rc = gpuos_mem_alloc(g[v], bytes, &b[v][k]))) {
                printf("turns alloc vgpu=%d buffer=%d rc=%d error=%s\n", v, k, rc, gpuos_error());
                return 1;
            }
        if ((rc = turn(g[v], f[v], v, b[v], n, words, cnt[v], 0, 1, &bad))) {
            printf("turns write vgpu=%d rc=%d error=%s\n", v, rc, gpuos_error());
            return 1;
        }
        printf("turn round=0 vgpu=%d ms=%.1f mismatches=0 bytes=%llu\n", v, ms_now() - t0,
               (unsigned long long)(bytes * (uint64_t)n));
        fflush(stdout);
    }
    uint64_t total_bad = 0;
    for (int r = 1; r <= rounds; r++)
        for (int v = 0; v < 2; v++) {
            gpuos_vgpu_facts f0, f1, o0, o1;
            gpuos_vgpu_info(g[v], &f0);
            gpuos_vgpu_info(g[!v], &o0);
            double t0 = ms_now();
            rc = turn(g[v], f[v], v, b[v], n, words, cnt[v], r, 1, &bad);
            double ms = ms_now() - t0;
            gpuos_vgpu_info(g[v], &f1);
            gpuos_vgpu_info(g[!v], &o1);
            if (rc) {
                printf("turn round=%d vgpu=%d rc=%d error=%s\n", r, v, rc, gpuos_error());
                return 1;
            }
            total_bad += bad;
            printf("turn round=%d vgpu=%d ms=%.1f mismatches=%llu swapped_before=%llu swapped_after=%llu "
                   "restores=%llu other_evictions=%llu\n",
                   r, v, ms, (unsigned long long)bad, (unsigned long long)f0.mem_swapped,
                   (unsigned long long)f1.mem_swapped, (unsigned long long)(f1.restores - f0.restores),
                   (unsigned long long)(o1.evictions - o0.evictions));
            fflush(stdout);
        }
    uint64_t fin = 0;
    for (int v = 0; v < 2 && !rc; v++) {
        rc = turn(g[v], f[v], v, b[v], n, words, cnt[v], rounds + 1, 0, &bad);
        fin += bad;
    }
    printf("turns rc=%d rounds=%d mismatches=%llu final_mismatches=%llu error=%s\n", rc, rounds,
           (unsigned long long)total_bad, (unsigned long long)fin, rc ? gpuos_error() : "");
    gpuos_close(g[1]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: shm_client VGPU COMMAND KEY ...\n");
        return 2;
    }
    const char *cmd = argv[2];
    int key = (int)strtol(argv[3], NULL, 0);
    if (gpuos_open(NULL, argv[1], &G)) {
        printf("open rc=-1 error=%s\n", gpuos_error());
        return 1;
    }
    int rc = 0, id = -1;
    gpuos_dptr d = 0;
    if (!strcmp(cmd, "producer") && argc == 6) {
        uint64_t bytes = strtoull(argv[4], NULL, 0), half = bytes / 2, words = half / 4;
        char ready[512], done[512];
        snprintf(ready, sizeof ready, "%s/ready", argv[5]);
        snprintf(done, sizeof done, "%s/done", argv[5]);
        if ((rc = gpuos_shm_get(G, key, bytes, GPUOS_SHM_CREAT | GPUOS_SHM_EXCL | 0600, &id)) ||
            (rc = gpuos_shm_attach(G, id, &d))) {
            printf("producer rc=%d error=%s\n", rc, gpuos_error());
            return 1;
        }
        uint32_t *h = malloc(half);
        for (uint64_t i = 0; i < words; i++)
            h[i] = pat(i, 1);
        rc = gpuos_memcpy_htod(G, d, h, half);
        free(h);
        touch(ready);
        int waited = wait_file(done);
        int match = check_pattern(d + half, words, 0xc0ffee, 1);
        int dt = gpuos_shm_detach(G, d);
        printf("producer rc=%d waited=%d match=%d detach=%d id=%d\n", rc, waited, match, dt, id);
    } else if (!strcmp(cmd, "consumer") && argc == 5) {
        char ready[512], done[512];
        snprintf(ready, sizeof ready, "%s/ready", argv[4]);
        snprintf(done, sizeof done, "%s/done", argv[4]);
        if (wait_file(ready) || (id = get_id(key)) < 0 || (rc = gpuos_shm_attach(G, id, &d))) {
            printf("consumer rc=%d error=%s\n", rc ? rc : id, gpuos_error());
            return 1;
        }
        gpuos_shm_ds ds;
        gpuos_shm_ctl(G, id, GPUOS_SHM_STAT, &ds);
        uint64_t half = ds.bytes / 2, words = half / 4;
        int match = check_pattern(d, words, 1, 0);
        rc = fill(d + half, 0xc0ffee, words);
        touch(done);
        int dt = gpuos_shm_detach(G, d);
        printf("consumer rc=%d match=%d detach=%d nattch=%d\n", rc, match, dt, ds.nattch);
    } else if (!strcmp(cmd, "hold") && argc == 5) {
        if ((id = get_id(key)) < 0 || (rc = gpuos_shm_attach(G, id, &d))) {
            printf("hold rc=%d error=%s\n", rc ? rc : id, gpuos_error());
            return 1;
        }
        touch(argv[4]);
        for (;;)
            pause();
    } else if (!strcmp(cmd, "create") && argc == 6) {
        rc = gpuos_shm_get(G, key, strtoull(argv[4], NULL, 0),
                           GPUOS_SHM_CREAT | GPUOS_SHM_EXCL | (int)strtol(argv[5], NULL, 8), &id);
        printf("create rc=%d id=%d error=%s\n", rc, id, rc ? gpuos_error() : "");
    } else if (!strcmp(cmd, "attach")) {
        id = get_id(key);
        rc = id < 0 ? id : gpuos_shm_attach(G, id, &d);
        printf("attach rc=%d error=%s\n", rc, rc ? gpuos_error() : "");
        if (!rc)
            gpuos_shm_detach(G, d);
    } else if (!strcmp(cmd, "ro")) {
        /* a read-only attachment (SHM_RDONLY): the second half reads 0xc0ffee
         * (the consumer's kernel), a copy into it and a fill kernel over it are
         * refused, and the bytes are unchanged afterwards */
        gpuos_shm_ds ds;
        id = get_id(key);
        rc = id < 0 ? id : gpuos_shm_attach_flags(G, id, GPUOS_SHM_RDONLY, &d);
        int second = -1, r_copy = 1, r_kernel = 1, same = -1;
        if (!rc && !(rc = gpuos_shm_ctl(G, id, GPUOS_SHM_STAT, &ds))) {
            uint64_t half = ds.bytes / 2;
            uint32_t w = 7;
            second = check_pattern(d + half, half / 4, 0xc0ffee, 1);
            r_copy = gpuos_memcpy_htod(G, d + half, &w, 4);
            r_kernel = fill(d + half, 7, half / 4);
            same = check_pattern(d + half, half / 4, 0xc0ffee, 1);
            gpuos_shm_detach(G, d);
        }
        printf("ro attach=%d second_half=%d copy=%d kernel=%d unchanged=%d error=%s\n", rc, second, r_copy, r_kernel,
               same, rc ? gpuos_error() : "");
    } else if (!strcmp(cmd, "rm")) {
        id = get_id(key);
        rc = id < 0 ? id : gpuos_shm_ctl(G, id, GPUOS_SHM_RMID, NULL);
        printf("rm rc=%d error=%s\n", rc, rc ? gpuos_error() : "");
    } else if (!strcmp(cmd, "stat")) {
        gpuos_shm_ds ds = {0};
        id = get_id(key);
        rc = id < 0 ? id : gpuos_shm_ctl(G, id, GPUOS_SHM_STAT, &ds);
        printf("stat rc=%d nattch=%d uid=%u cuid=%u mode=%o bytes=%llu vgpu=%s cpid=%d lpid=%d error=%s\n", rc,
               ds.nattch, ds.uid, ds.cuid, ds.mode, (unsigned long long)ds.bytes, ds.vgpu, (int)ds.cpid, (int)ds.lpid,
               rc ? gpuos_error() : "");
    } else if (!strcmp(cmd, "hold_alloc") && argc == 7) {
        uint32_t seed = (uint32_t)key;
        int n = atoi(argv[4]), got = 0, arc = 0, crc = 0;
        uint64_t bytes = strtoull(argv[5], NULL, 0) << 20, words = bytes / 4, bad = 0;
        char err[512] = "", path[512];
        if (n < 1 || n > 64 || !bytes)
            return 2;
        gpuos_dptr b[64];
        uint32_t *h = malloc(bytes);
        for (; got < n; got++) {
            if ((arc = gpuos_mem_alloc(G, bytes, &b[got])))
                break;
            for (uint64_t i = 0; i < words; i++)
                h[i] = pat(i, seed * 100 + (uint32_t)got);
            if ((arc = gpuos_memcpy_htod(G, b[got], h, bytes))) {
                gpuos_mem_free(G, b[got]);
                break;
            }
        }
        if (arc)
            snprintf(err, sizeof err, "%s", gpuos_error());
        snprintf(path, sizeof path, "%s/ready.%u", argv[6], seed);
        touch(path);
        snprintf(path, sizeof path, "%s/go.%u", argv[6], seed);
        wait_file(path);
        int retried = 0;
        for (int k = 0; k < got; k++) {
            int r = -1;
            for (int t = 0; t < 100 && (r = gpuos_memcpy_dtoh(G, h, b[k], bytes)); t++) {
                if (!retried++ && !err[0])
                    snprintf(err, sizeof err, "%s", gpuos_error());
                usleep(100000);
            }
            if (r) {
                crc = r;
                bad += words; /* never read back: counted lost */
                continue;
            }
            for (uint64_t i = 0; i < words; i++)
                bad += h[i] != pat(i, seed * 100 + (uint32_t)k);
        }
        printf("hold_alloc got=%d alloc_rc=%d check_rc=%d retried=%d mismatches=%llu error=%s\n", got, arc, crc,
               retried, (unsigned long long)bad, err);
    } else if (!strcmp(cmd, "many") && argc == 6) {
        int n = atoi(argv[4]), k = 0;
        uint64_t bytes = strtoull(argv[5], NULL, 0);
        for (; k < n && !(rc = gpuos_shm_get(G, key + k, bytes, GPUOS_SHM_CREAT | GPUOS_SHM_EXCL | 0600, &id)); k++)
            ;
        printf("many created=%d rc=%d error=%s\n", k, rc, rc ? gpuos_error() : "");
    } else if (!strcmp(cmd, "chmod") && argc == 5) {
        gpuos_shm_ds ds = {0};
        id = get_id(key);
        rc = id < 0 ? id : gpuos_shm_ctl(G, id, GPUOS_SHM_STAT, &ds);
        ds.mode = (unsigned)strtol(argv[4], NULL, 8);
        if (!rc)
            rc = gpuos_shm_ctl(G, id, GPUOS_SHM_SET, &ds);
        printf("chmod rc=%d error=%s\n", rc, rc ? gpuos_error() : "");
    } else if (!strcmp(cmd, "misuse")) {
        gpuos_shm_ds ds = {0};
        id = get_id(key);
        if (id < 0 || gpuos_shm_attach(G, id, &d) || gpuos_shm_ctl(G, id, GPUOS_SHM_STAT, &ds)) {
            printf("misuse setup failed: %s\n", gpuos_error());
            return 1;
        }
        uint64_t x = 0;
        int r_free = gpuos_mem_free(G, d);
        int r_copy = gpuos_memcpy_htod(G, d + ds.bytes - 4, &x, 8);
        int r_dt = gpuos_shm_detach(G, d + 4096);
        int r_ok = gpuos_memcpy_htod(G, d + ds.bytes - 8, &x, 8);
        printf("misuse free=%d copy_past_end=%d detach_inside=%d copy_at_end=%d\n", r_free, r_copy, r_dt, r_ok);
        gpuos_shm_detach(G, d);
    } else if (!strcmp(cmd, "burst") && argc == 7) {
        if ((rc = burst((uint32_t)key, strtoull(argv[4], NULL, 0) << 20, atoi(argv[5]), atoi(argv[6]))))
            return rc;
    } else if (!strcmp(cmd, "bounce") && argc == 5) {
        if ((rc = bounce(argv[3], strtoull(argv[4], NULL, 0) << 20)))
            return rc;
    } else if (!strcmp(cmd, "swapcost") && argc >= 6) {
        gpuos_vgpu *gb;
        if (gpuos_open(NULL, argv[3], &gb)) {
            printf("swapcost open b: %s\n", gpuos_error());
            return 1;
        }
        uint64_t pool = strtoull(argv[4], NULL, 0) << 20;
        gpuos_module m;
        gpuos_function f;
        if ((rc = gpuos_module_load_builtin(G, "builtin", &m)) || (rc = gpuos_module_function(G, m, "empty", &f)))
            return 1;
        for (int a = 5; a < argc; a++) {
            uint64_t bytes = strtoull(argv[a], NULL, 0) << 20;
            gpuos_dptr da;
            if ((rc = gpuos_mem_alloc(G, bytes, &da)) || (rc = fill(da, 0x5eed, bytes / 4))) {
                printf("swapcost alloc a rc=%d %s\n", rc, gpuos_error());
                return 1;
            }
            gpuos_launch_config c1 = {.grid = {1}, .block = {32}};
            double t[9];
            for (int i = 0; i < 9; i++) {
                struct timespec t0, t1;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                gpuos_launch(G, f, &c1, NULL, 0);
                gpuos_synchronize(G);
                clock_gettime(CLOCK_MONOTONIC, &t1);
                t[i] = (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) * 1e-3;
            }
            for (int i = 1; i < 9; i++) /* insertion sort for the median */
                for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
                    double x = t[j];
                    t[j] = t[j - 1];
                    t[j - 1] = x;
                }
            /* b fills the pool in chunks of MB/2 and one more: the last chunk
             * evicts a's buffer; a's restore then needs one chunk of b out */
            uint64_t half = bytes / 2, nb = (pool - half) / half;
            static gpuos_dptr chunk[1024];
            struct timespec e0, e1, s0, s1;
            if (nb > 1024)
                return 2;
            for (uint64_t k = 0; k + 1 < nb; k++)
                if ((rc = gpuos_mem_alloc(gb, half, &chunk[k]))) {
                    printf("swapcost alloc b rc=%d %s\n", rc, gpuos_error());
                    return 1;
                }
            clock_gettime(CLOCK_MONOTONIC, &e0);
            rc = gpuos_mem_alloc(gb, half, &chunk[nb - 1]);
            clock_gettime(CLOCK_MONOTONIC, &e1);
            if (rc) {
                printf("swapcost alloc b rc=%d %s\n", rc, gpuos_error());
                return 1;
            }
            gpuos_vgpu_facts fa;
            gpuos_vgpu_info(G, &fa);
            clock_gettime(CLOCK_MONOTONIC, &s0);
            rc = gpuos_launch(G, f, &c1, NULL, 0);
            if (!rc)
                rc = gpuos_synchronize(G);
            clock_gettime(CLOCK_MONOTONIC, &s1);
            int ok = !rc && check_pattern(da, bytes / 4, 0x5eed, 1) == 1;
            gpuos_vgpu_facts fb;
            gpuos_vgpu_info(gb, &fb);
            printf("swapcost bytes=%llu resident_us=%.1f after_swap_us=%.1f evict_us=%.1f a_swapped_before=%llu "
                   "b_evictions=%llu byte_exact=%d\n",
                   (unsigned long long)bytes, t[4], (s1.tv_sec - s0.tv_sec) * 1e6 + (s1.tv_nsec - s0.tv_nsec) * 1e-3,
                   (e1.tv_sec - e0.tv_sec) * 1e6 + (e1.tv_nsec - e0.tv_nsec) * 1e-3,
                   (unsigned long long)fa.mem_swapped, (unsigned long long)fb.evictions, ok);
            fflush(stdout);
            for (uint64_t k = 0; k < nb; k++)
                gpuos_mem_free(gb, chunk[k]);
            gpuos_mem_free(G, da);
        }
        gpuos_close(gb);
    } else if (!strcmp(cmd, "patcheck")) {
        /* the pattern kernel finds what it must: 0 after its own write, exactly
         * the 3 words overwritten by a copy, every word against another seed;
         * a counter outside the client's memory is refused */
        gpuos_module m;
        gpuos_function f;
        gpuos_dptr pd, cnt;
        uint64_t words = 1 << 20, c[4] = {0}, zero = 0;
        uint32_t junk = 0xdeadbeef;
        if ((rc = gpuos_module_load_builtin(G, "builtin", &m)) || (rc = gpuos_module_function(G, m, "pattern", &f)) ||
            (rc = gpuos_mem_alloc(G, words * 4, &pd)) || (rc = gpuos_mem_alloc(G, 8, &cnt)) ||
            (rc = pattern(G, f, pd, 0x1234, 0, words, 0)) || (rc = gpuos_synchronize(G)))
            return 1;
        for (int t = 0; t < 3 && !rc; t++) {
            if (t == 1)
                for (uint64_t i = 5; i < words && !rc; i += words / 3)
                    rc = gpuos_memcpy_htod(G, pd + i * 4, &junk, 4);
            if (!rc)
                rc = gpuos_memcpy_htod(G, cnt, &zero, 8);
            if (!rc)
                rc = pattern(G, f, pd, t == 2 ? 0x1235 : 0x1234, 1, words, cnt);
            if (!rc)
                rc = gpuos_synchronize(G);
            if (!rc)
                rc = gpuos_memcpy_dtoh(G, &c[t], cnt, 8);
        }
        int outside = pattern(G, f, pd, 0x1234, 1, words, pd + words * 4 + (64ull << 20));
        if (!outside)
            outside = gpuos_synchronize(G);
        printf("patcheck rc=%d clean=%llu corrupted=%llu other_seed=%llu words=%llu outside_rc=%d\n", rc,
               (unsigned long long)c[0], (unsigned long long)c[1], (unsigned long long)c[2],
               (unsigned long long)words, outside);
    } else if (!strcmp(cmd, "turns") && argc == 7) {
        if ((rc = turns(G, argv[3], atoi(argv[4]), strtoull(argv[5], NULL, 0) << 20, atoi(argv[6]))))
            return rc;
    } else if (!strcmp(cmd, "work") && (argc == 7 || argc == 8)) {
        uint32_t seed = (uint32_t)key;
        int n = atoi(argv[4]), rounds = atoi(argv[6]);
        uint64_t bytes = strtoull(argv[5], NULL, 0) << 20, words = bytes / 4;
        uint64_t small = argc == 8 ? strtoull(argv[7], NULL, 0) << 20 : 0;
        if (n < 1 || n > 16 || !bytes || rounds < 1 || small > bytes)
            return 2;
        gpuos_dptr b[16];
        uint32_t *want[16], *h = malloc(bytes);
        for (int k = 0; k < n; k++) {
            want[k] = malloc(bytes);
            if ((rc = gpuos_mem_alloc(G, bytes, &b[k]))) {
                printf("work alloc rc=%d error=%s\n", rc, gpuos_error());
                return 1;
            }
            for (uint64_t i = 0; i < words; i++)
                want[k][i] = pat(i, seed * 100 + (uint32_t)k);
            if ((rc = gpuos_memcpy_htod(G, b[k], want[k], bytes))) {
                printf("work htod rc=%d error=%s\n", rc, gpuos_error());
                return 1;
            }
        }
        for (int r = 0; r < rounds && !rc; r++) {
            int k = r % n;
            for (uint64_t i = 0; i < words; i++)
                want[k][i] = pat(i, seed * 1000 + (uint32_t)r);
            rc = gpuos_memcpy_htod(G, b[k], want[k], bytes);
            if (!rc && r % 2) {
                int k2 = (r / 2) % n;
                uint32_t v = seed * 7919u + (uint32_t)r;
                rc = fill(b[k2], v, words);
                for (uint64_t i = 0; i < words; i++)
                    want[k2][i] = v;
            }
            if (!rc && small && (rc = work_small(small, seed * 31u + (uint32_t)r, h)) > 0) {
                printf("work small round=%d rc=%d error=%s\n", r, rc, gpuos_error());
                return 1;
            }
        }
        uint64_t bad = 0;
        for (int k = 0; k < n && !rc; k++) {
            rc = gpuos_memcpy_dtoh(G, h, b[k], bytes);
            for (uint64_t i = 0; i < words && !rc; i++)
                bad += h[i] != want[k][i];
        }
        printf("work rc=%d mismatches=%llu error=%s\n", rc, (unsigned long long)bad, rc ? gpuos_error() : "");
    } else {
        fprintf(stderr, "shm_client: unknown command or arguments\n");
        return 2;
    }
    gpuos_close(G);
    return 0;
}
