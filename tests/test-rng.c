/* test-rng.c - the counter-based RNG: determinism, independence of
 * streams, ranges and uniformity. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "rng.h"

/* ---- determinism ---- */

START_TEST(same_key_same_stream)
{
	struct ts_rng a, b;
	ts_rng_init(&a, 42, 3, 1000, 2);
	ts_rng_init(&b, 42, 3, 1000, 2);
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_eq(ts_rng_u64(&a), ts_rng_u64(&b));
}
END_TEST

/* Drawing other streams in between changes nothing: no hidden state. */
START_TEST(no_shared_state)
{
	struct ts_rng a, other;
	uint64_t first[8];
	ts_rng_init(&a, 7, 0, 5, 1);
	for (int i = 0; i < 8; i++)
		first[i] = ts_rng_u64(&a);
	ts_rng_init(&other, 7, 0, 6, 1);
	for (int i = 0; i < 100; i++)
		(void)ts_rng_u64(&other);
	ts_rng_init(&a, 7, 0, 5, 1);
	for (int i = 0; i < 8; i++)
		ck_assert_uint_eq(ts_rng_u64(&a), first[i]);
}
END_TEST

/* Each key component changes the stream. */
static const uint64_t keys[][4] = {
	{ 1, 0, 0, 0 }, { 0, 1, 0, 0 }, { 0, 0, 1, 0 }, { 0, 0, 0, 1 },
	{ 0, 0, 1, 1 }, { 1, 1, 1, 1 }, { 0, 1, 1, 0 },
};

START_TEST(key_components_differ)
{
	struct ts_rng base, r;
	ts_rng_init(&base, 0, 0, 0, 0);
	uint64_t b0 = ts_rng_u64(&base);
	ts_rng_init(&r, keys[_i][0], keys[_i][1], keys[_i][2], keys[_i][3]);
	ck_assert_uint_ne(ts_rng_u64(&r), b0);
}
END_TEST

/* (epoch, index) and (index, epoch) are different streams. */
START_TEST(components_not_symmetric)
{
	struct ts_rng a, b;
	ts_rng_init(&a, 1, 2, 3, 4);
	ts_rng_init(&b, 1, 3, 2, 4);
	ck_assert_uint_ne(ts_rng_u64(&a), ts_rng_u64(&b));
}
END_TEST

/* ---- ranges ---- */

START_TEST(uniform_in_unit_interval)
{
	struct ts_rng r;
	ts_rng_init(&r, 99, 0, 0, 0);
	double lo = 1.0, hi = 0.0;
	for (int i = 0; i < 100000; i++) {
		double u = ts_rng_uniform(&r);
		ck_assert(u >= 0.0 && u < 1.0);
		lo = fmin(lo, u);
		hi = fmax(hi, u);
	}
	ck_assert_double_lt(lo, 1e-3);
	ck_assert_double_gt(hi, 1.0 - 1e-3);
}
END_TEST

START_TEST(range_bounds)
{
	struct ts_rng r;
	ts_rng_init(&r, 5, 0, 0, 0);
	for (int i = 0; i < 10000; i++) {
		double v = ts_rng_range(&r, -3.0, 0.5);
		ck_assert(v >= -3.0 && v < 0.5);
	}
}
END_TEST

static const uint64_t below_ns[] = { 1, 2, 3, 7, 10, 1000, 1ull << 40,
				     (1ull << 63) + 12345 };

START_TEST(below_bounds)
{
	struct ts_rng r;
	uint64_t n = below_ns[_i];
	ts_rng_init(&r, 11, 1, 2, 3);
	for (int i = 0; i < 5000; i++)
		ck_assert_uint_lt(ts_rng_below(&r, n), n);
}
END_TEST

/* ---- uniformity ---- */

/* Chi-square of below(10) over 100000 draws; 9 degrees of freedom, the
 * 0.1% critical value is 27.88. Fixed keys, so the test is repeatable. */
START_TEST(below_chi_square)
{
	static const uint64_t seeds[] = { 1, 2, 3 };
	for (size_t s = 0; s < 3; s++) {
		struct ts_rng r;
		long cnt[10] = { 0 };
		const int n = 100000;
		ts_rng_init(&r, seeds[s], 0, 0, 0);
		for (int i = 0; i < n; i++)
			cnt[ts_rng_below(&r, 10)]++;
		double chi = 0.0, e = n / 10.0;
		for (int k = 0; k < 10; k++)
			chi += (cnt[k] - e) * (cnt[k] - e) / e;
		ck_assert_msg(chi < 27.88, "seed %lu chi2 %.2f", (unsigned long)seeds[s], chi);
	}
}
END_TEST

/* Mean and variance of uniform(): 0.5 and 1/12, within 5 sigma of the
 * estimator over 200000 draws. */
START_TEST(uniform_moments)
{
	struct ts_rng r;
	const int n = 200000;
	double sum = 0.0, sq = 0.0;
	ts_rng_init(&r, 123, 4, 5, 6);
	for (int i = 0; i < n; i++) {
		double u = ts_rng_uniform(&r);
		sum += u;
		sq += u * u;
	}
	double mean = sum / n, var = sq / n - mean * mean;
	ck_assert_double_lt(fabs(mean - 0.5), 5 * sqrt(1.0 / 12 / n));
	ck_assert_double_lt(fabs(var - 1.0 / 12), 0.002);
}
END_TEST

/* Consecutive samples of the index dimension (what shuffle and
 * augmentation see across a batch) are uncorrelated: the first draw of
 * streams index = 0..n-1 is uniform by chi-square over 16 bins. */
START_TEST(across_indices_uniform)
{
	const int n = 64000;
	long cnt[16] = { 0 };
	for (int i = 0; i < n; i++) {
		struct ts_rng r;
		ts_rng_init(&r, 42, 0, (uint64_t)i, 3);
		cnt[ts_rng_u64(&r) >> 60]++;
	}
	double chi = 0.0, e = n / 16.0;
	for (int k = 0; k < 16; k++)
		chi += (cnt[k] - e) * (cnt[k] - e) / e;
	/* 15 degrees of freedom, 0.1%: 37.70 */
	ck_assert_msg(chi < 37.70, "chi2 %.2f", chi);
}
END_TEST

static Suite *rng_suite(void)
{
	Suite *s = suite_create("rng");
	TCase *tc = tcase_create("determinism");
	tcase_add_test(tc, same_key_same_stream);
	tcase_add_test(tc, no_shared_state);
	tcase_add_loop_test(tc, key_components_differ, 0, (int)(sizeof(keys) / sizeof(keys[0])));
	tcase_add_test(tc, components_not_symmetric);
	suite_add_tcase(s, tc);
	tc = tcase_create("ranges");
	tcase_add_test(tc, uniform_in_unit_interval);
	tcase_add_test(tc, range_bounds);
	tcase_add_loop_test(tc, below_bounds, 0, (int)(sizeof(below_ns) / sizeof(below_ns[0])));
	suite_add_tcase(s, tc);
	tc = tcase_create("uniformity");
	tcase_add_test(tc, below_chi_square);
	tcase_add_test(tc, uniform_moments);
	tcase_add_test(tc, across_indices_uniform);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(rng_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
