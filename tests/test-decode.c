/*
 * test-decode.c - the JPEG and PNG decoders (runtime/decode*.c).
 *
 * main() makes every test image once, in a temp dir, from pixels this file
 * generates: PNGs with ImageMagick `convert` (every color type and bit
 * depth), JPEGs with `cjpeg` (baseline 4:2:0/4:2:2/4:4:4, progressive,
 * gray, odd sizes) and `convert` (CMYK). References: the generated pixels
 * for PNG (lossless), `djpeg -ppm` (and `djpeg -scale n/8`) for JPEG, which
 * is byte for byte what PIL decodes.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "decode.h"
#include "util.h"

static char g_dir[256];

/* ------------------------------------------------------------------ */
/* helpers                                                             */

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	int n = snprintf(cmd, sizeof(cmd), "cd '%s' && ", g_dir);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd + n, sizeof(cmd) - (size_t)n, fmt, ap);
	va_end(ap);
	return system(cmd);
}

static uint8_t *slurp(const char *name, size_t *len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", g_dir, name);
	FILE *f = fopen(path, "rbe");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* A PNM image: 8-bit samples in d8, or 16-bit (host order) in d16. */
struct pnm {
	int w, h, c, depth;
	uint8_t *d8;
	uint16_t *d16;
};

static void pnm_free(struct pnm *p)
{
	free(p->d8);
	free(p->d16);
	memset(p, 0, sizeof(*p));
}

static unsigned pnm_at(const struct pnm *p, size_t i)
{
	return p->depth == 16 ? p->d16[i] : p->d8[i];
}

/* Read a binary P5/P6 file (what djpeg and convert write). */
static void read_pnm(const char *name, struct pnm *p)
{
	size_t len, pos = 2;
	uint8_t *b = slurp(name, &len);
	int v[3];
	ck_assert_msg(len > 2 && b[0] == 'P' && (b[1] == '5' || b[1] == '6'), "%s: not P5/P6", name);
	for (int k = 0; k < 3; k++) {
		while (pos < len && (b[pos] == ' ' || b[pos] == '\n' || b[pos] == '\r' ||
				     b[pos] == '\t' || b[pos] == '#')) {
			if (b[pos] == '#')
				while (pos < len && b[pos] != '\n')
					pos++;
			else
				pos++;
		}
		v[k] = 0;
		while (pos < len && b[pos] >= '0' && b[pos] <= '9')
			v[k] = v[k] * 10 + (b[pos++] - '0');
	}
	pos++; /* the single whitespace after maxval */
	p->w = v[0];
	p->h = v[1];
	p->c = b[1] == '5' ? 1 : 3;
	p->depth = v[2] > 255 ? 16 : 8;
	size_t n = (size_t)p->w * p->h * p->c;
	p->d8 = NULL;
	p->d16 = NULL;
	if (p->depth == 8) {
		ck_assert_uint_ge(len - pos, n);
		p->d8 = malloc(n);
		memcpy(p->d8, b + pos, n);
	} else {
		ck_assert_uint_ge(len - pos, 2 * n);
		p->d16 = malloc(2 * n);
		for (size_t i = 0; i < n; i++)
			p->d16[i] = (uint16_t)(b[pos + 2 * i] << 8 | b[pos + 2 * i + 1]);
	}
	free(b);
}

/* Write a PNM (P5/P6) or, with alpha, a PAM of generated samples. */
static void write_pnm(const char *name, int w, int h, int c, int depth, const uint16_t *s)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", g_dir, name);
	FILE *f = fopen(path, "wbe");
	if (!f) {
		perror(path);
		exit(1);
	}
	int maxval = depth == 16 ? 65535 : 255;
	if (c == 1 || c == 3)
		fprintf(f, "P%d\n%d %d\n%d\n", c == 1 ? 5 : 6, w, h, maxval);
	else
		fprintf(f, "P7\nWIDTH %d\nHEIGHT %d\nDEPTH %d\nMAXVAL %d\nTUPLTYPE %s\nENDHDR\n",
			w, h, c, maxval, c == 2 ? "GRAYSCALE_ALPHA" : "RGB_ALPHA");
	for (size_t i = 0; i < (size_t)w * h * c; i++) {
		if (depth == 16) {
			fputc(s[i] >> 8, f);
			fputc(s[i] & 0xff, f);
		} else {
			fputc(s[i], f);
		}
	}
	fclose(f);
}

static uint32_t g_seed = 12345;
static uint32_t rnd(void)
{
	g_seed = g_seed * 1103515245u + 12345u;
	return g_seed >> 8;
}

/* Pixels for an image: smooth (photo-like, for JPEG) or noisy (for PNG,
 * exercising every value). levels > 0 quantises 8-bit gray to that many
 * levels (1/2/4-bit PNG); alpha channels are never 0 so no encoder may
 * change the colour of an invisible pixel. */
static uint16_t *gen(int w, int h, int c, int depth, bool smooth, int levels)
{
	uint16_t *s = malloc(sizeof(uint16_t) * (size_t)w * h * c);
	int maxv = depth == 16 ? 65535 : 255;
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			for (int k = 0; k < c; k++) {
				size_t i = ((size_t)y * w + x) * c + k;
				long v;
				if (smooth) {
					v = lround(120 + 60 * sin(x / 9.0 + k) + 50 * cos(y / 6.0 - k) +
						   (double)(rnd() % 17) - 8);
					v = v < 0 ? 0 : v > 255 ? 255 : v;
				} else
					v = (long)(rnd() % (unsigned)(maxv + 1));
				if (smooth && depth == 16)
					v = v * 257 + (long)(rnd() % 257);
				if (levels > 0 && depth == 8)
					v = (v * levels / 256) * 255 / (levels - 1);
				if ((c == 2 || c == 4) && k == c - 1 && v == 0)
					v = 1;
				s[i] = (uint16_t)v;
			}
	return s;
}

/* Drop the alpha channel: the reference for a gray+alpha or RGBA PNG. */
static uint16_t *drop_alpha(const uint16_t *s, int w, int h, int c)
{
	uint16_t *o = malloc(sizeof(uint16_t) * (size_t)w * h * (c - 1));
	for (size_t i = 0, j = 0; i < (size_t)w * h * c; i++)
		if (i % c != (size_t)c - 1)
			o[j++] = s[i];
	return o;
}

static struct ts_decoder *g_dec;

static int decode_file(const char *name, const struct ts_decode_req *req,
		       struct ts_image *img, struct ts_decode_geom *geom, struct ts_error *err)
{
	size_t len;
	uint8_t *b = slurp(name, &len);
	int rc = ts_decoder_decode(g_dec, b, len, req, img, geom, err);
	free(b);
	return rc;
}

