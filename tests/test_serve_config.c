/* SPDX-License-Identifier: Apache-2.0 */
/* test_serve_config.c: the configuration keys of daemon operation
 * (src/serve/config_ext.c): state, metrics_listen, socket_group, chip, users, groups; names
 * resolved to ids, bad values rejected with the file and line; and the log
 * level names of --log-level. */
#include "common/status.h"
#include "serve/config.h"
#include "common/log.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void test_ok(void **state)
{
    (void)state;
    static struct gos_serve_config c;
    const char *ok = "state = /var/lib/gpuos/s.json\nmetrics_listen = 127.0.0.1:9400\n"
                     "[device 0]\nchip = /etc/gpuos/chip.json\n"
                     "[vgpu a]\nusers = root, 4242 65534\ngroups = root,77\n[vgpu b]\n";
    assert_int_equal(gos_serve_config_parse(ok, "t.conf", &c), GOS_OK);
    assert_string_equal(c.state, "/var/lib/gpuos/s.json");
    assert_string_equal(c.metrics_listen, "127.0.0.1:9400");
    assert_string_equal(c.devs[0].chip, "/etc/gpuos/chip.json");
    assert_int_equal(c.vgpus[0].n_users, 3);
    assert_int_equal(c.vgpus[0].users[0], 0); /* root resolved */
    assert_int_equal(c.vgpus[0].users[1], 4242);
    assert_int_equal(c.vgpus[0].users[2], 65534);
    assert_int_equal(c.vgpus[0].n_groups, 2);
    assert_int_equal(c.vgpus[0].groups[0], 0);
    assert_int_equal(c.vgpus[0].groups[1], 77);
    assert_int_equal(c.vgpus[1].n_users, 0); /* open to anyone on the socket */
    assert_int_equal(c.vgpus[1].n_groups, 0);
    assert_string_equal(c.vgpus[1].name, "b");
}

/* socket_group (issue 43.1): one group, by name or gid; unset: -1 (the daemon's) */
static void test_socket_group(void **state)
{
    (void)state;
    static struct gos_serve_config c;
    assert_int_equal(gos_serve_config_parse("[device 0]\n", "t.conf", &c), GOS_OK);
    assert_int_equal(c.socket_gid, -1);
    assert_int_equal(gos_serve_config_parse("socket_group = 4242\n[device 0]\n", "t.conf", &c), GOS_OK);
    assert_int_equal(c.socket_gid, 4242);
    assert_int_equal(gos_serve_config_parse("socket_group = root\n[device 0]\n", "t.conf", &c), GOS_OK);
    assert_int_equal(c.socket_gid, 0);
    assert_int_not_equal(gos_serve_config_parse("socket_group = no-such-group-43\n", "t.conf", &c), GOS_OK);
    assert_string_equal(gos_last_error(), "t.conf:1: unknown group \"no-such-group-43\"");
    assert_int_not_equal(gos_serve_config_parse("\nsocket_group = root 4242\n", "t.conf", &c), GOS_OK);
    assert_string_equal(gos_last_error(), "t.conf:2: socket_group takes one group, not \"root 4242\"");
    assert_int_not_equal(gos_serve_config_parse("[device 0]\nsocket_group = root\n", "t.conf", &c), GOS_OK);
}

