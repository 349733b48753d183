/*
 * fake-props.c - the part of the stand-in CUDA runtime that needs the
 * CUDA headers: cudaDeviceProp's fields at the header's offsets (an H200's
 * figures), for the producer's device probe (runtime/cuda/device.c).
 * Built into libcudart.so.13 only when the toolkit's headers are there;
 * fake-cudart.c fills the name and the UUID after it.
 */
#include <cuda_runtime_api.h>
#include <string.h>

__attribute__((visibility("hidden"))) void fake_props_fill(void *prop, int d);

void fake_props_fill(void *prop, int d)
{
	struct cudaDeviceProp *p = prop;
	(void)d;
	memset(p, 0, sizeof(*p));
	p->major = 9;
	p->minor = 0;
	p->totalGlobalMem = (size_t)141 << 30;
	p->multiProcessorCount = 132;
	p->memoryBusWidth = 6144;
	p->unifiedAddressing = 1;
}
