/*
 * kernel-tool - run one augment kernel or the fused output stage on a raw
 * uint8 HWC file, for tests/torch-equal.py to compare with torchvision.
 *
 *   kernel-tool resize IN W H C OUT OW OH bilinear|area|nearest|bicubic|lanczos
 *   kernel-tool crop IN W H C OUT X Y CW CH
 *   kernel-tool resized-crop IN W H C OUT X Y CW CH OW OH [INTERP]
 *   kernel-tool flip IN W H C OUT h|v
 *   kernel-tool gray IN W H C OUT CHANNELS
 *   kernel-tool brightness|contrast|saturation IN W H C OUT FACTOR
 *   kernel-tool output IN W H C OUT PART...
 *       PART: resize:N | resize:WxH | center:WxH | flip:h | flip:v |
 *             normalize:M0,M1,M2:S0,S1,S2 | to:uint8|float16|float32:nhwc|nchw
 *
 * OUT receives the raw result (HWC uint8 for kernels, the slot bytes for
 * output). Exit 0 on success, 1 on a kernel error, 2 on bad usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augment.h"

static int usage(void)
{
	fprintf(stderr, "usage: kernel-tool OP IN W H C OUT ARGS... (see source)\n");
	return 2;
}

static int read_raw(const char *path, struct ts_image *img, int w, int h, int c)
{
	if (ts_image_reserve(img, w, h, c, TS_DTYPE_U8) < 0)
		return -ENOMEM;
	FILE *f = fopen(path, "rbe");
	if (!f)
		return -errno;
	size_t n = fread(img->data, 1, ts_image_bytes(img), f);
	fclose(f);
	return n == ts_image_bytes(img) ? 0 : -EIO;
}

static int write_raw(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wbe");
	if (!f)
		return -errno;
	size_t w = fwrite(p, 1, n, f);
	return fclose(f) == 0 && w == n ? 0 : -EIO;
}

static enum ts_interp interp_of(const char *s)
{
	return strcmp(s, "area") == 0      ? TS_INTERP_AREA
	       : strcmp(s, "nearest") == 0 ? TS_INTERP_NEAREST
	       : strcmp(s, "bicubic") == 0 ? TS_INTERP_BICUBIC
	       : strcmp(s, "lanczos") == 0 ? TS_INTERP_LANCZOS
					   : TS_INTERP_BILINEAR;
}

static int parse_part(const char *s, struct ts_op *op, int idx)
{
	memset(op, 0, sizeof(*op));
	op->index = idx;
	if (sscanf(s, "resize:%dx%d", &op->resize.size_w, &op->resize.size_h) == 2) {
		op->kind = TS_OP_RESIZE;
	} else if (sscanf(s, "resize:%d", &op->resize.size_h) == 1) {
		op->kind = TS_OP_RESIZE;
		op->resize.size_w = 0;
	} else if (sscanf(s, "center:%dx%d", &op->crop.size_w, &op->crop.size_h) == 2) {
		op->kind = TS_OP_CENTER_CROP;
	} else if (strncmp(s, "flip:", 5) == 0) {
		op->kind = TS_OP_FLIP;
		op->flip.p = 1.0;
		op->flip.horizontal = s[5] == 'h';
	} else if (strncmp(s, "normalize:", 10) == 0) {
		op->kind = TS_OP_NORMALIZE;
		op->norm.n_mean = 3;
		if (sscanf(s + 10, "%f,%f,%f:%f,%f,%f", &op->norm.mean[0], &op->norm.mean[1],
			   &op->norm.mean[2], &op->norm.std[0], &op->norm.std[1], &op->norm.std[2]) != 6)
			return -1;
	} else if (strncmp(s, "to:", 3) == 0) {
		op->kind = TS_OP_TO;
		const char *d = s + 3;
		op->to.dtype = strncmp(d, "uint8", 5) == 0     ? TS_DTYPE_U8
			    : strncmp(d, "float16", 7) == 0 ? TS_DTYPE_F16
			    : strncmp(d, "uint16", 6) == 0  ? TS_DTYPE_U16
							    : TS_DTYPE_F32;
		op->to.layout = strstr(d, "nchw") ? TS_LAYOUT_NCHW : TS_LAYOUT_NHWC;
	} else {
		return -1;
	}
	if (op->kind == TS_OP_RESIZE) { /* resize's defaults */
		op->resize.antialias = true;
		op->resize.interp = TS_INTERP_BILINEAR;
	}
	return 0;
}

/* The output size of the output stage for these parts: run the geometry
 * arithmetic the stage runs. */