static void test_listen(void **state)
{
    (void)state;
    struct sockaddr_storage sa;
    socklen_t len;
    assert_int_equal(gos_serve_parse_listen("127.0.0.1:9400", &sa, &len), GOS_OK);
    struct sockaddr_in *a = (struct sockaddr_in *)&sa;
    assert_int_equal(sa.ss_family, AF_INET);
    assert_int_equal(ntohs(a->sin_port), 9400);
    assert_int_equal(ntohl(a->sin_addr.s_addr), 0x7f000001u);
    assert_int_equal(gos_serve_parse_listen("[::1]:80", &sa, &len), GOS_OK);
    assert_int_equal(sa.ss_family, AF_INET6);
    assert_int_equal(ntohs(((struct sockaddr_in6 *)&sa)->sin6_port), 80);
    assert_int_equal(gos_serve_parse_listen("*:1", &sa, &len), GOS_OK);
    assert_int_equal(a->sin_addr.s_addr, htonl(INADDR_ANY));
    const char *bad[] = {"9400", ":9400", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "1.2.3:9", "[::1:9",
                         "host.example:9400", "127.0.0.1:9x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (gos_serve_parse_listen(bad[i], &sa, &len) == GOS_OK)
            fail_msg("accepted metrics_listen %s", bad[i]);
}

static void test_bad(void **state)
{
    (void)state;
    static struct gos_serve_config c;
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"metrics_listen = 9400\n[device 0]\n[vgpu a]\n", "t.conf:1: metrics_listen \"9400\" must be HOST:PORT"},
        {"metrics_listen = 127.0.0.1:99999\n[device 0]\n[vgpu a]\n", "t.conf:1: metrics_listen"},
        {"state =\n[device 0]\n[vgpu a]\n", "t.conf:1: state must be a path"},
        {"[device 0]\nchip =\n[vgpu a]\n", "t.conf:2: chip must be"},
        {"[device 0]\n[vgpu a]\nusers = no-such-user-gpuos\n", "t.conf:3: unknown user \"no-such-user-gpuos\""},
        {"[device 0]\n[vgpu a]\ngroups = root, no-such-group-gpuos\n", "t.conf:3: unknown group"},
        {"[device 0]\n[vgpu a]\nusers = ,\n", "t.conf:3: users = needs at least one user"},
        {"[device 0]\n[vgpu a]\nusers = 99999999999\n", "t.conf:3: user id 99999999999 out of range"},
        {"users = root\n[device 0]\n[vgpu a]\n", "t.conf:1: unknown key \"users\""},   /* vGPU key, global */
        {"[device 0]\nusers = root\n[vgpu a]\n", "t.conf:2: unknown device key"},    /* vGPU key, device */
        {"[device 0]\n[vgpu a]\nchip = x.json\n", "t.conf:3: unknown vgpu key \"chip\""},
        {"[device 0]\nexecutor = shared\n[vgpu a]\n", "t.conf:2: executor must be per-client or per-vgpu"},
        {"[device 0]\ngrant_us = 50\n[vgpu a]\n", "t.conf:2: grant_us must be auto or 100..100000"},
        {"[device 0]\ngrant_us = fast\n[vgpu a]\n", "t.conf:2: grant_us must be auto or 100..100000"},
        {"[device 0]\ngrant_min_us = 99\n[vgpu a]\n", "t.conf:2: grant_min_us must be auto or 100..100000"},
        {"[device 0]\ngrant_min_us = 2ms\n[vgpu a]\n", "t.conf:2: grant_min_us must be auto or 100..100000"},
        {"[device 0]\nswap_turn_ms = 5\n[vgpu a]\n", "t.conf:2: swap_turn_ms must be auto or 10..3600000"},
        {"[device 0]\nswap_wait_s = 0\n[vgpu a]\n", "t.conf:2: swap_wait_s must be 1..86400"},
        {"[device 0]\nswap_prefault = yes\n[vgpu a]\n", "t.conf:2: swap_prefault must be 0, 1 or auto"},
        {"[device 0]\nswap_prefault = 2\n[vgpu a]\n", "t.conf:2: swap_prefault must be 0, 1 or auto"},
        {"[device 0]\nswap_host_wait_s = 3601\n[vgpu a]\n", "t.conf:2: swap_host_wait_s must be 0..3600"},
        {"[device 0]\nswap_host_wait_s = -1\n[vgpu a]\n", "t.conf:2: swap_host_wait_s must be 0..3600"},
        {"[device 0]\nswap_host_wait_s = soon\n[vgpu a]\n", "t.conf:2: swap_host_wait_s must be 0..3600"},
        {"[device 0]\nswap_turns = 1\n[vgpu a]\n", "t.conf:2: unknown device key \"swap_turns\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (gos_serve_config_parse(bad[i].text, "t.conf", &c) == GOS_OK)
            fail_msg("accepted: %s", bad[i].text);
        if (!strstr(gos_last_error(), bad[i].needle))
            fail_msg("message \"%s\" lacks \"%s\"", gos_last_error(), bad[i].needle);
    }
    char many[2048] = "[device 0]\n[vgpu a]\nusers =";
    for (int i = 0; i <= GOS_SERVE_MAX_IDS; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), " %d", 1000 + i);
    strcat(many, "\n");
    assert_int_not_equal(gos_serve_config_parse(many, "t.conf", &c), GOS_OK);
    assert_non_null(strstr(gos_last_error(), "more than 32 users"));
}

