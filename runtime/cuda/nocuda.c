/*
 * nocuda.c - the CUDA API of tscuda.h in a build without CUDA: every call
 * that needs a device returns TS_E_NODEV and says why, so callers take
 * the CPU path with one message and no #if.
 */
#include "tscuda.h"

#include "util.h"

#define NO_CUDA "tsrun was built without CUDA (rebuild with meson -Dcuda=enabled and the CUDA toolkit)"

bool ts_cuda_built(void)
{
	return false;
}

int ts_cuda_probe(int *count, struct ts_error *err)
{
	return ts_error_set(err, TS_E_NODEV, "no CUDA device found: " NO_CUDA);
}

int ts_cuda_info(int dev, struct ts_cuda_info *out, struct ts_error *err)
{
	return ts_error_set(err, TS_E_NODEV, NO_CUDA);
}

int ts_cuda_set_device(int dev, struct ts_error *err)
{
	return ts_error_set(err, TS_E_NODEV, NO_CUDA);
}

int ts_finish_launch(const uint8_t *src, void *dst, size_t n,
		     const struct ts_finish_params *p, void *stream,
		     struct ts_error *err)
{
	return ts_error_set(err, TS_E_NODEV, NO_CUDA);
}

int ts_finish_launch_mirrored(const uint8_t *src, void *dst, size_t n,
			      void *dst2, size_t n2,
			      const struct ts_finish_params *p, void *stream,
			      struct ts_error *err)
{
	return ts_error_set(err, TS_E_NODEV, NO_CUDA);
}

int ts_devring_create(int dev, uint64_t capacity, uint64_t mirror,
		      const struct ts_finish_params *p, size_t max_batch,
		      struct ts_devring **out, struct ts_error *err)
{
	return ts_error_set(err, TS_E_NODEV, NO_CUDA);
}

void ts_devring_destroy(struct ts_devring *r)
{
}

void *ts_devring_data(const struct ts_devring *r)
{
	return NULL;
}

uint64_t ts_devring_capacity(const struct ts_devring *r)
{
	return 0;
}

size_t ts_devring_sample_bytes(const struct ts_devring *r)
{
	return 0;
}

size_t ts_devring_sample_stride(const struct ts_devring *r)
{
	return 0;
}

void ts_devring_host_pieces(struct ts_devring *r, const void *base, uint64_t slots)
{
}

int ts_devring_fill(struct ts_devring *r, const void *host, size_t host_stride,
		    uint64_t seq, size_t n, struct ts_error *err)
{
	return ts_error_set(err, TS_E_NODEV, NO_CUDA);
}

int ts_devring_export(const struct ts_devring *r, struct ts_devring_handle *h,
		      struct ts_error *err)
{
	return ts_error_set(err, TS_E_NODEV, NO_CUDA);
}

int ts_devring_import(const struct ts_devring_handle *h,
		      struct ts_devring **out, struct ts_error *err)
{
	return ts_error_set(err, TS_E_NODEV, NO_CUDA);
}

int ts_devring_copy_out(struct ts_devring *r, uint64_t seq, size_t n,
			void *dst, void *stream, struct ts_error *err)
{
	return ts_error_set(err, TS_E_NODEV, NO_CUDA);
}

void *ts_devring_span(const struct ts_devring *r, uint64_t seq, size_t n)
{
	return NULL;
}

int ts_cuda_pci_bus_id(int dev, char *buf, size_t len, struct ts_error *err)
{
	return ts_error_set(err, TS_E_NODEV, NO_CUDA);
}

int ts_cuda_host_register(void *p, size_t len, struct ts_error *err)
{
	return ts_error_set(err, TS_E_NODEV, NO_CUDA);
}

void ts_cuda_host_unregister(void *p)
{
}

void ts_cuda_release(int dev)
{
}

int ts_cuda_uuid(int dev, uint8_t uuid[16], struct ts_error *err)
{
	return ts_error_set(err, TS_E_NODEV, NO_CUDA);
}

int ts_cuda_check_shareable(int dev, struct ts_error *err)
{
	return ts_error_set(err, TS_E_NODEV, NO_CUDA);
}

void ts_cuda_versions(int *driver, int *runtime)
{
	*driver = 0;
	*runtime = 0;
}
