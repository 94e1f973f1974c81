/* SPDX-License-Identifier: Apache-2.0 */
/* drv_tables.c: a black-box look at the private tables the CUDA 13 runtimes ask
 * for that gpuos does not serve ({f8cff951-...}, {da9151d3-...}; issue 21):
 * each slot is called in a child process of its own (a wrong guess of its
 * arguments crashes only the child) with four arguments, once as four pointers
 * to 256-byte buffers filled with 0xAA and once as (0, buffer, buffer, buffer),
 * and what it returned and which bytes of each buffer it wrote are printed.
 * Nothing is interpreted here; real driver only (tests/gpu/frameworks.sh
 * FW_PROBE_TABLES=1). */
#include "common.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef uint64_t (*fn4)(uintptr_t, uintptr_t, uintptr_t, uintptr_t);

static void call(const char *tab, int slot, void *f, int first_zero)
{
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        static unsigned char b[4][256];
        memset(b, 0xAA, sizeof b);
        alarm(3);
        uint64_t r = ((fn4)f)(first_zero ? 0 : (uintptr_t)b[0], (uintptr_t)b[1], (uintptr_t)b[2], (uintptr_t)b[3]);
        printf("%s slot %d args %s: returned 0x%llx", tab, slot, first_zero ? "(0,p,p,p)" : "(p,p,p,p)",
               (unsigned long long)r);
        for (int k = 0; k < 4; k++) {
            int last = -1;
            for (int i = 0; i < 256; i++)
                if (b[k][i] != 0xAA)
                    last = i;
            if (last < 0)
                continue;
            printf(" | arg%d wrote %d bytes:", k, last + 1);
            for (int i = 0; i <= last && i < 64; i++)
                printf("%s%02x", i % 8 ? "" : " ", b[k][i]);
        }
        printf("\n");
        fflush(stdout);
        _exit(0);
    }
    int st = 0;
    waitpid(p, &st, 0);
    if (WIFSIGNALED(st))
        printf("%s slot %d args %s: killed by signal %d\n", tab, slot, first_zero ? "(0,p,p,p)" : "(p,p,p,p)",
               WTERMSIG(st));
}

int main(void)
{
    primary_context();
    static const char *ids[] = {"f8cff951-2146-8b4e-b9e2-fb469e7c0dd9", "da9151d3-3ae6-cc41-a5c0-4f26d533e328"};
    for (int t = 0; t < 2; t++) {
        CUuuid u;
        const void *tab = NULL;
        u = uuid_of(ids[t]);
        if (cuGetExportTable(&tab, &u) || !tab) {
            printf("%s: not served\n", ids[t]);
            continue;
        }
        void *const *s = tab;
        size_t n = (size_t)s[0] / sizeof(void *);
        printf("%s: %zu slots\n", ids[t], n);
        for (size_t i = 1; i < n && i < 32; i++) {
            call(ids[t], (int)i, s[i], 0);
            call(ids[t], (int)i, s[i], 1);
        }
    }
    /* what f8cff951 slot 2 returns points at: 512 bytes, and each word that points
     * into a loaded object named by dladdr */
    CUuuid u8 = uuid_of(ids[0]);
    const void *t8 = NULL;
    if (!cuGetExportTable(&t8, &u8) && t8) {
        void *const *s = t8;
        const unsigned char *o = (const unsigned char *)((uintptr_t(*)(void))s[2])();
        const unsigned char *o2 = (const unsigned char *)((uintptr_t(*)(void))s[2])();
        printf("f8cff951 slot 2 object %p (again %p)\n", (const void *)o, (const void *)o2);
        for (int i = 0; o && i < 512; i += 8) {
            uint64_t w;
            memcpy(&w, o + i, 8);
            Dl_info di;
            const char *what = "";
            char buf[256] = "";
            if (w > 0x10000 && dladdr((void *)(uintptr_t)w, &di) && di.dli_fname) {
                snprintf(buf, sizeof buf, " -> %s%s%s+0x%lx", di.dli_fname, di.dli_sname ? ":" : "",
                         di.dli_sname ? di.dli_sname : "",
                         (unsigned long)(w - (uintptr_t)(di.dli_sname ? di.dli_saddr : di.dli_fbase)));
                what = buf;
            }
            printf("  +%03x %016llx%s\n", i, (unsigned long long)w, what);
        }
    }
    return 0;
}