/* executor and grant_us (issue 9): per-vgpu / per-client, auto / a number;
 * grant_min_us (issue 41): auto by default, or a number */
static void test_executor_grant(void **state)
{
    (void)state;
    static struct gos_serve_config c;
    assert_int_equal(gos_serve_config_parse("[device 0]\nexecutor = per-vgpu\ngrant_us = auto\n[vgpu a]\n", "t.conf", &c),
                     GOS_OK);
    assert_int_equal(c.devs[0].executor_per_vgpu, 1);
    assert_int_equal(c.devs[0].grant_us, 0);
    assert_int_equal(gos_serve_config_parse("[device 0]\nexecutor = per-client\ngrant_us = 7000\n[vgpu a]\n", "t.conf", &c),
                     GOS_OK);
    assert_int_equal(c.devs[0].executor_per_vgpu, 0);
    assert_int_equal(c.devs[0].grant_us, 7000);
    assert_int_equal(c.devs[0].grant_min_us, 0); /* auto, by share, by default (issue 41) */
    assert_int_equal(gos_serve_config_parse("[device 0]\ngrant_min_us = 3000\n[vgpu a]\n", "t.conf", &c), GOS_OK);
    assert_int_equal(c.devs[0].grant_min_us, 3000);
    assert_int_equal(gos_serve_config_parse("[device 0]\n[vgpu a]\n", "t.conf", &c), GOS_OK);
    assert_int_equal(c.devs[0].executor_per_vgpu, 0); /* the default */
    /* turns between busy tenants (issue 42): auto and a 120 s wait by default;
     * 60 s for host memory; the pool faulted in ahead as far as it can be needed */
    assert_int_equal(c.devs[0].swap_turn_ms, 0);
    assert_int_equal(c.devs[0].swap_wait_s, 120);
    assert_int_equal(c.devs[0].swap_host_wait_s, 60);
    assert_int_equal(c.devs[0].swap_prefault, GOS_SWAP_PREFAULT_AUTO);
    assert_int_equal(gos_serve_config_parse("[device 0]\nswap_turn_ms = 2500\nswap_wait_s = 30\nswap_prefault = 1\n"
                                            "swap_turn_ms = auto\nswap_turn_ms = 900\nswap_host_wait_s = 0\n[vgpu a]\n",
                                            "t.conf", &c),
                     GOS_OK);
    assert_int_equal(c.devs[0].swap_turn_ms, 900);
    assert_int_equal(c.devs[0].swap_wait_s, 30);
    assert_int_equal(c.devs[0].swap_host_wait_s, 0);
    assert_int_equal(c.devs[0].swap_prefault, 1);
    assert_int_equal(gos_serve_config_parse("[device 0]\nswap_prefault = 0\nswap_prefault = auto\n[vgpu a]\n", "t.conf", &c),
                     GOS_OK);
    assert_int_equal(c.devs[0].swap_prefault, GOS_SWAP_PREFAULT_AUTO);
}

static void test_log_levels(void **state)
{
    (void)state;
    int l = -1;
    assert_int_equal(gos_log_parse_level("warning", &l), GOS_OK);
    assert_int_equal(l, LOG_WARNING);
    assert_int_equal(gos_log_parse_level("err", &l), GOS_OK);
    assert_int_equal(l, LOG_ERR);
    assert_int_equal(gos_log_parse_level("debug", &l), GOS_OK);
    assert_int_equal(l, LOG_DEBUG);
    assert_int_equal(gos_log_parse_level("5", &l), GOS_OK);
    assert_int_equal(l, LOG_NOTICE);
    assert_int_not_equal(gos_log_parse_level("loud", &l), GOS_OK);
    assert_int_not_equal(gos_log_parse_level("8", &l), GOS_OK);
    gos_log_init(LOG_NOTICE);
    assert_true(gos_log_enabled(LOG_WARNING));
    assert_true(gos_log_enabled(LOG_NOTICE));
    assert_false(gos_log_enabled(LOG_INFO));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ok),
        cmocka_unit_test(test_socket_group),
        cmocka_unit_test(test_listen),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_executor_grant),
        cmocka_unit_test(test_log_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