static size_t output_bytes(const struct ts_op *parts, size_t n, int w, int h,
			   int c)
{
	enum ts_dtype dt = TS_DTYPE_U8;
	for (size_t i = 0; i < n; i++) {
		const struct ts_op *p = &parts[i];
		if (p->kind == TS_OP_RESIZE) {
			int ow, oh;
			ts_aug_resize_dims(w, h, &p->resize, &ow, &oh);
			w = ow;
			h = oh;
		} else if (p->kind == TS_OP_CENTER_CROP) {
			w = p->crop.size_w;
			h = p->crop.size_h;
		} else if (p->kind == TS_OP_NORMALIZE) {
			dt = TS_DTYPE_F32;
		} else if (p->kind == TS_OP_TO) {
			dt = p->to.dtype;
		}
	}
	return (size_t)w * h * c * ts_dtype_size(dt);
}

int main(int argc, char **argv)
{
	struct ts_image in = { 0 }, out = { 0 }, t1 = { 0 }, t2 = { 0 };
	struct ts_image *res = &out;
	int rc = 0, status = 1;
	void *slot = NULL;
	if (argc < 7)
		return usage();
	const char *op = argv[1], *outp = argv[6];
	int w = atoi(argv[3]), h = atoi(argv[4]), c = atoi(argv[5]);
	char **a = argv + 7;
	int na = argc - 7;
	rc = read_raw(argv[2], &in, w, h, c);
	if (rc < 0) {
		fprintf(stderr, "kernel-tool: %s: %s\n", argv[2], strerror(-rc));
		goto out;
	}
	if (strcmp(op, "resize") == 0 && na == 3) {
		rc = ts_aug_resize(&in, &out, atoi(a[0]), atoi(a[1]), interp_of(a[2]), true);
	} else if (strcmp(op, "crop") == 0 && na == 4) {
		rc = ts_aug_crop(&in, &out, atoi(a[0]), atoi(a[1]), atoi(a[2]),
				 atoi(a[3]));
	} else if (strcmp(op, "resized-crop") == 0 && (na == 6 || na == 7)) {
		rc = ts_aug_crop(&in, &t1, atoi(a[0]), atoi(a[1]), atoi(a[2]),
				 atoi(a[3]));
		if (rc == 0)
			rc = ts_aug_resize(&t1, &out, atoi(a[4]), atoi(a[5]),
					   na == 7 ? interp_of(a[6]) : TS_INTERP_BILINEAR, true);
	} else if (strcmp(op, "flip") == 0 && na == 1) {
		ts_aug_flip(&in, a[0][0] == 'h');
		res = &in;
	} else if (strcmp(op, "gray") == 0 && na == 1) {
		rc = ts_aug_grayscale(&in, &out, atoi(a[0]));
	} else if (strcmp(op, "brightness") == 0 && na == 1) {
		ts_aug_brightness(&in, strtof(a[0], NULL));
		res = &in;
	} else if (strcmp(op, "contrast") == 0 && na == 1) {
		ts_aug_contrast(&in, strtof(a[0], NULL));
		res = &in;
	} else if (strcmp(op, "saturation") == 0 && na == 1) {
		ts_aug_saturation(&in, strtof(a[0], NULL));
		res = &in;
	} else if (strcmp(op, "output") == 0 && na >= 1) {
		struct ts_op parts[8];
		struct ts_op o = { .kind = TS_OP_OUTPUT, .output.parts = parts };
		struct ts_error err = { 0 };
		if (na > 8)
			return usage();
		for (int i = 0; i < na; i++)
			if (parse_part(a[i], &parts[i], i + 1) < 0) {
				fprintf(stderr, "kernel-tool: bad part '%s'\n", a[i]);
				status = 2;
				goto out;
			}
		o.output.n_parts = (size_t)na;
		size_t n = output_bytes(parts, o.output.n_parts, w, h, c);
		slot = malloc(n);
		if (!slot)
			goto out;
		rc = ts_out_write(&o, &in, 1, 0, 0, &t1, &t2, slot, n, &err);
		if (rc < 0) {
			fprintf(stderr, "kernel-tool: %s\n", err.msg);
			goto out;
		}
		rc = write_raw(outp, slot, n);
		status = rc < 0 ? 1 : 0;
		goto out;
	} else {
		status = usage();
		goto out;
	}
	if (rc < 0) {
		fprintf(stderr, "kernel-tool: %s failed: %s\n", op, strerror(-rc));
		goto out;
	}
	printf("%d %d %d\n", res->width, res->height, res->channels);
	rc = write_raw(outp, res->data, ts_image_bytes(res));
	status = rc < 0 ? 1 : 0;
out:
	free(slot);
	ts_image_free(&in);
	ts_image_free(&out);
	ts_image_free(&t1);
	ts_image_free(&t2);
	ts_aug_scratch_free();
	return status;
}