static unsigned img_at(const struct ts_image *img, int x, int y, int k)
{
	const uint8_t *row = img->data + (size_t)y * img->stride;
	if (img->dtype == TS_DTYPE_U16)
		return ((const uint16_t *)row)[x * img->channels + k];
	return row[x * img->channels + k];
}

/* Assert img equals ref's window at (x0, y0), channel-adapted: a 1-channel
 * ref compared with a 3-channel image is replicated. Returns nothing; the
 * first differing pixel is reported. */
static void assert_equal_window(const struct ts_image *img, const struct pnm *ref, int x0,
				int y0, const char *what)
{
	for (int y = 0; y < img->height; y++)
		for (int x = 0; x < img->width; x++)
			for (int k = 0; k < img->channels; k++) {
				int rk = ref->c == 1 ? 0 : k;
				unsigned want = pnm_at(ref, ((size_t)(y0 + y) * ref->w + x0 + x) * ref->c + rk);
				unsigned got = img_at(img, x, y, k);
				ck_assert_msg(got == want, "%s: pixel (%d,%d,%d) is %u, want %u", what,
					      x, y, k, got, want);
			}
}

static void setup(void)
{
	struct ts_error err;
	ck_assert_int_eq(ts_decoder_create(&g_dec, &err), 0);
}

static void teardown(void)
{
	ts_decoder_destroy(g_dec);
	g_dec = NULL;
}

/* ------------------------------------------------------------------ */
/* test data                                                           */

struct img_case {
	const char *file;   /* in g_dir */
	const char *ref;    /* PNM reference (whole image, full scale) */
	enum ts_format format;
	int w, h, channels, depth;
	bool progressive;
};

static const struct img_case jpeg_cases[] = {
	{ "base420.jpg", "base420.ppm", TS_FORMAT_JPEG, 203, 151, 3, 8, false },
	{ "base422.jpg", "base422.ppm", TS_FORMAT_JPEG, 203, 151, 3, 8, false },
	{ "base444.jpg", "base444.ppm", TS_FORMAT_JPEG, 203, 151, 3, 8, false },
	{ "prog.jpg", "prog.ppm", TS_FORMAT_JPEG, 203, 151, 3, 8, true },
	{ "gray.jpg", "gray.pgm", TS_FORMAT_JPEG, 203, 151, 1, 8, false },
	{ "one.jpg", "one.ppm", TS_FORMAT_JPEG, 1, 1, 3, 8, false },
	{ "odd.jpg", "odd.ppm", TS_FORMAT_JPEG, 17, 33, 3, 8, false },
	{ "oddprog.jpg", "oddprog.ppm", TS_FORMAT_JPEG, 17, 33, 3, 8, true },
	{ "oddgray.jpg", "oddgray.pgm", TS_FORMAT_JPEG, 17, 33, 1, 8, false },
};

static const struct img_case png_cases[] = {
	{ "g1.png", "g1.pgm", TS_FORMAT_PNG, 37, 23, 1, 1, false },
	{ "g2.png", "g2.pgm", TS_FORMAT_PNG, 37, 23, 1, 2, false },
	{ "g4.png", "g4.pgm", TS_FORMAT_PNG, 37, 23, 1, 4, false },
	{ "g8.png", "g8.pgm", TS_FORMAT_PNG, 37, 23, 1, 8, false },
	{ "g16.png", "g16.pgm", TS_FORMAT_PNG, 37, 23, 1, 16, false },
	{ "ga8.png", "ga8.pgm", TS_FORMAT_PNG, 37, 23, 2, 8, false },
	{ "ga16.png", "ga16.pgm", TS_FORMAT_PNG, 37, 23, 2, 16, false },
	{ "rgb8.png", "rgb8.ppm", TS_FORMAT_PNG, 37, 23, 3, 8, false },
	{ "rgb16.png", "rgb16.ppm", TS_FORMAT_PNG, 37, 23, 3, 16, false },
	{ "rgba8.png", "rgba8.ppm", TS_FORMAT_PNG, 37, 23, 4, 8, false },
	{ "rgba16.png", "rgba16.ppm", TS_FORMAT_PNG, 37, 23, 4, 16, false },
	{ "pal.png", "pal.ppm", TS_FORMAT_PNG, 37, 23, 3, 4, false },
	{ "palt.png", "palt.ppm", TS_FORMAT_PNG, 37, 23, 4, 8, false },
	{ "rgb8i.png", "rgb8.ppm", TS_FORMAT_PNG, 37, 23, 3, 8, true },
	{ "g16i.png", "g16.pgm", TS_FORMAT_PNG, 37, 23, 1, 16, true },
	{ "pali.png", "pal.ppm", TS_FORMAT_PNG, 37, 23, 3, 4, true },
	{ "one.png", "one.ppm", TS_FORMAT_PNG, 1, 1, 3, 8, false },
};

