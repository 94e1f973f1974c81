/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_image.c: mutation fuzzer of the module image reader (issue 44.6), run
 * for a bounded time in CI on the sanitizer build (tests/ci_hostile.sh), in
 * process: src/cudashim/image.c (the shim's kernel layouts) and
 * src/device/modimage.c (containers, ELF, PTX; what a module's globals take).
 *
 *   fuzz_image SECONDS SEED FILE...
 *
 * Each round takes one of the valid images FILE... (a cubin of tests/elf_kernel.py,
 * a fatbin around it, PTX text), mutates it (bit flips, random bytes, interesting
 * 16/32/64-bit values: 0, ~0, 2^31, 2^63, sizes around the image's length and
 * just below 2^64, written at the ELF header, the section header table, the
 * fatbin header and entry headers and anywhere; truncations; appended bytes) and
 * hands the result, in a buffer of exactly its length (so the sanitizer sees a
 * read past it), to every reader of a known-length image: the shim's check,
 * runs, describe, kernel and global lookups, gos_img_device_bytes,
 * gos_fatbin_total, gos_elf_extent. A round that takes over 5 s is a hang (exit
 * 1); a crash or a sanitizer report fails the step. Deterministic for a seed.
 * Prints counts. */
#include "cudashim/shim.h"
#include "device/modimage.h"
#include "fuzz_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


static void hung(int sig)
{
    static const char m[] = "fuzz_image: a round took over 5 s (a walk that does not advance)\n";
    (void)sig;
    (void)!write(2, m, sizeof m - 1);
    _exit(1);
}

struct seed {
    unsigned char *p;
    size_t n;
    size_t hot, hot_n; /* the section header table (of the cubin inside a fatbin too) */
};

static void hot_of(struct seed *s)
{
    size_t base = 0;
    s->hot = 0;
    s->hot_n = 64;
    if (s->n >= 16 + 0x40 && !memcmp(s->p, "\x50\xed\x55\xba", 4))
        base = 16 + 0x40; /* one entry, its cubin right behind its header */
    if (s->n >= base + 64 && !memcmp(s->p + base, ELFMAG, SELFMAG)) {
        Elf64_Ehdr e;
        memcpy(&e, s->p + base, sizeof e);
        if (e.e_shoff < s->n && (uint64_t)e.e_shnum * 64 <= s->n - e.e_shoff) {
            s->hot = base + e.e_shoff;
            s->hot_n = (size_t)e.e_shnum * 64;
        }
    }
}

static uint64_t interesting(size_t n)
{
    static const uint64_t v[] = {0, 1, 7, 8, 16, 63, 64, 0x40, 0x7f, 0x80, 0xff, 0xffff, 0x7fffffff, 0x80000000,
                                 0xffffffff, 1ull << 32, 1ull << 40, 1ull << 62, 1ull << 63, ~0ull, ~0ull - 7,
                                 ~0ull - 63, ~0ull - 0x3f - 0x40};
    size_t k = rnd() % (sizeof v / sizeof v[0] + 4);
    if (k < sizeof v / sizeof v[0])
        return v[k];
    return (uint64_t)n + (uint64_t)(k - sizeof v / sizeof v[0]) - 2; /* around the length */
}

static size_t mutate(const struct seed *s, unsigned char *b, size_t cap)
{
    size_t n = s->n;
    memcpy(b, s->p, n);
    int k = 1 + (int)(rnd() % 4);
    for (int i = 0; i < k && n; i++) {
        size_t at;
        uint64_t r = rnd() % 10;
        if (r < 3)
            at = rnd() % (n < 128 ? n : 128);
        else if (r < 7 && s->hot + s->hot_n <= n)
            at = s->hot + rnd() % s->hot_n;
        else
            at = rnd() % n;
        switch (rnd() % 7) {
        case 0: b[at] ^= (unsigned char)(1u << (rnd() % 8)); break;
        case 1: b[at] = (unsigned char)rnd(); break;
        case 2:
        case 3:
        case 4: {
            int w = 2 << (rnd() % 3); /* 2, 4 or 8 bytes */
            uint64_t v = interesting(n);
            at &= ~(size_t)(w - 1);
            if (at + (size_t)w <= n)
                memcpy(b + at, &v, (size_t)w);
            break;
        }
        case 5: n = rnd() % (n + 1); break; /* truncated */
        default: {
            size_t add = rnd() % 64;
            if (n + add > cap)
                add = cap - n;
            for (size_t j = 0; j < add; j++)
                b[n + j] = (unsigned char)rnd();
            n += add;
        }
        }
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: fuzz_image SECONDS SEED FILE...\n");
        return 2;
    }
    double secs = atof(argv[1]);
    fuzz_seed(strtoull(argv[2], NULL, 0));
    int ns = argc - 3;
    struct seed *seeds = calloc((size_t)ns, sizeof *seeds);
    size_t cap = 0;
    for (int i = 0; i < ns; i++) {
        FILE *f = fopen(argv[3 + i], "rb");
        if (!f) {
            perror(argv[3 + i]);
            return 2;
        }
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        seeds[i].p = malloc((size_t)len + 1);
        if (len <= 0 || !seeds[i].p || fread(seeds[i].p, 1, (size_t)len, f) != (size_t)len) {
            fprintf(stderr, "fuzz_image: cannot read %s\n", argv[3 + i]);
            return 2;
        }
        fclose(f);
        seeds[i].n = (size_t)len;
        hot_of(&seeds[i]);
        if ((size_t)len + 64 > cap)
            cap = (size_t)len + 64;
    }
    signal(SIGALRM, hung);
    unsigned char *work = malloc(cap);
    long rounds = 0, checked = 0, kernels = 0, measured = 0;
    double end = now_s() + secs;
    while (now_s() < end) {
        for (int j = 0; j < 64; j++, rounds++) {
            alarm(5);
            const struct seed *s = &seeds[rnd() % (uint64_t)ns];
            size_t n = mutate(s, work, cap);
            unsigned char *p = malloc(n ? n : 1); /* exactly n bytes: a read past them is reported */
            memcpy(p, work, n);
            char why[160], line[512];
            int ok = !shim_image_check(p, n, why, sizeof why);
            checked += ok;
            shim_image_runs(p, n, 90);
            shim_image_describe(p, n, line, sizeof line);
            struct shim_kinfo k;
            shim_image_kernel(p, n, 90, "kern", &k, why, sizeof why);
            if (k.found && (k.nparams < 0 || k.nparams > SHIM_MAX_PARAMS)) {
                fprintf(stderr, "fuzz_image: %d parameters read\n", k.nparams);
                return 1;
            }
            kernels += k.found;
            uint64_t size = 0, need = 0;
            shim_image_global(p, n, 90, "kern", &size);
            measured += !gos_img_device_bytes(p, n, 90, &need);
            size_t total = gos_fatbin_total(p, n), ext = gos_elf_extent(p, n);
            if (total > n || ext > n) {
                fprintf(stderr, "fuzz_image: a length past the image: fatbin %zu, ELF %zu of %zu bytes\n", total, ext,
                        n);
                return 1;
            }
            free(p);
        }
    }
    alarm(0);
    printf("fuzz_image: %ld images, %ld passed the load's check, %ld kernel layouts read, %ld measured\n", rounds,
           checked, kernels, measured);
    return 0;
}
