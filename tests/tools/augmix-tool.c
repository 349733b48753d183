/*
 * augmix-tool - augmix's draws and ops, for tests/torch-augmix.py to
 * replay through torchvision 0.14:
 *
 *   augmix-tool draws 'OPS' H W C N [SEED]
 *   augmix-tool step IN W H C OUT NAME MAGNITUDE nearest|bilinear FILL|none
 *   augmix-tool sum IN N
 *
 * The draws form compiles OPS (what goes between a synthetic H x W x C
 * source and batch(), its first augmix the one drawn) and prints, for
 * samples 0..N-1 of epoch 0, one line of that augmix's draws from its
 * stream (SEED, 0, index, op): "M0 M1 W0 ... Wk-1", then per chain
 * " | DEPTH" and per op " INDEX BIN SIGN" (-1 for none), the weights as
 * %.9g (float32 round trips). The step form applies one op of AugMix's
 * space (torchvision's name, e.g. ShearX) with that magnitude to a raw
 * uint8 HWC file as augmix does (the tensor path), FILL one level for
 * every channel or none (fill = None), and writes the raw result to OUT.
 * The sum form prints ts_augmix_torch_sum of the N float32 values in IN.
 * Exit 0, 1 on an error, 2 on bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augmix.h"
#include "dsl.h"
#include "tool-dsl.h"

static int draws(int argc, char **argv)
{
	if (argc != 7 && argc != 8)
		return 2;
	int h = atoi(argv[3]), w = atoi(argv[4]), c = atoi(argv[5]);
	long n = atol(argv[6]);
	uint64_t seed = argc == 8 ? strtoull(argv[7], NULL, 0) : 1;
	char src[4096];
	snprintf(src, sizeof(src),
		 "pipeline p =\n    synthetic([%d, %d], count = 1, channels = %d)\n"
		 "    | %s\n    | batch(1)\n", h, w, c, argv[2]);
	struct ts_plan *plan = tool_compile("augmix-tool.ts", src);
	if (!plan)
		return 1;
	const struct ts_op *op = NULL;
	for (size_t i = 0; i < plan->n_ops && !op; i++)
		if (plan->ops[i].kind == TS_OP_AUGMIX)
			op = &plan->ops[i];
	struct ts_augmix_draw *dr = malloc(sizeof(*dr));
	if (!op || !dr) {
		fprintf(stderr, "augmix-tool: %s\n", op ? "out of memory" : "no augmix in OPS");
		free(dr);
		ts_plan_destroy(plan);
		return 1;
	}
	for (long i = 0; i < n; i++) {
		struct ts_rng rng;
		ts_rng_init(&rng, seed, 0, (uint64_t)i, (uint64_t)op->index);
		ts_augmix_draw(op, w, h, &rng, dr);
		printf("%.9g %.9g", (double)dr->m[0], (double)dr->m[1]);
		for (int k = 0; k < dr->width; k++)
			printf(" %.9g", (double)dr->w[k]);
		for (int k = 0; k < dr->width; k++) {
			printf(" | %d", dr->depth[k]);
			for (int j = 0; j < dr->depth[k]; j++)
				printf(" %d %d %d", dr->steps[k][j].index, dr->steps[k][j].bin,
				       dr->steps[k][j].sign);
		}
		printf("\n");
	}
	free(dr);
	ts_plan_destroy(plan);
	return 0;
}

/* sum IN N: ts_augmix_torch_sum of N float32 values. */
static int sum(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	size_t n = (size_t)atol(argv[3]);
	float *x = malloc((n ? n : 1) * sizeof(float));
	FILE *in = x ? fopen(argv[2], "rbe") : NULL;
	int rc = !in || fread(x, sizeof(float), n, in) != n;
	if (in)
		fclose(in);
	if (!rc)
		printf("%.9g\n", (double)ts_augmix_torch_sum(x, n));
	else
		fprintf(stderr, "augmix-tool: cannot read %zu floats from %s\n", n, argv[2]);
	free(x);
	return rc;
}

static int step(int argc, char **argv)
{
	if (argc != 11)
		return 2;
	int w = atoi(argv[3]), h = atoi(argv[4]), c = atoi(argv[5]);
	struct ts_policy_step st = { .op = TS_PA_COUNT, .magnitude = strtod(argv[8], NULL) };
	for (int i = 0; i < TS_AUGMIX_OPS; i++)
		if (strcmp(argv[7], ts_policy_op_name(ts_augmix_op(i))) == 0)
			st.op = ts_augmix_op(i);
	if (st.op == TS_PA_COUNT || w < 1 || h < 1 || (c != 1 && c != 3))
		return 2;
	const bool bilinear = strcmp(argv[9], "bilinear") == 0;
	const bool none = strcmp(argv[10], "none") == 0;
	float fill[4];
	for (int i = 0; i < 4; i++)
		fill[i] = (float)atof(argv[10]);
	struct ts_image img = {0}, tmp = {0};
	int rc = ts_image_reserve(&img, w, h, c, TS_DTYPE_U8);
	FILE *in = rc ? NULL : fopen(argv[2], "rbe");
	if (!in || fread(img.data, 1, ts_image_bytes(&img), in) != ts_image_bytes(&img))
		rc = -1;
	if (in)
		fclose(in);
	if (rc == 0)
		rc = ts_augmix_apply_step(&st, &img, &tmp, bilinear, none ? NULL : fill);
	if (rc == 0) {
		FILE *out = fopen(argv[6], "wbe");
		size_t row = (size_t)img.width * img.channels;
		for (int y = 0; out && y < img.height; y++)
			if (fwrite(img.data + (size_t)y * img.stride, 1, row, out) != row)
				rc = -1;
		if (!out || fclose(out) != 0)
			rc = -1;
	}
	if (rc)
		fprintf(stderr, "augmix-tool: step failed (%d)\n", rc);
	ts_image_free(&img);
	ts_image_free(&tmp);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	int rc = 2;
	if (argc > 1 && strcmp(argv[1], "draws") == 0)
		rc = draws(argc, argv);
	else if (argc > 1 && strcmp(argv[1], "step") == 0)
		rc = step(argc, argv);
	else if (argc > 1 && strcmp(argv[1], "sum") == 0)
		rc = sum(argc, argv);
	if (rc == 2)
		fprintf(stderr, "usage: augmix-tool draws 'OPS' H W C N [SEED]\n"
				"       augmix-tool step IN W H C OUT NAME MAGNITUDE nearest|bilinear FILL|none\n"
				"       augmix-tool sum IN N\n");
	return rc;
}