/* Make every file the tests use. Returns 0, or -1 when a tool failed. */
static int make_data(void)
{
	static const struct { const char *name; int w, h, c, depth; bool smooth; int levels; } src[] = {
		{ "big.ppm", 203, 151, 3, 8, true, 0 },
		{ "one.ppm", 1, 1, 3, 8, true, 0 },
		{ "odd.ppm", 17, 33, 3, 8, true, 0 },
		{ "g1.pgm", 37, 23, 1, 8, false, 2 },
		{ "g2.pgm", 37, 23, 1, 8, false, 4 },
		{ "g4.pgm", 37, 23, 1, 8, false, 16 },
		{ "g8.pgm", 37, 23, 1, 8, false, 0 },
		{ "g16.pgm", 37, 23, 1, 16, false, 0 },
		{ "ga8.pam", 37, 23, 2, 8, false, 0 },
		{ "ga16.pam", 37, 23, 2, 16, false, 0 },
		{ "rgb8.ppm", 37, 23, 3, 8, false, 0 },
		{ "rgb16.ppm", 37, 23, 3, 16, false, 0 },
		{ "rgba8.pam", 37, 23, 4, 8, false, 0 },
		{ "rgba16.pam", 37, 23, 4, 16, false, 0 },
	};
	for (size_t i = 0; i < TS_ARRAY_LEN(src); i++) {
		uint16_t *s = gen(src[i].w, src[i].h, src[i].c, src[i].depth, src[i].smooth,
				  src[i].levels);
		write_pnm(src[i].name, src[i].w, src[i].h, src[i].c, src[i].depth, s);
		if (src[i].c == 2 || src[i].c == 4) {
			/* the reference: ga8.pam -> ga8.pgm, rgba8.pam -> rgba8.ppm */
			char ref[64];
			snprintf(ref, sizeof(ref), "%.*s.%s", (int)(strlen(src[i].name) - 4),
				 src[i].name, src[i].c == 2 ? "pgm" : "ppm");
			uint16_t *o = drop_alpha(s, src[i].w, src[i].h, src[i].c);
			write_pnm(ref, src[i].w, src[i].h, src[i].c - 1, src[i].depth, o);
			free(o);
		}
		free(s);
	}
	/* A palette image (12 colours) and its RGBA twin with 3 alpha values. */
	uint16_t pal[12][3], *p3 = malloc(sizeof(uint16_t) * 37 * 23 * 3),
			     *p4 = malloc(sizeof(uint16_t) * 37 * 23 * 4);
	for (int k = 0; k < 12; k++)
		for (int c = 0; c < 3; c++)
			pal[k][c] = (uint16_t)(rnd() % 256);
	for (int i = 0; i < 37 * 23; i++) {
		int k = (int)(rnd() % 12);
		for (int c = 0; c < 3; c++)
			p3[i * 3 + c] = p4[i * 4 + c] = pal[k][c];
		p4[i * 4 + 3] = (uint16_t)(k % 3 == 0 ? 255 : k % 3 == 1 ? 128 : 40);
	}
	write_pnm("pal.ppm", 37, 23, 3, 8, p3);
	write_pnm("palt.pam", 37, 23, 4, 8, p4);
	free(p3);
	free(p4);

	const char *cmds[] = {
		"cjpeg -quality 90 big.ppm > base420.jpg",
		"cjpeg -quality 90 -sample 2x1 big.ppm > base422.jpg",
		"cjpeg -quality 90 -sample 1x1 big.ppm > base444.jpg",
		"cjpeg -quality 90 -progressive big.ppm > prog.jpg",
		"cjpeg -quality 90 -grayscale big.ppm > gray.jpg",
		"cjpeg -quality 90 one.ppm > one.jpg",
		"cjpeg -quality 75 odd.ppm > odd.jpg",
		"cjpeg -quality 75 -progressive odd.ppm > oddprog.jpg",
		"cjpeg -quality 75 -grayscale odd.ppm > oddgray.jpg",
		"convert big.ppm -colorspace CMYK -quality 95 cmyk.jpg",
		"for f in base420 base422 base444 prog one odd oddprog; do djpeg -ppm $f.jpg > $f.ppm || exit 1; done",
		"djpeg -pnm gray.jpg > gray.pgm && djpeg -pnm oddgray.jpg > oddgray.pgm",
		"for f in base420 base444 prog gray; do for n in 1 2 4; do djpeg -pnm -scale $n/8 $f.jpg > $f.s$n.pnm || exit 1; done; done",
		"convert cmyk.jpg -colorspace sRGB -depth 8 cmyk.ppm",
		"for b in 1 2 4 8 16; do convert g$b.pgm -define png:color-type=0 -define png:bit-depth=$b g$b.png || exit 1; done",
		"convert ga8.pam -define png:color-type=4 -define png:bit-depth=8 ga8.png",
		"convert ga16.pam -define png:color-type=4 -define png:bit-depth=16 ga16.png",
		"convert rgb8.ppm -define png:color-type=2 -define png:bit-depth=8 rgb8.png",
		"convert rgb16.ppm -define png:color-type=2 -define png:bit-depth=16 rgb16.png",
		"convert rgba8.pam -define png:color-type=6 -define png:bit-depth=8 rgba8.png",
		"convert rgba16.pam -define png:color-type=6 -define png:bit-depth=16 rgba16.png",
		"convert pal.ppm -define png:color-type=3 pal.png",
		"convert pal.ppm -define png:color-type=3 -interlace PNG pali.png",
		/* PNG8 quantises RGBA to a palette with tRNS; its colours are
		 * the reference, read back by ImageMagick without alpha. */
		"convert palt.pam PNG8:palt.png && convert palt.png -alpha off -depth 8 palt.ppm",
		"convert rgb8.ppm -define png:color-type=2 -define png:bit-depth=8 -interlace PNG rgb8i.png",
		"convert g16.pgm -define png:color-type=0 -define png:bit-depth=16 -interlace PNG g16i.png",
		"convert one.ppm -define png:color-type=2 -define png:bit-depth=8 one.png",
	};
	for (size_t i = 0; i < TS_ARRAY_LEN(cmds); i++)
		if (sh("%s", cmds[i]) != 0) {
			fprintf(stderr, "test-decode: failed: %s\n", cmds[i]);
			return -1;
		}
	return 0;
}

/* ------------------------------------------------------------------ */
/* sniff and geometry                                                  */

START_TEST(test_sniff)
{
	static const struct { const char *bytes; size_t len; enum ts_format want; } t[] = {
		{ "\xff\xd8\xff\xe0", 4, TS_FORMAT_JPEG },
		{ "\xff\xd8\xff", 3, TS_FORMAT_JPEG },
		{ "\xff\xd8", 2, TS_FORMAT_UNKNOWN },
		{ "\x89PNG\r\n\x1a\n", 8, TS_FORMAT_PNG },
		{ "\x89PNG\r\n\x1a", 7, TS_FORMAT_UNKNOWN },
		{ "GIF89a", 6, TS_FORMAT_UNKNOWN },
		{ "", 0, TS_FORMAT_UNKNOWN },
	};
	for (size_t i = 0; i < TS_ARRAY_LEN(t); i++)
		ck_assert_int_eq(ts_decoder_sniff((const uint8_t *)t[i].bytes, t[i].len), t[i].want);
}
END_TEST

