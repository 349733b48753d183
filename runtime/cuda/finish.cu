/*
 * finish.cu - the on-GPU finishing kernel: a batch of uint8 NHWC samples
 * becomes float32 or float16 NCHW, optionally normalized, in one pass.
 *
 * The CPU ships 1 byte per element instead of 4; this kernel reads each
 * byte once and writes each output element once, so it is bound by device
 * memory bandwidth (5 bytes moved per element for float32, 3 for float16).
 * Each thread takes 4 consecutive pixels of one sample: it loads their
 * 4 * channels bytes as whole 32-bit words and stores one 16-byte (float)
 * or 8-byte (half) vector per channel plane, so both sides are coalesced.
 * Samples whose pixel count is not a multiple of 4 take the scalar path.
 * The device ring's mirror slots (copies of the first ones after the
 * last) are written by the same pass: a second destination for the
 * first n2 samples, from the values already in registers.
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>

#include "tscuda.h"

namespace {

struct affine {
	float scale[4], bias[4]; /* y = x * scale[c] + bias[c] */
};

__device__ __forceinline__ void store4(float *dst, const float v[4])
{
	*reinterpret_cast<float4 *>(dst) = make_float4(v[0], v[1], v[2], v[3]);
}

__device__ __forceinline__ void store4(__half *dst, const float v[4])
{
	__half2 a = __floats2half2_rn(v[0], v[1]);
	__half2 b = __floats2half2_rn(v[2], v[3]);
	uint2 u;
	u.x = *reinterpret_cast<const unsigned *>(&a);
	u.y = *reinterpret_cast<const unsigned *>(&b);
	*reinterpret_cast<uint2 *>(dst) = u;
}

__device__ __forceinline__ void store1(float *dst, float v) { *dst = v; }
__device__ __forceinline__ void store1(__half *dst, float v) { *dst = __float2half_rn(v); }

/* Vector path: hw % 4 == 0, so a 4-pixel group never crosses a sample and
 * its source bytes start on a 4-byte boundary (4 * C * group). */
template <typename T, int C>
__global__ void finish_vec(const uint8_t *__restrict__ src, T *__restrict__ dst,
			   size_t n, size_t hw, affine a, T *__restrict__ dst2, size_t n2)
{
	size_t groups_per_sample = hw / 4;
	size_t total = n * groups_per_sample;
	for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < total;
	     g += (size_t)gridDim.x * blockDim.x) {
		size_t s = g / groups_per_sample;
		size_t p = (g - s * groups_per_sample) * 4; /* pixel in sample */
		const uint32_t *in = reinterpret_cast<const uint32_t *>(
			src + (s * hw + p) * C);
		uint32_t w[C];
#pragma unroll
		for (int k = 0; k < C; k++)
			w[k] = __ldg(in + k);
		const uint8_t *b = reinterpret_cast<const uint8_t *>(w);
		T *out = dst + s * C * hw + p;
		T *out2 = s < n2 ? dst2 + s * C * hw + p : nullptr;
#pragma unroll
		for (int c = 0; c < C; c++) {
			float v[4];
#pragma unroll
			for (int i = 0; i < 4; i++)
				v[i] = fmaf((float)b[i * C + c], a.scale[c], a.bias[c]);
			store4(out + c * hw, v);
			if (out2)
				store4(out2 + c * hw, v);
		}
	}
}

/* Scalar path: one thread per pixel. */
template <typename T>
__global__ void finish_scalar(const uint8_t *__restrict__ src, T *__restrict__ dst,
			      size_t n, size_t hw, int C, affine a, T *__restrict__ dst2,
			      size_t n2)
{
	size_t total = n * hw;
	for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < total;
	     g += (size_t)gridDim.x * blockDim.x) {
		size_t s = g / hw, p = g - s * hw;
		for (int c = 0; c < C; c++) {
			float v = fmaf((float)src[g * C + c], a.scale[c], a.bias[c]);
			store1(dst + (s * C + c) * hw + p, v);
			if (s < n2)
				store1(dst2 + (s * C + c) * hw + p, v);
		}
	}
}

