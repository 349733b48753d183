/*
 * mix-tool - a C trainer that mixes every batch it reads with libtsclient's
 * ts_client_mix_batch, for tests/mixup.py (which compares its bytes with
 * the Python client's tsrun.Mixup on the same stream):
 *
 *   mix-tool SOCKET OUT [--batch N] [--seed S] [--mode batch|pair|elem]
 *       [--mixup A] [--cutmix A] [--minmax LO,HI] [--prob P] [--switch P]
 *       [--smoothing S] [--classes K] [--no-correct] [--disabled]
 *
 * OUT gets, per batch, its mixed images (n * sample_bytes) then its
 * targets (n * K floats), as the batches come; the tool prints
 * "batches N samples M" and exits 0 at the end of the stream, 1 on an
 * error (printed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsclient.h"

static int usage(void)
{
	fprintf(stderr, "usage: mix-tool SOCKET OUT [--batch N] [--seed S] [--mode M] "
		"[--mixup A] [--cutmix A] [--minmax LO,HI] [--prob P] [--switch P] "
		"[--smoothing S] [--classes K] [--no-correct] [--disabled]\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return usage();
	struct ts_client_opts o;
	ts_client_opts_init(&o);
	o.timeout_ms = 60000;
	struct ts_client_mix m;
	ts_client_mix_init(&m);
	for (int i = 3; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--no-correct")) {
			m.correct_lam = 0;
			continue;
		}
		if (!strcmp(a, "--disabled")) {
			m.enabled = 0;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--batch"))
			o.batch_size = (uint32_t)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--seed"))
			m.seed = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--mode"))
			m.mode = !strcmp(v, "pair") ? TS_CLIENT_MIX_PAIR :
				 !strcmp(v, "elem") ? TS_CLIENT_MIX_ELEM : TS_CLIENT_MIX_BATCH;
		else if (!strcmp(a, "--mixup"))
			m.mixup_alpha = strtod(v, NULL);
		else if (!strcmp(a, "--cutmix"))
			m.cutmix_alpha = strtod(v, NULL);
		else if (!strcmp(a, "--minmax") && sscanf(v, "%lf,%lf", &m.cutmix_min, &m.cutmix_max) == 2)
			;
		else if (!strcmp(a, "--prob"))
			m.prob = strtod(v, NULL);
		else if (!strcmp(a, "--switch"))
			m.switch_prob = strtod(v, NULL);
		else if (!strcmp(a, "--smoothing"))
			m.label_smoothing = strtod(v, NULL);
		else if (!strcmp(a, "--classes"))
			m.num_classes = (uint32_t)strtoul(v, NULL, 10);
		else
			return usage();
	}
	struct ts_error err = { 0 };
	if (ts_client_mix_check(&m, &err) < 0) {
		fprintf(stderr, "mix-tool: %s\n", err.msg);
		return 1;
	}
	FILE *out = fopen(argv[2], "wb");
	if (!out) {
		perror(argv[2]);
		return 1;
	}
	struct ts_client *c;
	int rc = ts_client_connect(argv[1], &o, &c, &err);
	if (rc < 0) {
		fprintf(stderr, "mix-tool: connect: %s\n", err.msg);
		fclose(out);
		return 1;
	}
	struct ts_batch b;
	size_t batches = 0, samples = 0;
	float *images = NULL, *targets = NULL;
	while ((rc = ts_client_next(c, &b, &err)) == 0) {
		free(images);
		free(targets);
		images = malloc(b.n * b.sample_bytes);
		targets = malloc(b.n * m.num_classes * sizeof(float));
		if (!images || !targets) {
			fprintf(stderr, "mix-tool: out of memory\n");
			rc = 1;
			break;
		}
		/* the ring is read-only: mixed into our own buffer */
		if ((rc = ts_client_mix_batch(&m, &b, images, targets, &err)) < 0)
			break;
		fwrite(images, b.sample_bytes, b.n, out);
		fwrite(targets, sizeof(float) * m.num_classes, b.n, out);
		batches++;
		samples += b.n;
	}
	free(images);
	free(targets);
	ts_client_close(c);
	if (fclose(out) != 0 || (rc != TS_E_EOS)) {
		fprintf(stderr, "mix-tool: %s\n", rc == 1 ? "failed" : err.msg);
		return 1;
	}
	printf("batches %zu samples %zu\n", batches, samples);
	return 0;
}