START_TEST(test_geometry)
{
	static const struct {
		enum ts_format fmt;
		int w, h, rx, ry, rw, rh, tw, th;
		int n, out_w, out_h;
		double sx, sy, sw, sh;
	} t[] = {
		/* no target: full scale, exactly the ROI */
		{ TS_FORMAT_JPEG, 500, 375, 0, 0, 0, 0, 0, 0, 8, 500, 375, 0, 0, 500, 375 },
		{ TS_FORMAT_JPEG, 500, 375, 10, 20, 100, 50, 0, 0, 8, 100, 50, 0, 0, 100, 50 },
		/* 500x375 -> 224: 4/8 gives 250x188 >= 224x224? no (188 < 224): 8/8 */
		{ TS_FORMAT_JPEG, 500, 375, 0, 0, 0, 0, 224, 224, 8, 500, 375, 0, 0, 500, 375 },
		/* 500x500 -> 224x224: 4/8 */
		{ TS_FORMAT_JPEG, 500, 500, 0, 0, 0, 0, 224, 224, 4, 250, 250, 0, 0, 250, 250 },
		/* 1000x900 -> 100x100: 1/8 gives 125x113 */
		{ TS_FORMAT_JPEG, 1000, 900, 0, 0, 0, 0, 100, 100, 1, 125, 113, 0, 0, 125, 112.5 },
		/* ROI 3..203 x 5..155 -> 50x37: 2/8; x 0.75..50.75 -> cols 0..50,
		 * y 1.25..38.75 -> rows 1..38 */
		{ TS_FORMAT_JPEG, 400, 300, 3, 5, 200, 150, 50, 37, 2, 51, 38, 0.75, 0.25, 50, 37.5 },
		/* only the height constrains */
		{ TS_FORMAT_JPEG, 800, 800, 0, 0, 0, 0, 0, 100, 1, 100, 100, 0, 0, 100, 100 },
		/* exact fit is allowed: 400 * 4/8 == 200 */
		{ TS_FORMAT_JPEG, 400, 400, 0, 0, 0, 0, 200, 200, 4, 200, 200, 0, 0, 200, 200 },
		{ TS_FORMAT_JPEG, 400, 400, 0, 0, 0, 0, 201, 200, 8, 400, 400, 0, 0, 400, 400 },
		/* scaled image is ceil(203 / 2) = 102 wide; ROI to the edge */
		{ TS_FORMAT_JPEG, 203, 151, 101, 0, 102, 151, 20, 20, 2, 26, 38, 0.25, 0, 25.5, 37.75 },
		/* PNG never scales */
		{ TS_FORMAT_PNG, 1000, 900, 0, 0, 0, 0, 100, 100, 8, 1000, 900, 0, 0, 1000, 900 },
		{ TS_FORMAT_PNG, 1000, 900, 7, 9, 11, 13, 5, 5, 8, 11, 13, 0, 0, 11, 13 },
	};
	for (size_t i = 0; i < TS_ARRAY_LEN(t); i++) {
		struct ts_decode_info info = { t[i].fmt, t[i].w, t[i].h, 3, 8, false };
		struct ts_decode_req req = { TS_COLOR_RGB, 8, t[i].rx, t[i].ry, t[i].rw, t[i].rh,
					     t[i].tw, t[i].th, 0, false };
		struct ts_decode_geom g;
		struct ts_error err;
		ck_assert_int_eq(ts_decoder_geometry(&info, &req, &g, &err), 0);
		ck_assert_msg(g.scale_num == t[i].n && g.scale_denom == 8, "case %zu: scale %d/8",
			      i, g.scale_num);
		ck_assert_msg(g.out_w == t[i].out_w && g.out_h == t[i].out_h,
			      "case %zu: out %dx%d, want %dx%d", i, g.out_w, g.out_h,
			      t[i].out_w, t[i].out_h);
		ck_assert_double_eq_tol(g.src_x, t[i].sx, 1e-9);
		ck_assert_double_eq_tol(g.src_y, t[i].sy, 1e-9);
		ck_assert_double_eq_tol(g.src_w, t[i].sw, 1e-9);
		ck_assert_double_eq_tol(g.src_h, t[i].sh, 1e-9);
		/* never smaller than the target */
		ck_assert(g.src_w >= t[i].tw || t[i].fmt == TS_FORMAT_PNG);
		ck_assert(g.src_h >= t[i].th || t[i].fmt == TS_FORMAT_PNG);
	}
	/* A forced scale wins over the target (even one it would make
	 * smaller than the target); PNG never scales. */
	for (int f = 0; f < 2; f++) {
		struct ts_decode_info info = { f ? TS_FORMAT_PNG : TS_FORMAT_JPEG, 1001, 900, 3, 8,
					       false };
		struct ts_decode_req req = { TS_COLOR_RGB, 8, 8, 0, 993, 900, 900, 900, 4, false };
		struct ts_decode_geom g;
		struct ts_error err;
		ck_assert_int_eq(ts_decoder_geometry(&info, &req, &g, &err), 0);
		ck_assert_int_eq(g.scale_num, f ? 8 : 4);
		ck_assert_int_eq(g.out_w, f ? 993 : 497); /* 4 .. ceil(1001 / 2) */
		ck_assert_int_eq(g.out_h, f ? 900 : 450);
	}
}
END_TEST

START_TEST(test_bad_request)
{
	static const struct ts_decode_req bad[] = {
		{ TS_COLOR_RGB, 12, 0, 0, 0, 0, 0, 0, 0, false },
		{ TS_COLOR_RGB, 8, 150, 0, 100, 10, 0, 0, 0, false },   /* past the right edge */
		{ TS_COLOR_RGB, 8, -1, 0, 10, 10, 0, 0, 0, false },
		{ TS_COLOR_RGB, 8, 0, 100, 10, 52, 0, 0, 0, false },    /* past the bottom */
		{ TS_COLOR_RGB, 8, 0, 0, 0, 0, -5, 10, 0, false },
		{ (enum ts_color)7, 8, 0, 0, 0, 0, 0, 0, 0, false },
		{ TS_COLOR_RGB, 8, 0, 0, 0, 0, 0, 0, 3, false },       /* scale 3/8 */
	};
	const char *files[] = { "base420.jpg", "rgb8.png" };
	for (size_t f = 0; f < 2; f++)
		for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
			struct ts_image img = { 0 };
			struct ts_error err = { 0 };
			ck_assert_int_eq(decode_file(files[f], &bad[i], &img, NULL, &err), TS_E_ARG);
			ck_assert_int_eq(err.code, TS_E_ARG);
			ck_assert_str_ne(err.msg, "");
			ts_image_free(&img);
		}
}
END_TEST

/* ------------------------------------------------------------------ */
/* JPEG                                                                */

static void check_info(const struct img_case *c)
{
	size_t len;
	uint8_t *b = slurp(c->file, &len);
	struct ts_decode_info info;
	struct ts_error err = { 0 };
	ck_assert_msg(ts_decoder_info(g_dec, b, len, &info, &err) == 0, "%s: %s", c->file, err.msg);
	ck_assert_int_eq(info.format, c->format);
	ck_assert_int_eq(info.width, c->w);
	ck_assert_int_eq(info.height, c->h);
	ck_assert_msg(info.channels == c->channels, "%s: channels %d", c->file, info.channels);
	ck_assert_msg(info.depth == c->depth, "%s: depth %d", c->file, info.depth);
	ck_assert_int_eq(info.progressive, c->progressive);
	free(b);
}

/* Whole image at scale 1 against djpeg, byte for byte: in the source's
 * own channels, in RGB (gray replicated) and at 16 bits (x * 257). */
