/*
 * color-tool - run pipeline operators, compiled from their text as tsrun
 * compiles a pipeline, on a raw uint8 HWC file, for tests/torch-color.py
 * to compare with torchvision:
 *
 *   color-tool IN W H C OUT 'OPS' [SEED EPOCH INDEX]
 *
 * C may be written C:16 for uint16 pixels (native byte order in and out).
 * OPS is what goes between a source and batch(), e.g. "posterize(3)" or
 * "adjust_brightness(1.3) | equalize". The image runs through every op
 * before the output stage with ts_kernel_apply, each drawing from its stream
 * (SEED, EPOCH, INDEX, op position) as the engine does. OUT receives the
 * raw HWC result, in the dtype the ops leave. Exit 0 on success, 1 on an error, 2 on bad usage.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augment.h"
#include "kernel.h"
#include "dsl.h"
#include "tool-dsl.h"

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

int main(int argc, char **argv)
{
	if (argc != 7 && argc != 10) {
		fprintf(stderr, "usage: color-tool IN W H C OUT 'OPS' [SEED EPOCH INDEX]\n");
		return 2;
	}
	int w = atoi(argv[2]), h = atoi(argv[3]), c = atoi(argv[4]);
	const char *depth = strchr(argv[4], ':');
	const bool u16 = depth && atoi(depth + 1) == 16;
	uint64_t seed = 0, epoch = 0, index = 0;
	if (argc == 10) {
		seed = strtoull(argv[7], NULL, 0);
		epoch = strtoull(argv[8], NULL, 0);
		index = strtoull(argv[9], NULL, 0);
	}
	char src[4096];
	snprintf(src, sizeof(src),
		 "pipeline p =\n    synthetic([%d, %d], count = 1, channels = %d, depth = %d)\n"
		 "    | %s\n    | batch(1)\n", h, w, c, u16 ? 16 : 8, argv[6]);
	struct ts_plan *plan = tool_compile("color-tool.ts", src);
	if (!plan)
		return 1;
	int rc;
	struct ts_image img = {0}, tmp = {0};
	struct ts_error err = {0};
	rc = read_raw(argv[1], &img, w, h, c, u16 ? TS_DTYPE_U16 : TS_DTYPE_U8);
	for (size_t i = 0; rc == 0 && i < plan->n_ops; i++) {
		const struct ts_op *op = &plan->ops[i];
		if (op->kind == TS_OP_OUTPUT)
			break;
		struct ts_rng rng;
		ts_rng_init(&rng, seed, epoch, index, (uint64_t)op->index);
		rc = ts_kernel_apply(op, &img, &tmp, &rng, &err);
	}
	if (rc == 0)
		rc = write_image(argv[5], &img);
	if (rc)
		fprintf(stderr, "color-tool: %s (%d)\n", err.msg[0] ? err.msg : "failed", rc);
	ts_image_free(&img);
	ts_image_free(&tmp);
	ts_plan_destroy(plan);
	return rc ? 1 : 0;
}
