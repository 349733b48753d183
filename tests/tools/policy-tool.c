/*
 * policy-tool - the draws of a pipeline's policy operator, for
 * tests/torch-policy.py to compare with torchvision's sampling:
 *
 *   policy-tool 'OPS' H W C N [SEED]
 *   policy-tool table KIND BINS W H
 *   policy-tool step IN W H C OUT NAME MAGNITUDE nearest|bilinear|bicubic FILL
 *   policy-tool slot IN W H C OUT 'OPS' INDEX [SEED]
 *
 * OPS is what goes between a synthetic H x W x C source and batch(), as
 * tsrun compiles it. For samples 0..N-1 of epoch 0 it prints one line of
 * the draws of the first random_erasing, random_apply or random_choice
 * (the pipeline's or its output stage's): random_erasing "i j h w", or
 * "-" when it erases nothing; random_apply 1 or 0; random_choice the
 * alternative, from 0; rand_augment, trivial_augment_wide and
 * auto_augment the ops applied, "Name:magnitude" separated by spaces
 * (magnitudes as %.17g), or "none". The table form prints, for KIND
 * rand_augment, trivial_augment_wide or auto_augment, every op's
 * magnitude table for BINS bins on a W x H image: "Name signed v0 v1 ...",
 * "Name - 0" for an op without one. The step form applies one op
 * (torchvision's name, e.g. ShearX) with that magnitude to a raw uint8
 * HWC file, as the policies do, fill one level for every channel, and
 * writes the raw result to OUT. The slot form runs the whole compiled
 * pipeline on a raw uint8 HWC file at stream position (SEED, 0, INDEX),
 * its output stage included, writes the sample as the ring slot holds it
 * to OUT, and prints the box of each random_erasing of the output stage
 * ("i j h w", or "-"). Exit 0, 1 on an error, 2 on bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl.h"
#include "tool-dsl.h"
#include "augment.h"
#include "kernel.h"
#include "policy.h"

static const struct ts_op *find(const struct ts_plan *p)
{
	for (size_t i = 0; i < p->n_ops; i++) {
		const struct ts_op *o = &p->ops[i];
		if (o->kind == TS_OP_RANDOM_ERASING || o->kind == TS_OP_RANDOM_APPLY ||
		    o->kind == TS_OP_RANDOM_CHOICE || o->kind == TS_OP_RAND_AUGMENT ||
		    o->kind == TS_OP_TRIVIAL_AUGMENT_WIDE || o->kind == TS_OP_AUTO_AUGMENT)
			return o;
		for (size_t j = 0; j < o->output.n_parts; j++)
			if (o->output.parts[j].kind == TS_OP_RANDOM_ERASING)
				return &o->output.parts[j];
	}
	return NULL;
}

static int table(int argc, char **argv)
{
	if (argc != 6)
		return 2;
	enum ts_op_kind k = strcmp(argv[2], "trivial_augment_wide") == 0 ? TS_OP_TRIVIAL_AUGMENT_WIDE
			    : strcmp(argv[2], "auto_augment") == 0	  ? TS_OP_AUTO_AUGMENT
									  : TS_OP_RAND_AUGMENT;
	int bins = atoi(argv[3]), w = atoi(argv[4]), h = atoi(argv[5]);
	if (bins < 1 || bins > 1024)
		return 2;
	float mag[1024];
	for (int o = 0; o < TS_PA_COUNT; o++) {
		bool sg;
		int n = ts_policy_table(k, (enum ts_policy_opname)o, bins, w, h, mag, &sg);
		printf("%s %s", ts_policy_op_name((enum ts_policy_opname)o), n ? (sg ? "1" : "0") : "-");
		if (!n)
			printf(" 0");
		for (int i = 0; i < n; i++)
			printf(" %.9g", (double)mag[i]);
		printf("\n");
	}
	return 0;
}

static int step(int argc, char **argv)
{
	if (argc != 11)
		return 2;
	int w = atoi(argv[3]), h = atoi(argv[4]), c = atoi(argv[5]);
	struct ts_policy_step st = { .op = TS_PA_COUNT, .magnitude = strtod(argv[8], NULL) };
	for (int o = 0; o < TS_PA_COUNT; o++)
		if (strcmp(argv[7], ts_policy_op_name((enum ts_policy_opname)o)) == 0)
			st.op = (enum ts_policy_opname)o;
	if (st.op == TS_PA_COUNT || w < 1 || h < 1 || c < 1 || c > 4)
		return 2;
	enum ts_interp interp = strcmp(argv[9], "bilinear") == 0  ? TS_INTERP_BILINEAR
				: strcmp(argv[9], "bicubic") == 0 ? TS_INTERP_BICUBIC
								  : TS_INTERP_NEAREST;
	int f = atoi(argv[10]);
	const uint8_t fill[4] = { (uint8_t)f, (uint8_t)f, (uint8_t)f, (uint8_t)f };
	struct ts_image img = {0}, tmp = {0};
	struct ts_error err = {0};
	int rc = ts_image_reserve(&img, w, h, c, TS_DTYPE_U8);
	FILE *in = rc ? NULL : fopen(argv[2], "rbe");
	if (!in || fread(img.data, 1, ts_image_bytes(&img), in) != ts_image_bytes(&img))
		rc = -1;
	if (in)
		fclose(in);
	if (rc == 0)
		rc = ts_policy_apply_step(&st, &img, &tmp, interp, fill, &err);
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
		fprintf(stderr, "policy-tool: %s (%d)\n", err.msg[0] ? err.msg : "failed", rc);
	ts_image_free(&img);
	ts_image_free(&tmp);
	return rc ? 1 : 0;
}

static struct ts_plan *compile_ops(const char *ops, int h, int w, int c)
{
	char src[4096];
	snprintf(src, sizeof(src),
		 "pipeline p =\n    synthetic([%d, %d], count = 1, channels = %d)\n"
		 "    | %s\n    | batch(1)\n", h, w, c, ops);
	return tool_compile("policy-tool.ts", src);
}

static int slot(int argc, char **argv)
{
	if (argc != 9 && argc != 10)
		return 2;
	int w = atoi(argv[3]), h = atoi(argv[4]), c = atoi(argv[5]);
	uint64_t index = strtoull(argv[8], NULL, 0);
	uint64_t seed = argc == 10 ? strtoull(argv[9], NULL, 0) : 0;
	struct ts_plan *plan = compile_ops(argv[7], h, w, c);
	if (!plan)
		return 1;
	struct ts_image img = {0}, t1 = {0}, t2 = {0};
	struct ts_error err = {0};
	void *buf = malloc(plan->sample_bytes);
	int rc = buf ? ts_image_reserve(&img, w, h, c, TS_DTYPE_U8) : -1;
	FILE *in = rc ? NULL : fopen(argv[2], "rbe");
	if (!in || fread(img.data, 1, ts_image_bytes(&img), in) != ts_image_bytes(&img))
		rc = -1;
	if (in)
		fclose(in);
	size_t i = 0;
	for (; rc == 0 && i < plan->n_ops && plan->ops[i].kind != TS_OP_OUTPUT; i++) {
		struct ts_rng r;
		ts_rng_init(&r, seed, 0, index, (uint64_t)plan->ops[i].index);
		rc = ts_kernel_apply(&plan->ops[i], &img, &t1, &r, &err);
	}
	if (rc == 0)
		rc = ts_out_write(&plan->ops[i], &img, seed, 0, index, &t1, &t2, buf,
				  plan->sample_bytes, &err);
	if (rc == 0) {
		FILE *out = fopen(argv[6], "wbe");
		if (!out || fwrite(buf, 1, plan->sample_bytes, out) != plan->sample_bytes)
			rc = -1;
		if (out && fclose(out) != 0)
			rc = -1;
		const struct ts_op *o = &plan->ops[i];
		for (size_t j = 0; rc == 0 && j < o->output.n_parts; j++) {
			if (o->output.parts[j].kind != TS_OP_RANDOM_ERASING)
				continue;
			struct ts_rng r;
			struct ts_erase_box b;
			ts_rng_init(&r, seed, 0, index, (uint64_t)o->output.parts[j].index);
			ts_policy_erase_box(&o->output.parts[j], plan->height, plan->width, &r, &b);
			if (b.apply)
				printf("%d %d %d %d\n", b.i, b.j, b.h, b.w);
			else
				printf("-\n");
		}
	}
	if (rc)
		fprintf(stderr, "policy-tool: %s (%d)\n", err.msg[0] ? err.msg : "failed", rc);
	free(buf);
	ts_image_free(&img);
	ts_image_free(&t1);
	ts_image_free(&t2);
	ts_plan_destroy(plan);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "slot") == 0)
		return slot(argc, argv);
	if (argc > 1 && strcmp(argv[1], "table") == 0)
		return table(argc, argv);
	if (argc > 1 && strcmp(argv[1], "step") == 0)
		return step(argc, argv);
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
	struct ts_plan *plan = tool_compile("policy-tool.ts", src);
	if (!plan)
		return 1;
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
		} else if (op->kind == TS_OP_RAND_AUGMENT ||
			   op->kind == TS_OP_TRIVIAL_AUGMENT_WIDE ||
			   op->kind == TS_OP_AUTO_AUGMENT) {
			struct ts_policy_step st[TS_POLICY_MAX_STEPS];
			int k = ts_policy_draw(op, w, h, &r, st);
			for (int j = 0; j < k; j++)
				printf("%s%s:%.17g", j ? " " : "", ts_policy_op_name(st[j].op),
				       st[j].magnitude);
			printf("%s\n", k ? "" : "none");
		} else if (op->kind == TS_OP_RANDOM_APPLY) {
			printf("%d\n", ts_policy_apply_draw(op, &r) ? 1 : 0);
		} else {
			printf("%zu\n", ts_policy_choice_draw(op, &r));
		}
	}
	ts_plan_destroy(plan);
	return 0;
}
