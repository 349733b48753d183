/*
 * finish.cu - the on-GPU finishing kernel: a batch of uint8 NHWC samples
 * becomes float32 or float16 NCHW, optionally normalized, in one pass.
 *
 * The CPU ships 1 byte per element instead of 4; this kernel reads each
 * byte once and writes each output element once, so it is bound by device
 * memory bandwidth (5 bytes moved per element for float32, 3 for float16).
 * Every size takes the one vector kernel: device slots are padded to a
 * multiple of 16 bytes (ts_finish_sample_stride), and each thread stores
 * one aligned 16-byte vector (4 floats, 8 halves) of a sample's flat
 * NCHW output, coalesced; its source bytes (C apart) come through the
 * read-only cache. No pixel count needs to be a multiple of anything.
 * The device ring's mirror slots (copies of the first ones after the
 * last) are written by the same pass: a second destination for the
 * first n2 samples, from the values already in registers (at the same
 * offsets: both are slot-aligned).
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>

#include "tscuda.h"

namespace {

struct affine {
	float scale[4], bias[4]; /* y = x * scale[c] + bias[c] */
};

/* 16 bytes: 4 floats, or 8 halves (round to nearest even). */
__device__ __forceinline__ void store16(float *dst, const float v[4])
{
	*reinterpret_cast<float4 *>(dst) = make_float4(v[0], v[1], v[2], v[3]);
}

__device__ __forceinline__ void store16(__half *dst, const float v[8])
{
	uint4 u;
	unsigned w[4];
#pragma unroll
	for (int i = 0; i < 4; i++) {
		__half2 h = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
		w[i] = *reinterpret_cast<const unsigned *>(&h);
	}
	u.x = w[0];
	u.y = w[1];
	u.z = w[2];
	u.w = w[3];
	*reinterpret_cast<uint4 *>(dst) = u;
}

/* One thread per 16-byte vector of one sample's NCHW output: 4 floats
 * or 8 halves, flat over the sample's C * hw elements, so a vector may
 * cross from one channel plane into the next. Slots are sample_stride
 * bytes apart, a multiple of 16 (ts_finish_sample_stride), so every
 * vector is aligned whatever hw and C are; the last one of a sample
 * writes zeros into the slot's padding. The source is read byte by byte
 * (element o of the sample is pixel o % hw, channel o / hw: bytes C
 * apart) through the read-only cache, which serves a warp's bytes from
 * the lines its neighbours loaded. */
template <typename T>
__global__ void finish_vec(const uint8_t *__restrict__ src, uint8_t *__restrict__ dst,
			   size_t n, size_t hw, int C, size_t stride, affine a,
			   uint8_t *__restrict__ dst2, size_t n2)
{
	constexpr int V = 16 / sizeof(T);
	size_t elems = hw * (size_t)C;
	size_t vecs_per_sample = stride / 16;
	size_t total = n * vecs_per_sample;
	for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < total;
	     g += (size_t)gridDim.x * blockDim.x) {
		size_t s = g / vecs_per_sample;
		size_t o = (g - s * vecs_per_sample) * V; /* element in sample */
		const uint8_t *in = src + s * elems;
		float v[V];
		size_t c = o / hw, p = o - c * hw;
#pragma unroll
		for (int i = 0; i < V; i++) {
			v[i] = o + i < elems ? fmaf((float)__ldg(in + p * C + c), a.scale[c], a.bias[c])
					     : 0.0f;
			if (++p == hw) {
				p = 0;
				c++;
			}
		}
		size_t off = s * stride + (o / V) * 16;
		store16(reinterpret_cast<T *>(dst + off), v);
		if (s < n2)
			store16(reinterpret_cast<T *>(dst2 + off), v);
	}
}

template <typename T>
cudaError_t launch(const uint8_t *src, void *dst, size_t n, size_t hw, int C,
		   size_t stride, const affine &a, cudaStream_t st, void *dst2, size_t n2)
{
	const int threads = 256;
	size_t work = n * (stride / 16);
	/* enough blocks to fill the device several times; the grid-stride
	 * loop covers the rest */
	size_t blocks = (work + threads - 1) / threads;
	if (blocks > 65535)
		blocks = 65535;
	if (blocks == 0)
		return cudaSuccess;
	finish_vec<T><<<(unsigned)blocks, threads, 0, st>>>(
		src, static_cast<uint8_t *>(dst), n, hw, C, stride, a,
		static_cast<uint8_t *>(dst2), n2);
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
	/* the vectors are aligned only if every slot is */
	if ((uintptr_t)dst % 16 || (n2 && (uintptr_t)dst2 % 16)) {
		if (err) {
			err->code = TS_E_ARG;
			snprintf(err->msg, sizeof(err->msg),
				 "finish: destination not 16-byte aligned (slots are "
				 "ts_finish_sample_stride apart from a cudaMalloc'd base)");
		}
		return TS_E_ARG;
	}
	hw = (size_t)p->height * (size_t)p->width;
	if (p->dtype == TS_DTYPE_F32)
		e = launch<float>(src, dst, n, hw, p->channels, ts_finish_sample_stride(p), a,
				  static_cast<cudaStream_t>(stream), dst2, n2);
	else
		e = launch<__half>(src, dst, n, hw, p->channels, ts_finish_sample_stride(p), a,
				   static_cast<cudaStream_t>(stream), dst2, n2);
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
