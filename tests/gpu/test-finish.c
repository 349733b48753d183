/*
 * test-finish.c - the finishing kernel against the CPU reference, bit for
 * bit: float32 and float16, with and without normalize, 1, 3 and 4
 * channels, the vector path (pixels % 4 == 0) and the scalar one; the
 * mirrored launch (the device ring's mirror slots, a second destination
 * from the same pass, at an odd sample offset: 8-byte aligned for half).
 */
#include <cuda_runtime_api.h>
#include <string.h>

#include "gpu-common.h"

struct tcase {
	int h, w, c;
	enum ts_dtype dtype;
	bool normalize;
	size_t n;
};

static const struct tcase cases[] = {
	{ 224, 224, 3, TS_DTYPE_F32, true, 8 },
	{ 224, 224, 3, TS_DTYPE_F16, true, 8 },
	{ 32, 32, 3, TS_DTYPE_F32, false, 33 },
	{ 7, 5, 3, TS_DTYPE_F32, true, 5 },   /* scalar path */
	{ 7, 5, 1, TS_DTYPE_F16, false, 3 },
	{ 16, 16, 1, TS_DTYPE_F32, true, 4 },
	{ 16, 12, 4, TS_DTYPE_F16, true, 6 },
};

int main(void)
{
	need_gpu("test-finish");
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct tcase *t = &cases[k];
		struct ts_finish_params p = { .height = t->h, .width = t->w, .channels = t->c,
					      .dtype = t->dtype, .normalize = t->normalize,
					      .mean = {0.485f, 0.456f, 0.406f, 0.5f},
					      .std = {0.229f, 0.224f, 0.225f, 0.25f} };
		size_t in = (size_t)t->h * t->w * t->c * t->n;
		size_t out = ts_finish_sample_bytes(&p) * t->n;
		uint8_t *hsrc = malloc(in), *dsrc = NULL;
		uint8_t *want = malloc(out), *got = malloc(out);
		void *ddst = NULL;
		struct ts_error err = {0};

		CHECK(hsrc && want && got, "malloc");
		fill_pixels(hsrc, in, (uint32_t)k + 1);
		CHECK(cudaMalloc((void **)&dsrc, in) == cudaSuccess, "cudaMalloc");
		CHECK(cudaMalloc(&ddst, out) == cudaSuccess, "cudaMalloc");
		CHECK(cudaMemcpy(dsrc, hsrc, in, cudaMemcpyHostToDevice) == cudaSuccess, "H2D");
		CHECK(cudaMemset(ddst, 0xff, out) == cudaSuccess, "memset");
		CHECK(ts_finish_launch(dsrc, ddst, t->n, &p, NULL, &err) == 0, "%s", err.msg);
		CHECK(cudaDeviceSynchronize() == cudaSuccess, "sync");
		CHECK(cudaMemcpy(got, ddst, out, cudaMemcpyDeviceToHost) == cudaSuccess, "D2H");
		ts_finish_reference(hsrc, want, t->n, &p);
		if (memcmp(got, want, out) != 0) {
			size_t i = 0;
			while (got[i] == want[i])
				i++;
			CHECK(0, "case %zu (%dx%dx%d %s%s n=%zu): first byte differing at %zu",
			      k, t->h, t->w, t->c, ts_dtype_name(t->dtype),
			      t->normalize ? " normalized" : "", t->n, i);
		}
		/* mirrored: all n into ddst, the first n2 also into a second
		 * buffer one sample in (an odd slot) */
		size_t sb = ts_finish_sample_bytes(&p), n2 = (t->n + 1) / 2;
		uint8_t *d2 = NULL;
		CHECK(cudaMalloc((void **)&d2, (n2 + 1) * sb) == cudaSuccess, "cudaMalloc");
		CHECK(cudaMemset(ddst, 0xff, out) == cudaSuccess && cudaMemset(d2, 0xff, (n2 + 1) * sb) ==
		      cudaSuccess, "memset");
		CHECK(ts_finish_launch_mirrored(dsrc, ddst, t->n, d2 + sb, n2, &p, NULL, &err) == 0,
		      "%s", err.msg);
		CHECK(cudaDeviceSynchronize() == cudaSuccess, "sync");
		CHECK(cudaMemcpy(got, ddst, out, cudaMemcpyDeviceToHost) == cudaSuccess, "D2H");
		CHECK(memcmp(got, want, out) == 0, "case %zu: mirrored launch, main output differs", k);
		CHECK(cudaMemcpy(got, d2 + sb, n2 * sb, cudaMemcpyDeviceToHost) == cudaSuccess, "D2H");
		CHECK(memcmp(got, want, n2 * sb) == 0, "case %zu: the mirror copy differs", k);
		cudaFree(d2);
		printf("case %zu: %dx%dx%d %s%s x%zu: identical\n", k, t->h, t->w, t->c,
		       ts_dtype_name(t->dtype), t->normalize ? " normalized" : "", t->n);
		cudaFree(dsrc);
		cudaFree(ddst);
		free(hsrc);
		free(want);
		free(got);
	}
	printf("test-finish: ok\n");
	return 0;
}