START_TEST(test_jpeg_whole)
{
	const struct img_case *c = &jpeg_cases[_i];
	struct pnm ref;
	struct ts_image img = { 0 };
	struct ts_error err = { 0 };
	struct ts_decode_geom g;

	check_info(c);
	read_pnm(c->ref, &ref);
	struct ts_decode_req req = { .color = ref.c == 1 ? TS_COLOR_GRAY : TS_COLOR_RGB, .depth = 8 };
	ck_assert_msg(decode_file(c->file, &req, &img, &g, &err) == 0, "%s: %s", c->file, err.msg);
	ck_assert_int_eq(img.width, c->w);
	ck_assert_int_eq(img.height, c->h);
	ck_assert_int_eq(img.channels, ref.c);
	ck_assert_int_eq(img.dtype, TS_DTYPE_U8);
	ck_assert_int_eq(g.scale_num, 8);
	assert_equal_window(&img, &ref, 0, 0, c->file);

	req.color = TS_COLOR_RGB;
	ck_assert_int_eq(decode_file(c->file, &req, &img, NULL, &err), 0);
	ck_assert_int_eq(img.channels, 3);
	assert_equal_window(&img, &ref, 0, 0, c->file);

	req.depth = 16;
	ck_assert_int_eq(decode_file(c->file, &req, &img, NULL, &err), 0);
	ck_assert_int_eq(img.dtype, TS_DTYPE_U16);
	for (int y = 0; y < img.height; y++)
		for (int x = 0; x < img.width; x++)
			for (int k = 0; k < 3; k++)
				ck_assert_uint_eq(img_at(&img, x, y, k),
						  257u * pnm_at(&ref, ((size_t)y * ref.w + x) * ref.c +
								       (ref.c == 1 ? 0 : k)));
	ts_image_free(&img);
	pnm_free(&ref);
}
END_TEST

/* RGB to gray is PIL's convert("L"), computed here independently in
 * floating point: L = round(0.299 R + 0.587 G + 0.114 B) with PIL's
 * 16-bit fixed-point weights. */
START_TEST(test_jpeg_gray_from_rgb)
{
	struct pnm ref;
	struct ts_image img = { 0 };
	struct ts_error err = { 0 };
	struct ts_decode_req req = { .color = TS_COLOR_GRAY, .depth = 8 };

	read_pnm("base420.ppm", &ref);
	ck_assert_int_eq(decode_file("base420.jpg", &req, &img, NULL, &err), 0);
	ck_assert_int_eq(img.channels, 1);
	for (int i = 0; i < ref.w * ref.h; i++) {
		double l = (ref.d8[3 * i] * 19595.0 + ref.d8[3 * i + 1] * 38470.0 +
			    ref.d8[3 * i + 2] * 7471.0) / 65536.0;
		unsigned want = (unsigned)(l + 0.5);
		ck_assert_uint_eq(img.data[i], want);
	}
	/* known PIL values: pure red, green, blue -> 76, 150, 29 */
	static const uint8_t rgb[] = { 255, 0, 0, 0, 255, 0, 0, 0, 255, 13, 200, 77 };
	uint8_t out[4];
	ts_decoder_convert_row(rgb, 3, 8, out, 1, 8, 4);
	ck_assert_uint_eq(out[0], 76);
	ck_assert_uint_eq(out[1], 150);
	ck_assert_uint_eq(out[2], 29);
	ck_assert_uint_eq(out[3], 130);
	ts_image_free(&img);
	pnm_free(&ref);
}
END_TEST

/* Adobe CMYK is converted the way PIL converts it; ImageMagick's own
 * CMYK -> sRGB rounds differently, by at most 2. */
