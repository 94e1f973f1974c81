/* SPDX-License-Identifier: Apache-2.0 */
/* test_report.c: the pieces of `gpuos report`: HTML escaping, the SVG pictures
 * (one bar per non-empty bin, one polyline point per curve point, markers only
 * inside the plotted range, a heat map's labels inside its picture and every
 * cell on its colour scale), and merging a verification run into a chart of
 * the same GPU only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "chip/chip.h"
#include "common/status.h"
#include "report/report.h"
#include "report/svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *capture(void (*fn)(FILE *, void *), void *arg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fn(f, arg);
    fclose(f);
    return buf;
}

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void esc(FILE *f, void *arg) { gos_html_escape(f, arg); }

static void test_escape(void **state)
{
    (void)state;
    char *s = capture(esc, "<a href=\"x\">&</a>");
    assert_string_equal(s, "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;");
    free(s);
}

static const double hx[] = {100, 110, 120, 130, 140}, hy[] = {5, 0, 7, 1, 0};

static void hist(FILE *f, void *arg)
{
    gos_svg_series s = {"tier", "#123456", hx, hy, 5};
    gos_svg_frame fr = {"T <1>", "cycles", "n", 400, 200, *(double *)arg, "thr", 0, NULL};
    gos_svg_histogram(f, &fr, &s, 1, 10);
}

static void test_histogram(void **state)
{
    (void)state;
    double thr = 125;
    char *s = capture(hist, &thr);
    assert_int_equal(count(s, "fill-opacity"), 3); /* the three non-empty bins */
    assert_int_equal(count(s, "stroke-dasharray"), 1);
    assert_non_null(strstr(s, "T &lt;1&gt;"));
    assert_int_equal(count(s, "<svg"), 1);
    assert_int_equal(count(s, "</svg>"), 1);
    free(s);
    thr = 0; /* no marker */
    s = capture(hist, &thr);
    assert_int_equal(count(s, "stroke-dasharray"), 0);
    free(s);
}

static void lines(FILE *f, void *arg)
{
    (void)arg;
    gos_svg_series s[2] = {{"a", "#111", hx, hy, 5}, {"b", "#222", hx, hy, 3}};
    gos_svg_frame fr = {"curve", "MB", "GB/s", 400, 200, 120, "knee", 1000, "outside"};
    gos_svg_lines(f, &fr, s, 2);
}

static void test_lines(void **state)
{
    (void)state;
    char *s = capture(lines, NULL);
    assert_int_equal(count(s, "<polyline"), 2);
    assert_int_equal(count(s, "<circle"), 8);
    /* the second marker (x = 1000) widens the axis instead of vanishing */
    assert_int_equal(count(s, "stroke-dasharray"), 2);
    free(s);
}

static const char *chip_text(const char *uuid)
{
    static char buf[512];
    snprintf(buf, sizeof buf,
             "{\"schema\": \"gpuos.chip/1\", \"device\": {\"uuid\": \"%s\", \"sm_count\": 4},"
             " \"numa\": {\"verification\": {\"agreement\": 0.99}, \"repeats\": {\"runs\": 3}}}",
             uuid);
    return buf;
}

static void test_merge(void **state)
{
    (void)state;
    gos_chip *a, *b, *c;
    assert_int_equal(gos_chip_parse("{\"schema\": \"gpuos.chip/1\", \"device\": {\"uuid\": \"GPU-1\", \"sm_count\": 4}}",
                                    "a", &a),
                     GOS_OK);
    assert_int_equal(gos_chip_parse(chip_text("GPU-1"), "b", &b), GOS_OK);
    assert_int_equal(gos_chip_parse(chip_text("GPU-2"), "c", &c), GOS_OK);
    assert_int_equal(gos_report_merge(a, c, "c"), GOS_EINVAL);
    assert_null(json_object_get(a->json, "numa"));
    assert_int_equal(gos_report_merge(a, b, "b"), GOS_OK);
    json_t *n = json_object_get(a->json, "numa");
    assert_true(json_number_value(json_object_get(json_object_get(n, "verification"), "agreement")) == 0.99);
    assert_non_null(json_object_get(n, "repeats"));
    gos_chip_free(a);
    gos_chip_free(b);
    gos_chip_free(c);
}