template <typename T>
cudaError_t launch(const uint8_t *src, T *dst, size_t n, size_t hw, int C,
		   const affine &a, cudaStream_t st, T *dst2, size_t n2)
{
	const int threads = 256;
	/* a vector store is 4 elements: 16 bytes of float, 8 of half; with
	 * hw % 4 == 0 every sample and plane then starts aligned too */
	const uintptr_t va = 4 * sizeof(T);
	bool vec = hw % 4 == 0 && ((uintptr_t)src % 4) == 0 &&
		   ((uintptr_t)dst % va) == 0 && (n2 == 0 || ((uintptr_t)dst2 % va) == 0);
	size_t work = vec ? n * hw / 4 : n * hw;
	/* enough blocks to fill the device several times; the grid-stride
	 * loop covers the rest */
	size_t blocks = (work + threads - 1) / threads;
	if (blocks > 65535)
		blocks = 65535;
	if (blocks == 0)
		return cudaSuccess;
	if (!vec)
		finish_scalar<T><<<(unsigned)blocks, threads, 0, st>>>(src, dst, n, hw, C, a,
								       dst2, n2);
	else if (C == 1)
		finish_vec<T, 1><<<(unsigned)blocks, threads, 0, st>>>(src, dst, n, hw, a, dst2, n2);
	else if (C == 2)
		finish_vec<T, 2><<<(unsigned)blocks, threads, 0, st>>>(src, dst, n, hw, a, dst2, n2);
	else if (C == 3)
		finish_vec<T, 3><<<(unsigned)blocks, threads, 0, st>>>(src, dst, n, hw, a, dst2, n2);
	else
		finish_vec<T, 4><<<(unsigned)blocks, threads, 0, st>>>(src, dst, n, hw, a, dst2, n2);
	return cudaGetLastError();
}

} // namespace

extern "C" int ts_finish_launch(const uint8_t *src, void *dst, size_t n,
				const struct ts_finish_params *p, void *stream,
				struct ts_error *err)
{
	return ts_finish_launch_mirrored(src, dst, n, NULL, 0, p, stream, err);
}

extern "C" int ts_finish_launch_mirrored(const uint8_t *src, void *dst, size_t n,
					 void *dst2, size_t n2,
					 const struct ts_finish_params *p, void *stream,
					 struct ts_error *err)
{
	affine a;
	cudaError_t e;
	size_t hw;

	if (!src || !dst || !p || n2 > n || (n2 && !dst2) || p->channels < 1 || p->channels > 4 ||
	    p->height < 1 || p->width < 1 ||
	    (p->dtype != TS_DTYPE_F32 && p->dtype != TS_DTYPE_F16)) {
		if (err) {
			err->code = TS_E_ARG;
			snprintf(err->msg, sizeof(err->msg),
				 "finish: bad arguments (channels 1..4, dtype float32 or float16)");
		}
		return TS_E_ARG;
	}
	for (int c = 0; c < 4; c++) {
		float m = p->normalize ? p->mean[c] : 0.0f;
		float s = p->normalize ? p->std[c] : 1.0f;
		a.scale[c] = 1.0f / (255.0f * s);
		a.bias[c] = -m / s;
	}
	hw = (size_t)p->height * (size_t)p->width;
	if (p->dtype == TS_DTYPE_F32)
		e = launch(src, static_cast<float *>(dst), n, hw, p->channels, a,
			   static_cast<cudaStream_t>(stream), static_cast<float *>(dst2), n2);
	else
		e = launch(src, static_cast<__half *>(dst), n, hw, p->channels, a,
			   static_cast<cudaStream_t>(stream), static_cast<__half *>(dst2), n2);
	if (e != cudaSuccess) {
		if (err) {
			err->code = TS_E_NODEV;
			snprintf(err->msg, sizeof(err->msg), "finish kernel launch: %s",
				 cudaGetErrorString(e));
		}
		return TS_E_NODEV;
	}
	return 0;
}
