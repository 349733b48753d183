/*
 * decode-tool - decode one image with tsrun's decoders and write it as a
 * binary PPM (RGB) or PGM (gray), 8 or 16 bits (16: big-endian, maxval
 * 65535), so script tests can compare with PIL/torchvision or djpeg.
 *
 *   decode-tool [--gray] [--depth 16] [--info] FILE [roi X Y W H TW TH] OUT
 *
 * On success it prints the geometry on stdout:
 *   scale N/8 out WxH src X Y W H
 * With --info it prints the header ("jpeg 640x480 channels 3 depth 8
 * progressive 0") and writes nothing. Errors go to stderr, exit status 1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "decode.h"

static int read_file(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "rbe");
	if (!f)
		return -errno;
	size_t cap = 1 << 16, n = 0;
	uint8_t *b = malloc(cap);
	size_t r;
	while (b && (r = fread(b + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			uint8_t *nb = realloc(b, cap *= 2);
			if (!nb) {
				free(b);
				b = NULL;
				break;
			}
			b = nb;
		}
	}
	fclose(f);
	if (!b)
		return -ENOMEM;
	*buf = b;
	*len = n;
	return 0;
}

static int write_pnm(const char *path, const struct ts_image *img)
{
	FILE *f = fopen(path, "wbe");
	if (!f)
		return -errno;
	int maxval = img->dtype == TS_DTYPE_U16 ? 65535 : 255;
	fprintf(f, "P%d\n%d %d\n%d\n", img->channels == 1 ? 5 : 6, img->width, img->height,
		maxval);
	for (int y = 0; y < img->height; y++) {
		const uint8_t *row = img->data + (size_t)y * img->stride;
		if (img->dtype == TS_DTYPE_U16) {
			const uint16_t *s = (const uint16_t *)row;
			for (int i = 0; i < img->width * img->channels; i++) {
				uint8_t be[2] = { (uint8_t)(s[i] >> 8), (uint8_t)s[i] };
				fwrite(be, 1, 2, f);
			}
		} else {
			fwrite(row, 1, (size_t)img->width * (size_t)img->channels, f);
		}
	}
	return fclose(f) == 0 ? 0 : -errno;
}

int main(int argc, char **argv)
{
	struct ts_decode_req req = { .color = TS_COLOR_RGB, .depth = 8 };
	struct ts_decoder *d = NULL;
	struct ts_image img = { 0 };
	struct ts_error err = { 0 };
	struct ts_decode_geom g;
	uint8_t *buf = NULL;
	size_t len = 0;
	int info_only = 0, i = 1, rc = 1;

	for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
		if (!strcmp(argv[i], "--gray"))
			req.color = TS_COLOR_GRAY;
		else if (!strcmp(argv[i], "--depth") && i + 1 < argc)
			req.depth = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--info"))
			info_only = 1;
		else
			break;
	}
	int rest = argc - i;
	if (!(info_only && rest == 1) && rest != 2 && rest != 9) {
		fprintf(stderr, "usage: decode-tool [--gray] [--depth 16] [--info] FILE "
				"[roi X Y W H TW TH] OUT\n");
		return 2;
	}
	const char *in = argv[i];
	if (rest == 9) {
		if (strcmp(argv[i + 1], "roi")) {
			fprintf(stderr, "decode-tool: expected 'roi', got '%s'\n", argv[i + 1]);
			return 2;
		}
		req.roi_x = atoi(argv[i + 2]);
		req.roi_y = atoi(argv[i + 3]);
		req.roi_w = atoi(argv[i + 4]);
		req.roi_h = atoi(argv[i + 5]);
		req.target_w = atoi(argv[i + 6]);
		req.target_h = atoi(argv[i + 7]);
	}
	const char *outp = argv[argc - 1];

	int r = read_file(in, &buf, &len);
	if (r < 0) {
		fprintf(stderr, "decode-tool: %s: %s\n", in, strerror(-r));
		goto out;
	}
	if (ts_decoder_create(&d, &err) < 0)
		goto fail;
	if (info_only) {
		struct ts_decode_info info;
		if (ts_decoder_info(d, buf, len, &info, &err) < 0)
			goto fail;
		printf("%s %dx%d channels %d depth %d progressive %d\n",
		       info.format == TS_FORMAT_JPEG ? "jpeg" : "png", info.width, info.height,
		       info.channels, info.depth, (int)info.progressive);
		rc = 0;
		goto out;
	}
	if (ts_decoder_decode(d, buf, len, &req, &img, &g, &err) < 0)
		goto fail;
	printf("scale %d/%d out %dx%d src %.6g %.6g %.6g %.6g\n", g.scale_num, g.scale_denom,
	       g.out_w, g.out_h, g.src_x, g.src_y, g.src_w, g.src_h);
	r = write_pnm(outp, &img);
	if (r < 0) {
		fprintf(stderr, "decode-tool: %s: %s\n", outp, strerror(-r));
		goto out;
	}
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "decode-tool: %s: %s\n", in, err.msg);
out:
	ts_image_free(&img);
	ts_decoder_destroy(d);
	free(buf);
	return rc;
}
