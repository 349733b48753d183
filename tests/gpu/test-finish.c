/*
 * test-finish.c - the finishing kernel against the CPU reference, bit for
 * bit: float32 and float16, with and without normalize, 1, 3 and 4
 * channels, sizes whose pixel count is a multiple of 4 and odd ones
 * (299x299, 227x227, 33x35, 7x5 RGB) that once took a scalar kernel: now
 * every size takes the one vector kernel, into slots 16-byte aligned
 * (ts_finish_sample_stride apart) whose padding it zeroes. The mirrored
 * launch (the device ring's mirror slots, a second destination from the
 * same pass, one slot in), and a misaligned destination refused.
 * Against the stand-in runtime (tests/gpu/run --fake) it also counts the
 * vector kernel's launches: one per launch, whatever the size.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
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
	{ 7, 5, 3, TS_DTYPE_F32, true, 5 },   /* 420 bytes: slots of 432 */
	{ 7, 5, 3, TS_DTYPE_F16, true, 5 },   /* 210: 224 */
	{ 7, 5, 1, TS_DTYPE_F16, false, 3 },
	{ 16, 16, 1, TS_DTYPE_F32, true, 4 },
	{ 16, 12, 4, TS_DTYPE_F16, true, 6 },
	{ 299, 299, 3, TS_DTYPE_F32, true, 3 },
	{ 299, 299, 3, TS_DTYPE_F16, true, 3 },
	{ 227, 227, 3, TS_DTYPE_F32, true, 2 },
	{ 33, 35, 3, TS_DTYPE_F16, false, 7 },
	{ 33, 35, 3, TS_DTYPE_F32, true, 7 },
};

/* got: n slots stride apart; want: n packed samples of sb bytes. The
 * padding of each slot must be zeros (the kernel's last vector). */
static void compare(const uint8_t *got, const uint8_t *want, size_t n, size_t sb,
		    size_t stride, size_t k, const char *what)
{
	for (size_t s = 0; s < n; s++) {
		const uint8_t *g = got + s * stride, *w = want + s * sb;
		if (memcmp(g, w, sb) != 0) {
			size_t i = 0;
			while (g[i] == w[i])
				i++;
			CHECK(0, "case %zu (%s): sample %zu, first byte differing at %zu", k, what,
			      s, i);
		}
		for (size_t i = sb; i < stride; i++)
			CHECK(g[i] == 0, "case %zu (%s): sample %zu, padding byte %zu is 0x%02x", k,
			      what, s, i, g[i]);
	}
}

int main(void)
{
	need_gpu("test-finish");
	/* the stand-in runtime's counter; NULL on a real one */
	int *vec_launches = dlsym(RTLD_DEFAULT, "fake_cudart_vec_launches");
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct tcase *t = &cases[k];
		struct ts_finish_params p = { .height = t->h, .width = t->w, .channels = t->c,
					      .dtype = t->dtype, .normalize = t->normalize,
					      .mean = {0.485f, 0.456f, 0.406f, 0.5f},
					      .std = {0.229f, 0.224f, 0.225f, 0.25f} };
		size_t sb = ts_finish_sample_bytes(&p), ss = ts_finish_sample_stride(&p);
		size_t in = (size_t)t->h * t->w * t->c * t->n;
		size_t out = ss * t->n;
		uint8_t *hsrc = malloc(in), *dsrc = NULL;
		uint8_t *want = malloc(sb * t->n), *got = malloc(out);
		void *ddst = NULL;
		struct ts_error err = {0};
		char what[96];

		snprintf(what, sizeof(what), "%dx%dx%d %s%s n=%zu", t->h, t->w, t->c,
			 ts_dtype_name(t->dtype), t->normalize ? " normalized" : "", t->n);
		CHECK(ss % 16 == 0 && ss >= sb && ss - sb < 16, "case %zu: stride %zu for %zu", k,
		      ss, sb);
		CHECK(hsrc && want && got, "malloc");
		fill_pixels(hsrc, in, (uint32_t)k + 1);
		CHECK(cudaMalloc((void **)&dsrc, in) == cudaSuccess, "cudaMalloc");
		CHECK(cudaMalloc(&ddst, out) == cudaSuccess, "cudaMalloc");
		CHECK(cudaMemcpy(dsrc, hsrc, in, cudaMemcpyHostToDevice) == cudaSuccess, "H2D");
		CHECK(cudaMemset(ddst, 0xff, out) == cudaSuccess, "memset");
		int v0 = vec_launches ? *vec_launches : 0;
		CHECK(ts_finish_launch(dsrc, ddst, t->n, &p, NULL, &err) == 0, "%s", err.msg);
		CHECK(cudaDeviceSynchronize() == cudaSuccess, "sync: %s",
		      cudaGetErrorString(cudaGetLastError()));
		if (vec_launches)
			CHECK(*vec_launches == v0 + 1, "case %zu (%s): %d vector kernel launches, "
			      "expected 1", k, what, *vec_launches - v0);
		CHECK(cudaMemcpy(got, ddst, out, cudaMemcpyDeviceToHost) == cudaSuccess, "D2H");
		ts_finish_reference(hsrc, want, t->n, &p);
		compare(got, want, t->n, sb, ss, k, what);
		/* mirrored: all n into ddst, the first n2 also into a second
		 * buffer one slot in */
		size_t n2 = (t->n + 1) / 2;
		uint8_t *d2 = NULL;
		CHECK(cudaMalloc((void **)&d2, (n2 + 1) * ss) == cudaSuccess, "cudaMalloc");
		CHECK(cudaMemset(ddst, 0xff, out) == cudaSuccess && cudaMemset(d2, 0xff, (n2 + 1) * ss) ==
		      cudaSuccess, "memset");
		CHECK(ts_finish_launch_mirrored(dsrc, ddst, t->n, d2 + ss, n2, &p, NULL, &err) == 0,
		      "%s", err.msg);
		CHECK(cudaDeviceSynchronize() == cudaSuccess, "sync");
		CHECK(cudaMemcpy(got, ddst, out, cudaMemcpyDeviceToHost) == cudaSuccess, "D2H");
		compare(got, want, t->n, sb, ss, k, "mirrored launch, main output");
		CHECK(cudaMemcpy(got, d2 + ss, n2 * ss, cudaMemcpyDeviceToHost) == cudaSuccess, "D2H");
		compare(got, want, n2, sb, ss, k, "the mirror copy");
		/* a destination off the 16-byte grid: refused before any launch */
		CHECK(ts_finish_launch(dsrc, (uint8_t *)ddst + 4, 1, &p, NULL, &err) == TS_E_ARG,
		      "case %zu: a misaligned destination was launched", k);
		CHECK(strstr(err.msg, "16-byte") != NULL, "%s", err.msg);
		cudaFree(d2);
		printf("case %zu: %s (slots of %zu bytes): identical\n", k, what, ss);
		cudaFree(dsrc);
		cudaFree(ddst);
		free(hsrc);
		free(want);
		free(got);
	}
	printf("test-finish: ok\n");
	return 0;
}