START_TEST(test_jpeg_cmyk)
{
	struct pnm ref;
	struct ts_image img = { 0 };
	struct ts_error err = { 0 };
	struct ts_decode_req req = { .color = TS_COLOR_RGB, .depth = 8 };
	size_t len;
	uint8_t *b = slurp("cmyk.jpg", &len);
	struct ts_decode_info info;

	ck_assert_int_eq(ts_decoder_info(g_dec, b, len, &info, &err), 0);
	ck_assert_int_eq(info.channels, 4);
	free(b);
	read_pnm("cmyk.ppm", &ref);
	ck_assert_msg(decode_file("cmyk.jpg", &req, &img, NULL, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(img.width, ref.w);
	ck_assert_int_eq(img.height, ref.h);
	int worst = 0;
	for (int i = 0; i < ref.w * ref.h * 3; i++) {
		int d = abs((int)img.data[i] - (int)ref.d8[i]);
		worst = d > worst ? d : worst;
	}
	ck_assert_int_le(worst, 2);
	ts_image_free(&img);
	pnm_free(&ref);
}
END_TEST

/* Regions at scale 1 are exactly full decode then crop, for every
 * sampling, progressive and gray, aligned or not to the 8/16-pixel iMCU
 * grid, touching the edges or not (measured difference: 0). */
static const int rois[][4] = {
	{ 0, 0, 203, 151 }, { 1, 1, 50, 50 }, { 16, 16, 32, 32 }, { 15, 17, 33, 31 },
	{ 100, 60, 103, 91 }, { 7, 9, 1, 1 }, { 202, 150, 1, 1 }, { 31, 0, 1, 151 },
	{ 0, 33, 203, 1 }, { 40, 50, 80, 60 }, { 17, 31, 65, 97 }, { 0, 0, 5, 151 },
};

START_TEST(test_jpeg_roi)
{
	const char *files[][2] = { { "base420.jpg", "base420.ppm" }, { "base422.jpg", "base422.ppm" },
				   { "base444.jpg", "base444.ppm" }, { "prog.jpg", "prog.ppm" },
				   { "gray.jpg", "gray.pgm" } };
	for (size_t f = 0; f < TS_ARRAY_LEN(files); f++) {
		struct pnm ref;
		read_pnm(files[f][1], &ref);
		/* strided: rows written in place by libjpeg, read through the
		 * stride, then closed up by ts_image_compact */
		for (size_t r = 0; r < 2 * TS_ARRAY_LEN(rois); r++) {
			const bool strided = r >= TS_ARRAY_LEN(rois);
			const int *roi = rois[r % TS_ARRAY_LEN(rois)];
			struct ts_decode_req req = { TS_COLOR_RGB, 8, roi[0], roi[1], roi[2], roi[3],
						     0, 0, 0, strided };
			struct ts_image img = { 0 };
			struct ts_error err = { 0 };
			struct ts_decode_geom g;
			char what[128];
			ck_assert_int_eq(decode_file(files[f][0], &req, &img, &g, &err), 0);
			ck_assert_int_eq(img.width, roi[2]);
			ck_assert_int_eq(img.height, roi[3]);
			ck_assert_int_eq(g.scale_num, 8);
			const size_t row = (size_t)img.width * (size_t)img.channels;
			ck_assert(strided ? img.stride >= row : img.stride == row);
			snprintf(what, sizeof(what), "%s roi %dx%d+%d+%d%s", files[f][0], roi[2],
				 roi[3], roi[0], roi[1], strided ? " strided" : "");
			assert_equal_window(&img, &ref, roi[0], roi[1], what);
			ts_image_compact(&img);
			ck_assert_uint_eq(img.stride, row);
			assert_equal_window(&img, &ref, roi[0], roi[1], what);
			ts_image_free(&img);
		}
		pnm_free(&ref);
	}
}
END_TEST

/*
 * Regions with a target: the DCT-scaled region equals djpeg -scale n/8 of
 * the whole file cropped at (floor(x * n / 8), floor(y * n / 8)), exactly.
 * Against full decode + box average (the ideal downscale) the difference
 * is the DCT scaling's own: on these photo-like images measured mean
 * 0.25..0.7 and max 4 (4:2:0 chroma); asserted mean <= 1 and max <= 6.
 * (Hard edges ring more: a 255 -> 0 step measured a max of 79.)
 */
START_TEST(test_jpeg_scaled)
{
	static const int cases[][6] = {
		{ 0, 0, 203, 151, 100, 75 }, { 0, 0, 203, 151, 26, 19 }, { 10, 20, 120, 100, 30, 25 },
		{ 17, 31, 65, 97, 20, 20 }, { 40, 50, 80, 60, 30, 30 }, { 3, 5, 150, 120, 56, 56 },
		{ 101, 0, 102, 151, 20, 20 }, { 0, 0, 203, 151, 203, 151 },
	};
	const char *files[][2] = { { "base420", "base420.ppm" }, { "base444", "base444.ppm" },
				   { "prog", "prog.ppm" }, { "gray", "gray.pgm" } };
	for (size_t f = 0; f < TS_ARRAY_LEN(files); f++) {
		struct pnm full;
		read_pnm(files[f][1], &full);
		for (size_t i = 0; i < TS_ARRAY_LEN(cases); i++) {
			const int *c = cases[i];
			struct ts_decode_req req = { full.c == 1 ? TS_COLOR_GRAY : TS_COLOR_RGB, 8,
						     c[0], c[1], c[2], c[3], c[4], c[5], 0, false };
			struct ts_image img = { 0 };
			struct ts_error err = { 0 };
			struct ts_decode_geom g;
			char name[64], what[128];
			snprintf(name, sizeof(name), "%s.jpg", files[f][0]);
			ck_assert_int_eq(decode_file(name, &req, &img, &g, &err), 0);
			int n = g.scale_num;
			ck_assert_int_eq(img.width, g.out_w);
			ck_assert_int_eq(img.height, g.out_h);
			ck_assert(g.src_w >= c[4] && g.src_h >= c[5]);
			if (n == 8) {
				ts_image_free(&img);
				continue;
			}
			struct pnm sref;
			snprintf(name, sizeof(name), "%s.s%d.pnm", files[f][0], n);
			read_pnm(name, &sref);
			int x0 = c[0] * n / 8, y0 = c[1] * n / 8;
			ck_assert_int_le(x0 + img.width, sref.w);
			ck_assert_int_le(y0 + img.height, sref.h);
			snprintf(what, sizeof(what), "%s scaled %d/8 roi %d", files[f][0], n, (int)i);
			assert_equal_window(&img, &sref, x0, y0, what);

			/* against the box-averaged full decode */
			int k = 8 / n;
			double sum = 0;
			int worst = 0;
			long cnt = 0;
			for (int y = 0; y < img.height; y++)
				for (int x = 0; x < img.width; x++) {
					int fx = (x0 + x) * k, fy = (y0 + y) * k;
					if (fx + k > full.w || fy + k > full.h)
						continue; /* partial block at the edge */
					for (int ch = 0; ch < img.channels; ch++) {
						long acc = 0;
						for (int dy = 0; dy < k; dy++)
							for (int dx = 0; dx < k; dx++)
								acc += full.d8[((size_t)(fy + dy) * full.w + fx + dx) * full.c + ch];
						double d = fabs((double)acc / (k * k) - img_at(&img, x, y, ch));
						sum += d;
						cnt++;
						worst = d > worst ? (int)d : worst;
					}
				}
			ck_assert_int_gt(cnt, 0);
			if (getenv("TS_DECODE_VERBOSE"))
				fprintf(stderr, "%s: vs box: mean %.2f max %d\n", what, sum / cnt, worst);
			ck_assert_msg(sum / cnt <= 1.0, "%s: mean diff %.2f", what, sum / cnt);
			ck_assert_msg(worst <= 6, "%s: max diff %d", what, worst);
			pnm_free(&sref);
			ts_image_free(&img);
		}
		pnm_free(&full);
	}
}
END_TEST

/* ------------------------------------------------------------------ */
/* PNG                                                                 */

/* Every colour type and bit depth, interlaced or not, decoded in the
 * reference's own channels and depth (exact), and in the other depth:
 * 8-bit sources x * 257, 16-bit sources round(x / 257). */
START_TEST(test_png_whole)
{
	const struct img_case *c = &png_cases[_i];
	struct pnm ref;
	struct ts_image img = { 0 };
	struct ts_error err = { 0 };

	check_info(c);
	read_pnm(c->ref, &ref);
	struct ts_decode_req req = { .color = ref.c == 1 ? TS_COLOR_GRAY : TS_COLOR_RGB,
				     .depth = ref.depth };
	ck_assert_msg(decode_file(c->file, &req, &img, NULL, &err) == 0, "%s: %s", c->file, err.msg);
	ck_assert_int_eq(img.width, c->w);
	ck_assert_int_eq(img.height, c->h);
	ck_assert_int_eq(img.dtype, ref.depth == 16 ? TS_DTYPE_U16 : TS_DTYPE_U8);
	assert_equal_window(&img, &ref, 0, 0, c->file);

	req.depth = ref.depth == 16 ? 8 : 16;
	req.color = TS_COLOR_RGB;
	ck_assert_int_eq(decode_file(c->file, &req, &img, NULL, &err), 0);
	for (int y = 0; y < img.height; y++)
		for (int x = 0; x < img.width; x++)
			for (int k = 0; k < 3; k++) {
				unsigned v = pnm_at(&ref, ((size_t)y * ref.w + x) * ref.c +
							  (ref.c == 1 ? 0 : k));
				unsigned want = ref.depth == 16 ? (v * 255u + 32895u) >> 16 : v * 257u;
				ck_assert_uint_eq(img_at(&img, x, y, k), want);
			}
	ts_image_free(&img);
	pnm_free(&ref);
}
END_TEST

START_TEST(test_png_roi)
{
	const char *files[][2] = { { "rgb8.png", "rgb8.ppm" }, { "rgb8i.png", "rgb8.ppm" },
				   { "g16.png", "g16.pgm" }, { "g16i.png", "g16.pgm" },
				   { "pal.png", "pal.ppm" } };
	static const int r[][6] = { { 0, 0, 37, 23, 0, 0 }, { 5, 3, 10, 7, 0, 0 },
				    { 36, 22, 1, 1, 0, 0 }, { 0, 10, 37, 13, 4, 4 },
				    { 12, 0, 3, 23, 1, 1 } };
	for (size_t f = 0; f < TS_ARRAY_LEN(files); f++) {
		struct pnm ref;
		read_pnm(files[f][1], &ref);
		for (size_t i = 0; i < TS_ARRAY_LEN(r); i++) {
			struct ts_decode_req req = { ref.c == 1 ? TS_COLOR_GRAY : TS_COLOR_RGB,
						     ref.depth, r[i][0], r[i][1], r[i][2], r[i][3],
						     r[i][4], r[i][5], 0, false };
			struct ts_image img = { 0 };
			struct ts_error err = { 0 };
			struct ts_decode_geom g;
			ck_assert_int_eq(decode_file(files[f][0], &req, &img, &g, &err), 0);
			ck_assert_int_eq(g.scale_num, 8); /* PNG never scales */
			ck_assert_int_eq(img.width, r[i][2]);
			ck_assert_int_eq(img.height, r[i][3]);
			assert_equal_window(&img, &ref, r[i][0], r[i][1], files[f][0]);
			ts_image_free(&img);
		}
		pnm_free(&ref);
	}
}
END_TEST

/* 16-bit RGB to gray uses the same PIL weights at 16 bits. */
START_TEST(test_png_gray16_from_rgb)
{
	struct pnm ref;
	struct ts_image img = { 0 };
	struct ts_error err = { 0 };
	struct ts_decode_req req = { .color = TS_COLOR_GRAY, .depth = 16 };

	read_pnm("rgb16.ppm", &ref);
	ck_assert_int_eq(decode_file("rgb16.png", &req, &img, NULL, &err), 0);
	ck_assert_int_eq(img.channels, 1);
	const uint16_t *o = (const uint16_t *)img.data;
	for (int i = 0; i < ref.w * ref.h; i++) {
		double l = (ref.d16[3 * i] * 19595.0 + ref.d16[3 * i + 1] * 38470.0 +
			    ref.d16[3 * i + 2] * 7471.0) / 65536.0;
		ck_assert_uint_eq(o[i], (unsigned)(l + 0.5));
	}
	ts_image_free(&img);
	pnm_free(&ref);
}
END_TEST

/* ------------------------------------------------------------------ */
/* errors                                                              */

static void expect_decode_error(const uint8_t *b, size_t len, const char *needle, const char *what)
{
	struct ts_image img = { 0 };
	struct ts_error err = { 0 };
	struct ts_decode_req req = { .color = TS_COLOR_RGB, .depth = 8 };
	int rc = ts_decoder_decode(g_dec, b, len, &req, &img, NULL, &err);
	ck_assert_msg(rc == TS_E_DECODE, "%s: rc %d (%s)", what, rc, err.msg);
	ck_assert_int_eq(err.code, TS_E_DECODE);
	ck_assert_msg(err.msg[0] != '\0', "%s: empty message", what);
	if (needle)
		ck_assert_msg(strstr(err.msg, needle) != NULL, "%s: message '%s' lacks '%s'", what,
			      err.msg, needle);
	ts_image_free(&img);
}

/* Files cut at several points: every cut before the end of the image data
 * is an error that says "truncated" (JPEG) or "premature end" (PNG), for
 * both ts_decoder_decode and, where the header is cut, ts_decoder_info. */
START_TEST(test_truncated)
{
	static const struct { const char *file; const char *needle; } t[] = {
		{ "base420.jpg", "truncated JPEG" }, { "prog.jpg", "truncated JPEG" },
		{ "gray.jpg", "truncated JPEG" },    { "rgb8.png", "premature end" },
		{ "rgb8i.png", "premature end" },    { "g16.png", "premature end" },
		{ "palt.png", "premature end" },
	};
	/* PNG stops reading after its last row: a cut in the final IDAT
	 * checksum or IEND goes unnoticed, so PNG cuts stop at 80%. */
	static const double cuts[] = { 0.05, 0.2, 0.4, 0.6, 0.8, 0.95 };
	static const size_t heads[] = { 3, 8, 20, 40 };
	for (size_t i = 0; i < TS_ARRAY_LEN(t); i++) {
		size_t len;
		uint8_t *b = slurp(t[i].file, &len);
		char what[96];
		for (size_t k = 0; k < TS_ARRAY_LEN(cuts); k++) {
			size_t n = (size_t)(len * cuts[k]);
			if (cuts[k] > 0.8 && strstr(t[i].file, ".png"))
				continue;
			snprintf(what, sizeof(what), "%s cut at %zu of %zu", t[i].file, n, len);
			expect_decode_error(b, n, t[i].needle, what);
		}
		for (size_t k = 0; k < TS_ARRAY_LEN(heads); k++) {
			struct ts_decode_info info = { .width = -7 };
			struct ts_error err = { 0 };
			snprintf(what, sizeof(what), "%s cut at %zu", t[i].file, heads[k]);
			expect_decode_error(b, heads[k], NULL, what);
			ck_assert_int_eq(ts_decoder_info(g_dec, b, heads[k], &info, &err), TS_E_DECODE);
			ck_assert_int_eq(info.width, -7); /* untouched on failure */
		}
		free(b);
	}
}
END_TEST

START_TEST(test_garbage)
{
	static const struct { const char *bytes; size_t len; const char *needle; } t[] = {
		{ "", 0, "empty" },
		{ "G", 1, "not a JPEG or PNG file (starts with 47)" },
		{ "GIF89a\x01\x00\x01\x00", 10, "not a JPEG or PNG file (starts with 47 49 46 38 39 61 01 00)" },
		{ "\xff\xd8\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00", 12, "JPEG" },
		{ "\xff\xd8\xff\xd9", 4, "JPEG" },
		{ "\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x00\x00\x00\x00\x00", 24, "PNG" },
		{ "\x89PNG\r\n\x1a\nGARBAGEGARBAGEGARBAGE", 29, "PNG" },
	};
	for (size_t i = 0; i < TS_ARRAY_LEN(t); i++)
		expect_decode_error((const uint8_t *)t[i].bytes, t[i].len, t[i].needle, t[i].bytes);

	/* random bytes behind each signature */
	uint8_t buf[4096];
	for (int r = 0; r < 20; r++) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (uint8_t)rnd();
		memcpy(buf, r % 2 ? "\xff\xd8\xff" : "\x89PNG\r\n\x1a\n", r % 2 ? 3 : 8);
		expect_decode_error(buf, sizeof(buf), NULL, "random bytes");
	}
}
END_TEST

/* Flipped bytes in valid files: each decode either succeeds or fails with
 * TS_E_DECODE (never crashes, never another code), and the same decoder
 * still decodes a good file exactly afterwards. */
START_TEST(test_corrupt_then_reuse)
{
	const char *files[] = { "base420.jpg", "prog.jpg", "rgb8.png", "palt.png", "rgb8i.png" };
	struct ts_image img = { 0 };
	struct ts_decode_req req = { .color = TS_COLOR_RGB, .depth = 8 };
	for (size_t f = 0; f < TS_ARRAY_LEN(files); f++) {
		size_t len;
		uint8_t *orig = slurp(files[f], &len);
		uint8_t *b = malloc(len);
		for (int r = 0; r < 60; r++) {
			struct ts_error err = { 0 };
			memcpy(b, orig, len);
			for (int k = 0; k < 1 + r % 4; k++)
				b[rnd() % len] ^= (uint8_t)(1u << (rnd() % 8));
			int rc = ts_decoder_decode(g_dec, b, len, &req, &img, NULL, &err);
			ck_assert_msg(rc == 0 || rc == TS_E_DECODE, "%s: rc %d", files[f], rc);
			if (rc)
				ck_assert_str_ne(err.msg, "");
		}
		free(b);
		free(orig);
	}
	struct pnm ref;
	struct ts_error err = { 0 };
	read_pnm("base420.ppm", &ref);
	ck_assert_int_eq(decode_file("base420.jpg", &req, &img, NULL, &err), 0);
	assert_equal_window(&img, &ref, 0, 0, "base420.jpg after errors");
	pnm_free(&ref);
	read_pnm("rgb8.ppm", &ref);
	ck_assert_int_eq(decode_file("rgb8.png", &req, &img, NULL, &err), 0);
	assert_equal_window(&img, &ref, 0, 0, "rgb8.png after errors");
	pnm_free(&ref);
	ts_image_free(&img);
}
END_TEST

static uint32_t crc32_png(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
	}
	return c ^ 0xffffffffu;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Headers that claim huge images are refused before any allocation. */
START_TEST(test_bombs)
{
	/* PNG: rewrite rgb8.png's IHDR (with a valid CRC) */
	static const uint32_t dims[][2] = { { 70000, 10 }, { 20000, 20000 }, { 65535, 65535 } };
	size_t len;
	uint8_t *b = slurp("rgb8.png", &len);
	for (size_t i = 0; i < TS_ARRAY_LEN(dims); i++) {
		put32(b + 16, dims[i][0]);
		put32(b + 20, dims[i][1]);
		put32(b + 29, crc32_png(b + 12, 17));
		expect_decode_error(b, len, "too large", "PNG bomb");
	}
	free(b);

	/* JPEG: rewrite the SOF0 frame size (max 65535 x 65535) */
	b = slurp("base420.jpg", &len);
	size_t sof = 0;
	for (size_t i = 2; i + 9 < len; i++)
		if (b[i] == 0xff && b[i + 1] == 0xc0) {
			sof = i;
			break;
		}
	ck_assert_uint_gt(sof, 0);
	b[sof + 5] = 0xfd; /* height 65000 */
	b[sof + 6] = 0xe8;
	b[sof + 7] = 0xfd; /* width 65000 */
	b[sof + 8] = 0xe8;
	expect_decode_error(b, len, "too large", "JPEG bomb");
	free(b);
}
END_TEST

/* One decoder across many files of both formats, buffers reused. */
START_TEST(test_reuse)
{
	struct ts_image img = { 0 };
	for (int round = 0; round < 3; round++)
		for (size_t i = 0; i < TS_ARRAY_LEN(png_cases) + TS_ARRAY_LEN(jpeg_cases); i++) {
			const struct img_case *c = i < TS_ARRAY_LEN(png_cases)
				? &png_cases[i] : &jpeg_cases[i - TS_ARRAY_LEN(png_cases)];
			struct pnm ref;
			struct ts_error err = { 0 };
			read_pnm(c->ref, &ref);
			struct ts_decode_req req = { ref.c == 1 ? TS_COLOR_GRAY : TS_COLOR_RGB,
						     ref.depth, 0, 0, 0, 0, 0, 0, 0, false };
			ck_assert_int_eq(decode_file(c->file, &req, &img, NULL, &err), 0);
			assert_equal_window(&img, &ref, 0, 0, c->file);
			pnm_free(&ref);
		}
	ts_image_free(&img);
	ts_decoder_destroy(NULL); /* no-op */
}
END_TEST

static Suite *decode_suite(void)
{
	Suite *s = suite_create("decode");
	TCase *tc;

	tc = tcase_create("geometry");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_sniff);
	tcase_add_test(tc, test_geometry);
	tcase_add_test(tc, test_bad_request);
	suite_add_tcase(s, tc);

	tc = tcase_create("jpeg");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_jpeg_whole, 0, (int)TS_ARRAY_LEN(jpeg_cases));
	tcase_add_test(tc, test_jpeg_gray_from_rgb);
	tcase_add_test(tc, test_jpeg_cmyk);
	suite_add_tcase(s, tc);

	tc = tcase_create("png");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_png_whole, 0, (int)TS_ARRAY_LEN(png_cases));
	tcase_add_test(tc, test_png_gray16_from_rgb);
	suite_add_tcase(s, tc);

	tc = tcase_create("roi");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_jpeg_roi);
	tcase_add_test(tc, test_jpeg_scaled);
	tcase_add_test(tc, test_png_roi);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_garbage);
	tcase_add_test(tc, test_corrupt_then_reuse);
	tcase_add_test(tc, test_bombs);
	tcase_add_test(tc, test_reuse);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(g_dir, sizeof(g_dir), "%s/ts-decode-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(g_dir)) {
		perror("mkdtemp");
		return 1;
	}
	if (sh("command -v convert >/dev/null && command -v cjpeg >/dev/null && "
	       "command -v djpeg >/dev/null") != 0) {
		fprintf(stderr, "test-decode: needs ImageMagick convert, cjpeg and djpeg: skipped\n");
		sh("cd / && rm -rf '%s'", g_dir);
		return 77;
	}
	if (make_data() < 0) {
		sh("cd / && rm -rf '%s'", g_dir);
		return 1;
	}
	SRunner *sr = srunner_create(decode_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	sh("cd / && rm -rf '%s'", g_dir);
	return failed ? 1 : 0;
}
