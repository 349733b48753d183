/* fuzz-decode.c - libFuzzer target: any bytes through our JPEG and PNG
 * paths (runtime/decode*.c), so what is fuzzed is our use of libjpeg and
 * libpng and our error handling around them (setjmp/longjmp, truncated
 * data, bombs), not the libraries alone. Each input is sniffed, its header
 * read, then decoded with a few requests: the whole image in RGB, a
 * region in gray, a region with a small target (DCT scaling for JPEG) at
 * 16 bits. One decoder serves every input, as a worker's does, so state
 * left behind by a failed decode is exercised too. A decode that succeeds
 * must give the shape its geometry promised. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant is a finding: stop here so libFuzzer keeps the input. */
#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

/* Above this many pixels only the scaled and small-region requests run:
 * whole decodes of huge (valid) headers only cost time and memory. */
#define FUZZ_MAX_PIXELS (1LL << 22)

static struct ts_decoder *dec;
static struct ts_image img;

static void decode_one(const uint8_t *data, size_t size,
		       const struct ts_decode_info *info,
		       const struct ts_decode_req *req)
{
	struct ts_decode_geom want, got;
	struct ts_error e = { 0 };
	int rc_geom = ts_decoder_geometry(info, req, &want, &e);

	memset(&e, 0, sizeof(e));
	int rc = ts_decoder_decode(dec, data, size, req, &img, &got, &e);
	if (rc == 0) {
		CHECK(rc_geom == 0);
		CHECK(memcmp(&want, &got, sizeof(want)) == 0);
		CHECK(img.width == got.out_w && img.height == got.out_h);
		CHECK(img.channels == (req->color == TS_COLOR_GRAY ? 1 : 3));
		CHECK(img.dtype == (req->depth == 16 ? TS_DTYPE_U16 : TS_DTYPE_U8));
		CHECK(img.width > 0 && img.height > 0);
	} else {
		CHECK(rc == TS_E_DECODE || rc == TS_E_ARG || rc == TS_E_NOMEM);
		CHECK(e.code == rc && e.msg[0]);
		/* An invalid request is refused by geometry as well. */
		if (rc == TS_E_ARG)
			CHECK(rc_geom == TS_E_ARG);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ts_decode_info info;
	struct ts_error e = { 0 };

	if (!dec && ts_decoder_create(&dec, &e) < 0)
		__builtin_trap();
	enum ts_format fmt = ts_decoder_sniff(data, size);
	int rc = ts_decoder_info(dec, data, size, &info, &e);
	if (rc < 0) {
		CHECK(rc == TS_E_DECODE && e.msg[0]);
		/* A file whose header is refused still goes through decode
		 * once: it must fail the same way, not crash. */
		struct ts_decode_req req = { 0 };
		memset(&e, 0, sizeof(e));
		CHECK(ts_decoder_decode(dec, data, size, &req, &img, NULL, &e) < 0);
		return 0;
	}
	CHECK(fmt != TS_FORMAT_UNKNOWN && info.format == fmt);
	CHECK(info.width > 0 && info.height > 0);
	CHECK(info.width <= TS_DECODE_MAX_DIM && info.height <= TS_DECODE_MAX_DIM);

	long long pixels = (long long)info.width * info.height;
	int w = info.width, h = info.height;
	/* The middle quarter, never empty. */
	struct ts_decode_req roi = {
		.color = TS_COLOR_GRAY, .depth = 8,
		.roi_x = w / 4, .roi_y = h / 4,
		.roi_w = w / 2 > 0 ? w / 2 : 1, .roi_h = h / 2 > 0 ? h / 2 : 1,
	};
	/* A region scaled down to an eighth (or less) of its size, 16 bits. */
	struct ts_decode_req scaled = {
		.color = TS_COLOR_RGB, .depth = 16,
		.roi_x = w / 8, .roi_y = h / 8,
		.roi_w = w - w / 8, .roi_h = h - h / 8,
		.target_w = (w - w / 8) / 8 > 0 ? (w - w / 8) / 8 : 1,
		.target_h = (h - h / 8) / 8 > 0 ? (h - h / 8) / 8 : 1,
	};
	if (pixels <= FUZZ_MAX_PIXELS) {
		struct ts_decode_req whole = { 0 };
		decode_one(data, size, &info, &whole);
		decode_one(data, size, &info, &roi);
	}
	if (pixels <= FUZZ_MAX_PIXELS * 16)
		decode_one(data, size, &info, &scaled);
	/* An invalid request (ROI past the edge) must be refused: TS_E_ARG,
	 * or TS_E_DECODE when the data is refused first (a header that reads
	 * but announces a decompression bomb, crash-bomb-bad-roi.jpg). */
	struct ts_decode_req bad = { .roi_x = w, .roi_y = 0, .roi_w = 1, .roi_h = 1 };
	memset(&e, 0, sizeof(e));
	rc = ts_decoder_decode(dec, data, size, &bad, &img, NULL, &e);
	CHECK(rc == TS_E_ARG || rc == TS_E_DECODE);
	return 0;
}
