/*
 * test-share.c - who reads what (runtime/share.h): a node's share of an
 * epoch against DistributedSampler's own rule written out literally, the
 * node variables, and a rank's spans of a job's epoch (equal sizes, the
 * union the whole epoch, drop and pad).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "share.h"
#include "util.h"

/* ------------------------------------------------------------------ nodes */

/* torch.utils.data.DistributedSampler without shuffle, written out:
 * indices = range(n); pad: indices += indices[:pad] (repeated as needed);
 * drop: indices = indices[:total]; then indices[rank:total:replicas]. */
static size_t sampler_share(uint64_t n, uint32_t k, uint32_t rank, bool drop,
			    uint64_t *out)
{
	uint64_t per = drop && n % k ? (n - k + k - 1) / k : (n + k - 1) / k;
	uint64_t total = per * k;
	uint64_t *ind = malloc(sizeof(*ind) * (total > n ? total : n));
	ck_assert_ptr_nonnull(ind);
	for (uint64_t i = 0; i < n; i++)
		ind[i] = i;
	for (uint64_t i = n; i < total; i++)
		ind[i] = ind[i - n];
	size_t m = 0;
	for (uint64_t i = rank; i < total; i += k)
		out[m++] = ind[i];
	free(ind);
	return m;
}

static const struct {
	uint64_t n;
	uint32_t k;
} node_cases[] = {
	{10, 1}, {10, 2}, {10, 3}, {10, 4}, {11, 4}, {12, 4}, {3, 4}, {1, 2},
	{1000, 7}, {2000, 2}, {5, 5}, {7, 16},
};

START_TEST(node_share_is_distributed_sampler)
{
	uint64_t n = node_cases[_i].n;
	uint32_t k = node_cases[_i].k;
	for (int drop = 0; drop < 2; drop++) {
		uint64_t *want = calloc(n + k, sizeof(*want));
		unsigned *seen = calloc(n, sizeof(*seen));
		uint64_t size0 = 0;
		for (uint32_t r = 0; r < k; r++) {
			struct ts_share_node s = { n, r, k, drop != 0 };
			uint64_t size = ts_share_node_size(&s);
			size_t m = sampler_share(n, k, r, drop != 0, want);
			ck_assert_uint_eq(size, m);
			if (r == 0)
				size0 = size;
			ck_assert_uint_eq(size, size0);   /* equal shares */
			for (uint64_t i = 0; i < size; i++) {
				uint64_t p = ts_share_node_pos(&s, i);
				ck_assert_uint_eq(p, want[i]);
				ck_assert_uint_lt(p, n);
				seen[p]++;
			}
		}
		/* Together: each item once, but for the documented drop or
		 * pad. */
		uint64_t reads = 0, twice = 0, never = 0;
		for (uint64_t p = 0; p < n; p++) {
			reads += seen[p];
			twice += seen[p] > 1;
			never += seen[p] == 0;
		}
		ck_assert_uint_eq(reads, size0 * k);
		if (drop) {
			ck_assert_uint_eq(twice, 0);
			ck_assert_uint_eq(never, n % k);
		} else {
			/* the first ceil * k - n positions are read twice */
			ck_assert_uint_eq(never, 0);
			ck_assert_uint_eq(size0, (n + k - 1) / k);
		}
		free(want);
		free(seen);
	}
}
END_TEST

static const struct {
	int index, count;
	/* GROUP_RANK, GROUP_WORLD_SIZE, SLURM_NODEID, SLURM_NNODES, RANK,
	 * WORLD_SIZE */
	const char *env[6];
	int want_index, want_count; /* -1: error */
	const char *from;
} resolve_cases[] = {
	{0, 0, {0}, 0, 1, NULL},
	{2, 3, {0}, 2, 3, NULL},
	{2, 3, {"1", "4"}, 2, 3, NULL},           /* explicit wins */
	{-1, -1, {0}, 0, 1, NULL},
	{-1, -1, {"1", "4", "2", "3"}, 1, 4, "GROUP_RANK/GROUP_WORLD_SIZE"},
	{-1, -1, {NULL, NULL, "2", "3"}, 2, 3, "SLURM_NODEID/SLURM_NNODES"},
	/* RANK and WORLD_SIZE count processes, not nodes: ignored */
	{-1, -1, {NULL, NULL, NULL, NULL, "5", "8"}, 0, 1, NULL},
	{-1, -1, {"1", NULL, "2", "3"}, -1, -1, NULL},  /* half a pair */
	{-1, -1, {NULL, NULL, NULL, "3"}, -1, -1, NULL},
	{-1, -1, {"x", "4"}, -1, -1, NULL},
	{-1, -1, {"4", "4"}, -1, -1, NULL},
	{-1, -1, {"0", "0"}, -1, -1, NULL},
	{3, 3, {0}, -1, -1, NULL},
	{-2, 3, {0}, -1, -1, NULL},
};

START_TEST(node_resolve_table)
{
	static const char *names[] = {"GROUP_RANK", "GROUP_WORLD_SIZE", "SLURM_NODEID",
				      "SLURM_NNODES", "RANK", "WORLD_SIZE"};
	for (int k = 0; k < 6; k++) {
		if (resolve_cases[_i].env[k])
			setenv(names[k], resolve_cases[_i].env[k], 1);
		else
			unsetenv(names[k]);
	}
	int i = -7, c = -7;
	const char *from = "unset";
	struct ts_error err = {0};
	int rc = ts_share_node_resolve(resolve_cases[_i].index, resolve_cases[_i].count,
				       &i, &c, &from, &err);
	if (resolve_cases[_i].want_count < 0) {
		ck_assert_int_eq(rc, TS_E_SOURCE);
		ck_assert_int_eq(i, -7);
		ck_assert_str_eq(from, "unset");
		ck_assert(err.msg[0]);
	} else {
		ck_assert_int_eq(rc, 0);
		ck_assert_int_eq(i, resolve_cases[_i].want_index);
		ck_assert_int_eq(c, resolve_cases[_i].want_count);
		if (resolve_cases[_i].from)
			ck_assert_str_eq(from, resolve_cases[_i].from);
		else
			ck_assert_ptr_null(from);
	}
}
END_TEST