/* A heat map with one-character row names (a narrow left margin), a value far
 * below its given 0..1 scale and a wide low label, a long outline key. */
static void heat(char **buf, size_t *len)
{
    FILE *f = open_memstream(buf, len);
    static const double v[4] = {-12345.6, 0.5, 1.75, NAN};
    static const char *const rows[2] = {"a", "b"}, *const cols[2] = {"x", "y"};
    static const int mark[2] = {0, -1};
    gos_svg_heat h = {"t", "c", 2, 2, v, rows, cols, mark, "the outlined cell, a long key of the map", 0, 1, "%.1f"};
    gos_svg_heatmap(f, &h);
    fclose(f);
}

static void test_heatmap(void **state)
{
    (void)state;
    char *s = NULL;
    size_t n = 0;
    heat(&s, &n);
    assert_non_null(s);
    int w;
    double lo, hi;
    const char *ws = strstr(s, "width=\""), *sc = strstr(s, "data-scale-lo=");
    assert_non_null(ws);
    assert_non_null(sc);
    w = atoi(ws + strlen("width=\""));
    lo = atof(sc + strlen("data-scale-lo=\""));
    hi = atof(strstr(sc, "data-scale-hi=\"") + strlen("data-scale-hi=\""));
    assert_true(w > 0);
    /* the scale covers every cell: the given 0..1 widened to -12345.6..1.75, and said so */
    assert_true(lo <= -12345.6 && hi >= 1.75);
    assert_non_null(strstr(s, "colour scale widened from 0..1 to the data's range"));
    assert_int_equal(count(s, "data-v="), 3);
    /* no label leaves the picture (6 px a glyph, below the 11 px font's width) */
    for (const char *p = s; (p = strstr(p, "<text x=\"")); p++) {
        double x = atof(p + 9);
        const char *gt = strchr(p, '>'), *end = strstr(gt, "</text>");
        double tw = 6.0 * (double)(end - gt - 1);
        if (strstr(p, "text-anchor=\"end\"") && strstr(p, "text-anchor=\"end\"") < gt)
            assert_true(x - tw >= 0);
        else if (!(strstr(p, "text-anchor=\"middle\"") && strstr(p, "text-anchor=\"middle\"") < gt))
            assert_true(x + tw <= w);
    }
    free(s);
}

/* A line chart whose y ticks are long (1.5e+06 ...): each tick label keeps clear
 * of the rotated y axis label (x 8..20 at 11 px), i.e. starts right of x = 21. */
static void wide_ticks(FILE *f, void *arg)
{
    (void)arg;
    static const double x[3] = {1, 2, 3}, y[3] = {1.0e6, 2.2e6, 3.1e6};
    gos_svg_series s = {"s", "#111", x, y, 3};
    gos_svg_frame fr = {"tiny", "x", "bytes", 400, 200, 0, NULL, 0, NULL};
    gos_svg_lines(f, &fr, &s, 1);
}

static void test_y_ticks_clear(void **state)
{
    (void)state;
    char *s = capture(wide_ticks, NULL);
    int n = 0;
    for (const char *p = s; (p = strstr(p, "text-anchor=\"end\">")); p++, n++) {
        const char *q = p;
        while (q > s && strncmp(q, "<text x=\"", 9))
            q--;
        double x = atof(q + 9), w = 6.0 * (double)(strstr(p, "</text>") - strchr(p, '>') - 1);
        assert_true(x - w > 21);
    }
    assert_true(n >= 3);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_histogram),
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_heatmap),
        cmocka_unit_test(test_y_ticks_clear),
        cmocka_unit_test(test_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
