/*
 * device.c - CUDA device probe and facts (built only with CUDA).
 */
#include "tscuda.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

bool ts_cuda_built(void)
{
	return true;
}

int ts_cuda_probe(int *count, struct ts_error *err)
{
	int n = 0, drv = 0, run = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess) {
		cudaGetLastError();
		/* tsrun links the runtime statically: it needs a driver at
		 * least as new as itself, so say both */
		ts_cuda_versions(&drv, &run);
		return ts_error_set(err, TS_E_NODEV,
				    "no CUDA device found (cudaGetDeviceCount: %s; driver "
				    "supports CUDA %d.%d, tsrun's runtime is CUDA %d.%d%s)",
				    cudaGetErrorString(e), drv / 1000, drv % 1000 / 10,
				    run / 1000, run % 1000 / 10,
				    drv == 0 ? ", no driver" : drv < run ?
				    ", a driver too old for this runtime" : "");
	}
	if (n <= 0)
		return ts_error_set(err, TS_E_NODEV,
				    "no CUDA device found (cudaGetDeviceCount: 0 devices)");
	if (count)
		*count = n;
	return 0;
}

int ts_cuda_info(int dev, struct ts_cuda_info *out, struct ts_error *err)
{
	struct ts_cuda_info in = {0};
	struct cudaDeviceProp prop;
	int clock_khz = 0;
	cudaError_t e = cudaGetDeviceProperties(&prop, dev);

	if (e != cudaSuccess) {
		cudaGetLastError();
		return ts_error_set(err, TS_E_NODEV, "device %d: %s", dev,
				    cudaGetErrorString(e));
	}
	memcpy(in.name, prop.name, sizeof(in.name) - 1); /* both 256 */
	in.major = prop.major;
	in.minor = prop.minor;
	in.total_mem = prop.totalGlobalMem;
	in.sm_count = prop.multiProcessorCount;
	/* CUDA 13 dropped cudaDeviceProp.memoryClockRate; the attribute
	 * stays. DDR: two transfers per clock. */
	if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, dev) ==
		    cudaSuccess && clock_khz > 0)
		in.mem_bandwidth = 2.0 * clock_khz * 1e3 * (prop.memoryBusWidth / 8.0);
	*out = in;
	return 0;
}

int ts_cuda_set_device(int dev, struct ts_error *err)
{
	cudaError_t e = cudaSetDevice(dev);
	if (e != cudaSuccess) {
		cudaGetLastError();
		return ts_error_set(err, TS_E_NODEV, "cudaSetDevice(%d): %s", dev,
				    cudaGetErrorString(e));
	}
	return 0;
}

int ts_cuda_pci_bus_id(int dev, char *buf, size_t len, struct ts_error *err)
{
	char id[32] = "";
	cudaError_t e = cudaDeviceGetPCIBusId(id, (int)sizeof(id), dev);
	if (e != cudaSuccess) {
		cudaGetLastError();
		return ts_error_set(err, TS_E_NODEV, "device %d: cudaDeviceGetPCIBusId: %s",
				    dev, cudaGetErrorString(e));
	}
	snprintf(buf, len, "%s", id);
	return 0;
}

void ts_cuda_versions(int *driver, int *runtime)
{
	if (cudaDriverGetVersion(driver) != cudaSuccess) {
		cudaGetLastError();
		*driver = 0;
	}
	if (cudaRuntimeGetVersion(runtime) != cudaSuccess) {
		cudaGetLastError();
		*runtime = 0;
	}
}

int ts_cuda_uuid(int dev, uint8_t uuid[16], struct ts_error *err)
{
	struct cudaDeviceProp prop;
	cudaError_t e = cudaGetDeviceProperties(&prop, dev);
	if (e != cudaSuccess) {
		cudaGetLastError();
		return ts_error_set(err, TS_E_NODEV, "device %d: cudaGetDeviceProperties: %s",
				    dev, cudaGetErrorString(e));
	}
	_Static_assert(sizeof(prop.uuid) == 16, "cudaUUID_t is 16 bytes");
	memcpy(uuid, &prop.uuid, 16);
	return 0;
}

int ts_cuda_check_shareable(int dev, struct ts_error *err)
{
	int mode = 0;
	cudaError_t e = cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, dev);
	if (e != cudaSuccess) {
		cudaGetLastError();
		return ts_error_set(err, TS_E_NODEV, "device %d: cudaDeviceGetAttribute"
				    "(cudaDevAttrComputeMode): %s", dev, cudaGetErrorString(e));
	}
	if (mode == cudaComputeModeExclusiveProcess)
		return ts_error_set(err, TS_E_NODEV,
				    "device %d is in exclusive-process compute mode (one process "
				    "per GPU, common under Slurm), so trainers cannot open a device "
				    "ring on it; ask for the default mode (nvidia-smi -c DEFAULT)",
				    dev);
	if (mode == cudaComputeModeProhibited)
		return ts_error_set(err, TS_E_NODEV,
				    "device %d is in prohibited compute mode", dev);
	return 0;
}

int ts_cuda_host_register(void *p, size_t len, struct ts_error *err)
{
	cudaError_t e = cudaHostRegister(p, len, cudaHostRegisterDefault);
	if (e != cudaSuccess) {
		cudaGetLastError();   /* not sticky: clear it */
		return ts_error_set(err, TS_E_NODEV, "cudaHostRegister of %zu bytes: %s",
				    len, cudaGetErrorString(e));
	}
	return 0;
}

void ts_cuda_host_unregister(void *p)
{
	if (p && cudaHostUnregister(p) != cudaSuccess)
		cudaGetLastError();
}

void ts_cuda_release(int dev)
{
	int n = 0;
	/* no device at all: there is no context to give back (and asking
	 * would create none) */
	if (cudaGetDeviceCount(&n) != cudaSuccess || dev < 0 || dev >= n ||
	    cudaSetDevice(dev) != cudaSuccess || cudaDeviceReset() != cudaSuccess)
		cudaGetLastError();
}