START_TEST(node_resolve_says_what_to_set)
{
	unsetenv("SLURM_NODEID");
	unsetenv("SLURM_NNODES");
	setenv("GROUP_RANK", "1", 1);
	unsetenv("GROUP_WORLD_SIZE");
	int i, c;
	struct ts_error err = {0};
	ck_assert_int_eq(ts_share_node_resolve(-1, -1, &i, &c, NULL, &err), TS_E_SOURCE);
	ck_assert_ptr_nonnull(strstr(err.msg, "GROUP_RANK is set but GROUP_WORLD_SIZE is not"));
	unsetenv("GROUP_RANK");
}
END_TEST

/* ------------------------------------------------------------------ ranks */

static const struct {
	uint64_t m;
	uint32_t world, batch;
} rank_cases[] = {
	{2000, 2, 32}, {2000, 2, 64}, {100, 4, 8}, {101, 4, 8}, {7, 4, 8},
	{1, 3, 4}, {64, 2, 32}, {65, 2, 32}, {127, 2, 32}, {50, 1, 16},
	{1000, 8, 1}, {999, 3, 10}, {33, 4, 8},
};

START_TEST(rank_spans)
{
	uint64_t m = rank_cases[_i].m;
	uint32_t w = rank_cases[_i].world, b = rank_cases[_i].batch;
	for (int drop = 0; drop < 2; drop++) {
		unsigned *seen = calloc(m, sizeof(*seen));
		uint64_t size0 = 0, spans0 = 0;
		uint64_t want = drop ? m / w : (m + w - 1) / w;  /* num_samples */
		for (uint32_t r = 0; r < w; r++) {
			struct ts_share_rank s = { m, r, w, b, drop != 0 };
			ck_assert_uint_eq(ts_share_rank_size(&s), want);
			uint64_t i = 0, first, n, got = 0, spans = 0;
			while (ts_share_rank_next(&s, i, &first, &n)) {
				ck_assert_uint_ge(first, i);
				ck_assert_uint_ge(n, 1);
				ck_assert_uint_le(n, b);
				ck_assert_uint_le(first + n, m);
				for (uint64_t k = first; k < first + n; k++)
					seen[k]++;
				got += n;
				spans++;
				i = first + n;
			}
			ck_assert_uint_eq(got, want);
			if (r == 0) {
				size0 = got;
				spans0 = spans;
			}
			/* equal samples and equal batches: no rank waits for
			 * another's extra step */
			ck_assert_uint_eq(got, size0);
			ck_assert_uint_eq(spans, spans0);
			ck_assert(!ts_share_rank_next(&s, m, &first, &n));
		}
		uint64_t never = 0, many = 0;
		for (uint64_t k = 0; k < m; k++) {
			never += seen[k] == 0;
			many += seen[k] > 1 ? seen[k] - 1 : 0;
		}
		if (drop) {
			ck_assert_uint_eq(many, 0);          /* disjoint */
			ck_assert_uint_eq(never, m - want * w);
		} else {
			ck_assert_uint_eq(never, 0);         /* the whole epoch */
			ck_assert_uint_eq(many, want * w - m);
		}
		free(seen);
	}
}
END_TEST

/* The layout itself, for one case worked by hand: M = 100, w = 4, B = 8:
 * R = 3 rounds of 32, m = 4; pad q = 1, drop q = 1. */
START_TEST(rank_spans_by_hand)
{
	struct ts_share_rank s = { 100, 1, 4, 8, false };
	uint64_t first, n;
	ck_assert(ts_share_rank_next(&s, 0, &first, &n));
	ck_assert_uint_eq(first, 8);
	ck_assert_uint_eq(n, 8);
	ck_assert(ts_share_rank_next(&s, 16, &first, &n));
	ck_assert_uint_eq(first, 40);
	ck_assert(ts_share_rank_next(&s, 88, &first, &n));
	ck_assert_uint_eq(first, 97);
	ck_assert_uint_eq(n, 1);
	/* M = 7, w = 4, B = 8, pad: q = 2, spans 0-1, 2-3, 4-5, 5-6 */
	struct ts_share_rank t = { 7, 3, 4, 8, false };
	ck_assert(ts_share_rank_next(&t, 0, &first, &n));
	ck_assert_uint_eq(first, 5);
	ck_assert_uint_eq(n, 2);
	/* drop: q = 1, spans 0, 1, 2, 3; samples 4..6 read by none */
	t.drop = true;
	ck_assert(ts_share_rank_next(&t, 0, &first, &n));
	ck_assert_uint_eq(first, 3);
	ck_assert_uint_eq(n, 1);
}
END_TEST

static Suite *share_suite(void)
{
	Suite *s = suite_create("share");
	TCase *tc = tcase_create("nodes");
	tcase_add_loop_test(tc, node_share_is_distributed_sampler, 0,
			    TS_ARRAY_LEN(node_cases));
	tcase_add_loop_test(tc, node_resolve_table, 0, TS_ARRAY_LEN(resolve_cases));
	tcase_add_test(tc, node_resolve_says_what_to_set);
	suite_add_tcase(s, tc);

	tc = tcase_create("ranks");
	tcase_add_loop_test(tc, rank_spans, 0, TS_ARRAY_LEN(rank_cases));
	tcase_add_test(tc, rank_spans_by_hand);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(share_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
