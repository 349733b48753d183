/*
 * policy-tool - the draws of a pipeline's policy operator, for
 * tests/torch-policy.py to compare with torchvision's sampling:
 *
 *   policy-tool 'OPS' H W C N [SEED]
 *
 * OPS is what goes between a synthetic H x W x C source and batch(), as
 * tsrun compiles it. For samples 0..N-1 of epoch 0 it prints one line of
 * the draws of the first random_erasing, random_apply or random_choice
 * (the pipeline's or its output stage's): random_erasing "i j h w", or
 * "-" when it erases nothing; random_apply 1 or 0; random_choice the
 * alternative, from 0. Exit 0, 1 on an error, 2 on bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl.h"
#include "policy.h"

static const struct ts_op *find(const struct ts_plan *p)
{
	for (size_t i = 0; i < p->n_ops; i++) {
		const struct ts_op *o = &p->ops[i];
		if (o->kind == TS_OP_RANDOM_ERASING || o->kind == TS_OP_RANDOM_APPLY ||
		    o->kind == TS_OP_RANDOM_CHOICE)
			return o;
		for (size_t j = 0; j < o->n_parts; j++)
			if (o->parts[j].kind == TS_OP_RANDOM_ERASING)
				return &o->parts[j];
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 6 && argc != 7) {
		fprintf(stderr, "usage: policy-tool 'OPS' H W C N [SEED]\n");
		return 2;
	}
	int h = atoi(argv[2]), w = atoi(argv[3]), c = atoi(argv[4]);
	long n = atol(argv[5]);
	uint64_t seed = argc == 7 ? strtoull(argv[6], NULL, 0) : 0;
	char src[4096];
	snprintf(src, sizeof(src),
		 "pipeline p =\n    synthetic([%d, %d], count = 1, channels = %d)\n"
		 "    | %s\n    | batch(1)\n", h, w, c, argv[1]);
	struct ts_diags d;
	struct ts_plan *plan = NULL;
	ts_diags_init(&d, "policy-tool.ts", src, strlen(src));
	int rc = ts_dsl_compile(src, strlen(src), "policy-tool.ts", NULL, &d, &plan);
	if (rc) {
		char *text = ts_diags_render(&d);
		fprintf(stderr, "%s", text ? text : "compile failed\n");
		free(text);
		ts_diags_fini(&d);
		return 1;
	}
	ts_diags_fini(&d);
	const struct ts_op *op = find(plan);
	if (!op) {
		fprintf(stderr, "policy-tool: no policy operator in '%s'\n", argv[1]);
		ts_plan_destroy(plan);
		return 1;
	}
	for (long i = 0; i < n; i++) {
		struct ts_rng r;
		ts_rng_init(&r, seed, 0, (uint64_t)i, (uint64_t)op->index);
		if (op->kind == TS_OP_RANDOM_ERASING) {
			struct ts_erase_box b;
			ts_policy_erase_box(op, h, w, &r, &b);
			if (b.apply)
				printf("%d %d %d %d\n", b.i, b.j, b.h, b.w);
			else
				printf("-\n");
		} else if (op->kind == TS_OP_RANDOM_APPLY) {
			printf("%d\n", ts_policy_apply_draw(op, &r) ? 1 : 0);
		} else {
			printf("%zu\n", ts_policy_choice_draw(op, &r));
		}
	}
	ts_plan_destroy(plan);
	return 0;
}
