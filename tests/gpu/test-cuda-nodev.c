/*
 * test-cuda-nodev.c - the no-GPU path: the probe says why there is no
 * device and every device call refuses with TS_E_NODEV (never a crash),
 * the client's pinning refuses the same way, and the host-side finishing
 * reference computes the documented values. Runs everywhere; skips (77)
 * only on a host that has a GPU, where the other programs test it.
 */
#include <math.h>
#include <string.h>

#include "gpu-common.h"
#include "tsclient_cuda.h"

static void test_reference(void)
{
	/* pixel 255, mean 0.5, std 0.25: (1 - 0.5) / 0.25 = 2 */
	struct ts_finish_params p = { .height = 1, .width = 2, .channels = 3,
				      .dtype = TS_DTYPE_F32, .normalize = true,
				      .mean = {0.5f, 0.5f, 0.5f}, .std = {0.25f, 0.25f, 0.25f} };
	uint8_t px[6] = {255, 0, 51, 255, 0, 51};
	float out[6];
	uint16_t half[6];

	ts_finish_reference(px, out, 1, &p);
	/* NCHW: channel 0 is out[0..1] */
	CHECK(fabsf(out[0] - 2.0f) < 1e-6f && fabsf(out[1] - 2.0f) < 1e-6f, "%g %g", out[0], out[1]);
	CHECK(fabsf(out[2] + 2.0f) < 1e-6f, "%g", out[2]);
	CHECK(fabsf(out[4] - (0.2f - 0.5f) / 0.25f) < 1e-6f, "%g", out[4]);
	CHECK(ts_finish_sample_bytes(&p) == 24, "%zu", ts_finish_sample_bytes(&p));
	p.dtype = TS_DTYPE_F16;
	ts_finish_reference(px, half, 1, &p);
	CHECK(half[0] == 0x4000 && half[2] == 0xc000, "%#x %#x", half[0], half[2]); /* 2, -2 */
	p.normalize = false;
	ts_finish_reference(px, half, 1, &p);
	CHECK(half[0] == 0x3c00 && half[2] == 0x0000, "%#x %#x", half[0], half[2]); /* 1, 0 */
	CHECK(ts_finish_sample_bytes(&p) == 12, "%zu", ts_finish_sample_bytes(&p));
}

int main(void)
{
	struct ts_error err = {0};
	struct ts_devring *r = NULL;
	struct ts_client_pinned pin = {0};
	struct ts_finish_params p = { .height = 4, .width = 4, .channels = 3,
				      .dtype = TS_DTYPE_F32 };
	uint8_t buf[64];
	int n = -1, rc;

	test_reference();
	rc = ts_cuda_probe(&n, &err);
	if (rc == 0) {
		printf("test-cuda-nodev: SKIP: %d CUDA device(s) present; the GPU tests cover this host\n", n);
		return SKIP;
	}
	CHECK(rc == TS_E_NODEV && err.code == TS_E_NODEV, "rc %d", rc);
	CHECK(n == -1, "count written on failure");
	CHECK(strncmp(err.msg, "no CUDA device found", 20) == 0, "message: %s", err.msg);
	printf("probe: %s\n", err.msg);

	memset(&err, 0, sizeof(err));
	CHECK(ts_devring_create(0, 16, 8, &p, 4, &r, &err) == TS_E_NODEV, "devring create");
	CHECK(r == NULL && err.msg[0], "no ring, a message");
	CHECK(ts_finish_launch(buf, buf, 1, &p, NULL, &err) == TS_E_NODEV, "launch");
	ts_devring_destroy(NULL);

	/* the client side: dlopen'd runtime, same answer */
	memset(&err, 0, sizeof(err));
	rc = ts_client_cuda_devices(&err);
	CHECK(rc == TS_E_NODEV, "client devices rc %d", rc);
	CHECK(err.msg[0], "client message");
	printf("client: %s\n", err.msg);
	CHECK(ts_client_pin_mapping(buf, &pin, &err) == TS_E_NODEV, "pin");
	CHECK(pin.base == NULL, "pin untouched");
	CHECK(ts_client_unpin(&pin, NULL) == 0, "unpin of nothing");
	printf("test-cuda-nodev: ok\n");
	return 0;
}
