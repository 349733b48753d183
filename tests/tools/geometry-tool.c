/*
 * geometry-tool - the geometry operators, compiled from their text as
 * tsrun compiles a pipeline, for tests/torch-geometry.py to compare with
 * torchvision:
 *
 *   geometry-tool run IN W H C OUT 'OPS' [SEED EPOCH INDEX]
 *       run OPS (what goes between a source and batch(), e.g.
 *       "rotate(30, interpolation = bilinear)") on the raw uint8 HWC
 *       file IN (uint16, native endianness, when C is written "C:16")
 *       with ts_kernel_apply, each op drawing from its stream
 *       (SEED, EPOCH, INDEX, op position) as the engine does; OUT
 *       receives the raw result, stdout its "W H C".
 *   geometry-tool draws 'OP' W H N [SEED]
 *       the draws of the random op OP for a W x H image at stream
 *       positions (SEED, 0, 0..N-1), one line each: random_rotation the
 *       angle; random_affine angle tx ty scale shx shy; random_perspective
 *       0, or 1 and the eight endpoint coordinates.
 *
 * Exit 0 on success, 1 on an error, 2 on bad usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augment.h"
#include "kernel.h"
#include "dsl.h"
#include "geometry.h"

static int read_raw(const char *path, struct ts_image *img, int w, int h, int c,
		    enum ts_dtype t)
{
	if (ts_image_reserve(img, w, h, c, t) < 0)
		return -ENOMEM;
	FILE *f = fopen(path, "rbe");
	if (!f)
		return -errno;
	size_t n = fread(img->data, 1, ts_image_bytes(img), f);
	fclose(f);
	return n == ts_image_bytes(img) ? 0 : -EIO;
}

static int write_image(const char *path, const struct ts_image *img)
{
	FILE *f = fopen(path, "wbe");
	if (!f)
		return -errno;
	size_t row = (size_t)img->width * img->channels * ts_dtype_size(img->dtype);
	size_t w = 0;
	for (int y = 0; y < img->height; y++)
		w += fwrite(img->data + (size_t)y * img->stride, 1, row, f);
	return fclose(f) == 0 && w == row * (size_t)img->height ? 0 : -EIO;
}

/* The pipeline of OPS on a w x h x c synthetic source: as it is, or,
 * when what OPS makes has no fixed size for batch (random_rotation with
 * expand), with a resize after it that the tool does not run. */
static struct ts_plan *compile(int w, int h, int c, bool deep, const char *ops)
{
	char *text = NULL;
	struct ts_plan *plan = NULL;
	for (int tail = 0; tail < 2 && !plan; tail++) {
		char src[4096];
		snprintf(src, sizeof(src),
			 "pipeline p =\n    synthetic([%d, %d], count = 1, channels = %d%s)\n"
			 "    | %s\n%s    | batch(1)\n", h, w, c, deep ? ", depth = 16" : "", ops,
			 tail ? "    | resize([8, 8])\n" : "");
		struct ts_diags d;
		ts_diags_init(&d, "geometry-tool.ts", src, strlen(src));
		if (ts_dsl_compile(src, strlen(src), "geometry-tool.ts", NULL, &d, &plan)) {
			plan = NULL;
			if (!text)
				text = ts_diags_render(&d);
		}
		ts_diags_fini(&d);
	}
	if (!plan)
		fprintf(stderr, "%s", text ? text : "compile failed\n");
	free(text);
	return plan;
}

static int run(int argc, char **argv)
{
	if (argc != 8 && argc != 11)
		return 2;
	int w = atoi(argv[3]), h = atoi(argv[4]), c = atoi(argv[5]);
	const bool deep = strstr(argv[5], ":16") != NULL;
	uint64_t seed = 0, epoch = 0, index = 0;
	if (argc == 11) {
		seed = strtoull(argv[8], NULL, 0);
		epoch = strtoull(argv[9], NULL, 0);
		index = strtoull(argv[10], NULL, 0);
	}
	struct ts_plan *plan = compile(w, h, c, deep, argv[7]);
	if (!plan)
		return 1;
	struct ts_image img = {0}, tmp = {0};
	struct ts_error err = {0};
	int rc = read_raw(argv[2], &img, w, h, c, deep ? TS_DTYPE_U16 : TS_DTYPE_U8);
	for (size_t i = 0; rc == 0 && i < plan->n_ops; i++) {
		const struct ts_op *op = &plan->ops[i];
		if (op->kind == TS_OP_OUTPUT)
			break;
		struct ts_rng rng;
		ts_rng_init(&rng, seed, epoch, index, (uint64_t)op->index);
		rc = ts_kernel_apply(op, &img, &tmp, &rng, &err);
	}
	if (rc == 0)
		rc = write_image(argv[6], &img);
	if (rc)
		fprintf(stderr, "geometry-tool: %s (%d)\n", err.msg[0] ? err.msg : "failed", rc);
	else
		printf("%d %d %d\n", img.width, img.height, img.channels);
	ts_image_free(&img);
	ts_image_free(&tmp);
	ts_plan_destroy(plan);
	return rc ? 1 : 0;
}

static int draws(int argc, char **argv)
{
	if (argc != 6 && argc != 7)
		return 2;
	int w = atoi(argv[3]), h = atoi(argv[4]);
	long n = atol(argv[5]);
	uint64_t seed = argc == 7 ? strtoull(argv[6], NULL, 0) : 0;
	struct ts_plan *plan = compile(w, h, 3, false, argv[2]);
	if (!plan)
		return 1;
	const struct ts_op *op = &plan->ops[0];
	for (long i = 0; i < n; i++) {
		struct ts_rng rng;
		ts_rng_init(&rng, seed, 0, (uint64_t)i, (uint64_t)op->index);
		if (op->kind == TS_OP_RANDOM_ROTATION) {
			printf("%.17g\n", ts_geometry_rotation_draw(op, &rng));
		} else if (op->kind == TS_OP_RANDOM_AFFINE) {
			struct ts_geometry_affine_draw a;
			ts_geometry_affine_draw(op, w, h, &rng, &a);
			printf("%.17g %.17g %.17g %.17g %.17g %.17g\n", a.angle,
			       a.translate[0], a.translate[1], a.scale, a.shear[0],
			       a.shear[1]);
		} else if (op->kind == TS_OP_RANDOM_PERSPECTIVE) {
			double s[8], e[8];
			if (!ts_geometry_perspective_draw(op, w, h, &rng, s, e)) {
				printf("0\n");
				continue;
			}
			printf("1");
			for (int k = 0; k < 8; k++)
				printf(" %g", e[k]);
			printf("\n");
		} else {
			fprintf(stderr, "geometry-tool: %s draws nothing\n",
				ts_op_kind_name(op->kind));
			ts_plan_destroy(plan);
			return 2;
		}
	}
	ts_plan_destroy(plan);
	return 0;
}

int main(int argc, char **argv)
{
	int rc = 2;
	if (argc > 1 && strcmp(argv[1], "run") == 0)
		rc = run(argc, argv);
	else if (argc > 1 && strcmp(argv[1], "draws") == 0)
		rc = draws(argc, argv);
	if (rc == 2)
		fprintf(stderr, "usage: geometry-tool run IN W H C OUT 'OPS' [SEED EPOCH INDEX]\n"
				"       geometry-tool draws 'OP' W H N [SEED]\n");
	return rc;
}
