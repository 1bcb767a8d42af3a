/* SPDX-License-Identifier: MIT */
/*
 * edu-dma: drive an edu device with the example driver (edu.c): identify
 * it, check it is alive, have it compute factorials, and copy data through
 * its DMA engine from a segment into the device and back into the same
 * segment, checking every byte. The segment lives where --seg says: on this
 * node, on the device's node, or on any node, so the device reaches it
 * locally or through a window of the fabric.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <smartio/smartio.h>
#include "parse.h"
#include "edu.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: edu-dma [options]\n"
		"  --fabric NAME    fabric to join (default $SMARTIO_FABRIC)\n"
		"  --node N         node to join as (default $SMARTIO_NODE, else 0)\n"
		"  --device ID      edu device id (default: the first 1234:11e8)\n"
		"  --irq            wait for interrupts instead of polling\n"
		"  --irq-kind KIND  with --irq: intx, msi, msix or any (default)\n"
		"  --seg WHERE      the data segment's node: here (default), lender, or a number\n"
		"  --size BYTES     bytes per transfer, 1..4095 (default 4095)\n"
		"  --rounds N       transfers each way, checked (default 2)\n"
		"  --fact N         compute N! (default 10; repeat the option for more)\n"
		"  --dma-bits N     address bits the device drives (default 28)\n"
		"  --timeout TIME   bound on each wait for the device: 5s, 500ms (a bare\n"
		"                   number is ms; default 5000)\n"
		"  --bus ADDR       also DMA the buffer to bus address ADDR as given (to see it refused)\n"
		"  --live-once      store to the liveness register and read it back at once,\n"
		"                   without waiting, and say whether it shows the inverse yet\n"
		"  --clamp          also DMA to the segment's bus address with bit --dma-bits set,\n"
		"                   unchecked, and show where the device put the data\n"
		"  --ring CAUSE     only raise interrupt cause CAUSE through the raise register and\n"
		"                   acknowledge it, watching IRQ_STATUS: what a borrower of another\n"
		"                   kernel reaches through its lender's relay (edu-lend)\n"
		"  --help, --version\n"
		"Exit status: 0 every check passed, 1 one failed, 2 usage error.\n");
}

static int fail(const char *what)
{
	fprintf(stderr, "edu-dma: %s: %s\n", what, sio_errmsg());
	return 1;
}

static void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (uint32_t i = 0; i < len; i++) {
		x ^= x << 13; x ^= x >> 17; x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

/* First differing byte of two buffers, or -1. */
static long differ(const uint8_t *a, const uint8_t *b, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (a[i] != b[i])
			return (long)i;
	return -1;
}

/* Round @r: A (offset 0) -> device buffer -> B (offset len), then check B
 * is A and the canary after B is untouched. */
static int round_trip(struct edu *e, struct sio_segment *seg, uint8_t *va, uint32_t len, int r)
{
	uint8_t *a = va, *b = va + len, *canary = va + 2 * len, want[16];
	long at;

	fill(a, len, (uint32_t)r + 1);
	memset(b, 0, len);
	memset(canary, 0x5a, sizeof(want));
	memset(want, 0x5a, sizeof(want));
	printf("edu-dma: round %d: DMA %u bytes in and out\n", r, len);
	fflush(stdout);
	if (edu_to_device(e, seg, 0, 0, len))
		return fail("DMA into the device");
	if (edu_from_device(e, seg, len, 0, len))
		return fail("DMA out of the device");
	if ((at = differ(a, b, len)) >= 0) {
		fprintf(stderr, "edu-dma: round %d: byte %ld came back 0x%02x, sent 0x%02x\n", r, at,
			b[at], a[at]);
		return 1;
	}
	if (differ(canary, want, sizeof(want)) >= 0) {
		fprintf(stderr, "edu-dma: round %d: the device wrote past the %u bytes asked\n", r, len);
		return 1;
	}
	return 0;
}

/* --clamp: DMA to (bus | 2^bits) without the driver's check: where does it land? */
static int clamp_demo(struct edu *e, struct sio_segment *seg, uint8_t *va, uint32_t len, int bits)
{
	uint64_t bus;
	long at;

	if (sio_device_map(edu_device(e), seg, &bus))
		return fail("map for --clamp");
	fill(va, len, 77);
	memset(va + len, 0, len);
	if (edu_to_device(e, seg, 0, 0, len))
		return fail("--clamp: DMA into the device");
	if (edu_dma(e, true, (bus + len) | (1ull << bits), 0, len))
		return fail("--clamp: DMA to the unmasked address");
	at = differ(va, va + len, len);
	printf("edu-dma: clamp: DMA to 0x%llx landed at 0x%llx: %s\n",
	       (unsigned long long)((bus + len) | (1ull << bits)), (unsigned long long)(bus + len),
	       at < 0 ? "data verified" : "data NOT there");
	return at < 0 ? 0 : 1;
}

/* What to do, from the command line. */
struct dma_args {
	struct edu_opts o;
	const char *fabric, *where;
	uint64_t node, size, rounds, bus, facts[16], ring;
	int nfacts;
	bool have_bus, clamp, once;
};

/* The segment the transfers use, on the node --seg names, mapped here. */
static int data_segment(struct sio_fabric *f, const struct sio_device_info *info,
			const char *where, struct sio_segment **seg, void **va, int *home)
{
	uint64_t v;

	*home = sio_fabric_node_id(f);
	if (!strcmp(where, "lender"))
		*home = info->lender;
	else if (strcmp(where, "here")) {
		if (sio_parse_u64(where, 0, SIO_MAX_NODES - 1, &v))
			return fail("--seg");
		*home = (int)v;
	}
	if ((*home == sio_fabric_node_id(f) ? sio_segment_create(f, 0, 3 * EDU_BUF_SIZE, 0, seg)
					    : sio_segment_create_on(f, *home, 0, 3 * EDU_BUF_SIZE, 0, seg)) ||
	    sio_segment_map(*seg, va))
		return fail("data segment");
	return 0;
}

/* Liveness and factorials: the device's registers. */
static int registers(struct edu *e, const struct dma_args *a)
{
	if (a->once) {
		uint32_t r, p = 0x0badcafe;

		edu_live_once(e, p, &r);
		printf("edu-dma: liveness register read at once after the store: 0x%08x (%s)\n", r,
		       r == ~p ? "inverted" : "not inverted yet");
	}
	if (edu_live(e, 0x12345678))
		return fail("liveness");
	printf("edu-dma: liveness check passed\n");
	for (int i = 0; i < a->nfacts; i++) {
		uint32_t r;

		if (edu_factorial(e, (uint32_t)a->facts[i], &r))
			return fail("factorial");
		printf("edu-dma: factorial %llu! = %u\n", (unsigned long long)a->facts[i], r);
	}
	return 0;
}

/* The DMA engine: round trips through the segment, --clamp, --bus. */
static int transfers(struct edu *e, struct sio_segment *seg, void *va, int home,
		     const struct dma_args *a)
{
	uint64_t b;

	if (a->rounds) {
		if (sio_device_map(edu_device(e), seg, &b))
			return fail("map the data segment for the device");
		printf("edu-dma: data segment on node %d, at bus address 0x%llx for the device\n", home,
		       (unsigned long long)b);
	}
	for (uint64_t r = 0; r < a->rounds; r++)
		if (round_trip(e, seg, va, (uint32_t)a->size, (int)r))
			return 1;
	if (a->rounds)
		printf("edu-dma: %llu round(s) of %llu bytes verified byte for byte\n",
		       (unsigned long long)a->rounds, (unsigned long long)a->size);
	if (a->clamp && clamp_demo(e, seg, va, (uint32_t)a->size,
				   a->o.dma_bits ? a->o.dma_bits : EDU_DMA_BITS))
		return 1;
	if (a->have_bus) {
		if (edu_dma(e, true, a->bus, 0, (uint32_t)a->size))
			return fail("--bus");
		printf("edu-dma: DMA to bus address 0x%llx done\n", (unsigned long long)a->bus);
	}
	return 0;
}

static int run(struct dma_args *a)
{
	struct sio_device_info info;
	struct sio_segment *seg = NULL;
	struct sio_fabric *f;
	struct edu *e;
	void *va;
	int home, rc = 1;

	if (sio_fabric_open(a->fabric, a->node == UINT64_MAX ? -1 : (int)a->node, &f))
		return fail("join the fabric");
	if (edu_open(f, &a->o, &e)) {
		sio_fabric_close(f);
		return fail("open the edu device");
	}
	if (sio_device_info(edu_device(e), &info)) {
		fail("device info");
		goto out;
	}
	printf("edu-dma: device %u (%s, %s backend, node %d): edu version %u.%u, DMA mask %d bits, %s\n",
	       info.id, info.name, info.backend == SIO_BACKEND_VFIO ? "vfio" : "sim", info.lender,
	       edu_id(e) >> 24, (edu_id(e) >> 16) & 0xff, a->o.dma_bits ? a->o.dma_bits : EDU_DMA_BITS,
	       a->o.irq ? sio_irq_kind_name(edu_irq_kind(e)) : "polling");
	if (a->ring) {
		if (edu_ring(e, (uint32_t)a->ring)) {
			fail("--ring");
			goto out;
		}
		printf("edu-dma: interrupt cause 0x%llx raised and acknowledged through BAR0 (%s)\n",
		       (unsigned long long)a->ring, sio_device_bar_path(edu_device(e), 0));
	} else if (registers(e, a) || data_segment(f, &info, a->where, &seg, &va, &home) ||
		   transfers(e, seg, va, home, a)) {
		goto out;
	}
	if (a->o.irq)
		printf("edu-dma: %llu interrupt(s) taken (%s)\n", (unsigned long long)edu_irqs(e),
		       sio_irq_kind_name(edu_irq_kind(e)));
	rc = 0;
out:
	edu_close(e);
	if (seg) {
		sio_segment_unmap(seg);
		sio_segment_close(seg);
	}
	sio_fabric_close(f);
	return rc;
}

int main(int argc, char **argv)
{
	enum { O_FABRIC = 256, O_NODE, O_DEVICE, O_IRQ, O_SEG, O_SIZE, O_ROUNDS, O_FACT, O_BITS,
	       O_TIMEOUT, O_BUS, O_CLAMP, O_KIND, O_ONCE, O_RING, O_VERSION };
	static const struct option opts[] = {
		{ "fabric", required_argument, 0, O_FABRIC }, { "node", required_argument, 0, O_NODE },
		{ "device", required_argument, 0, O_DEVICE }, { "irq", no_argument, 0, O_IRQ },
		{ "seg", required_argument, 0, O_SEG }, { "size", required_argument, 0, O_SIZE },
		{ "rounds", required_argument, 0, O_ROUNDS }, { "fact", required_argument, 0, O_FACT },
		{ "dma-bits", required_argument, 0, O_BITS },
		{ "timeout", required_argument, 0, O_TIMEOUT }, { "bus", required_argument, 0, O_BUS },
		{ "clamp", no_argument, 0, O_CLAMP }, { "irq-kind", required_argument, 0, O_KIND },
		{ "live-once", no_argument, 0, O_ONCE }, { "ring", required_argument, 0, O_RING },
		{ "help", no_argument, 0, 'h' },
		{ "version", no_argument, 0, O_VERSION }, { 0, 0, 0, 0 },
	};
	struct dma_args a = { .o = { .device = SIO_DEVICE_ANY }, .where = "here",
			      .node = UINT64_MAX, .size = EDU_XFER_MAX, .rounds = 2 };
	uint64_t v;
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		const char *opt = NULL;

		switch (c) {
		case O_FABRIC: a.fabric = optarg; break;
		case O_NODE: opt = "--node"; rc = sio_parse_u64(optarg, 0, SIO_MAX_NODES - 1, &a.node); break;
		case O_DEVICE:
			opt = "--device";
			rc = sio_parse_u64(optarg, 0, UINT32_MAX - 1, &v);
			a.o.device = (uint32_t)v;
			break;
		case O_IRQ: a.o.irq = true; break;
		case O_SEG: a.where = optarg; break;
		case O_SIZE: opt = "--size"; rc = sio_parse_size(optarg, 1, EDU_BUF_SIZE, &a.size); break;	/* 4096: to see it refused */
		case O_ROUNDS: opt = "--rounds"; rc = sio_parse_u64(optarg, 0, 1000000, &a.rounds); break;
		case O_FACT:
			opt = "--fact";
			if (a.nfacts == 16)
				rc = sio_err_set(EINVAL, "at most 16 of them");
			else
				rc = sio_parse_u64(optarg, 0, UINT32_MAX, &a.facts[a.nfacts++]);
			break;
		case O_BITS:
			opt = "--dma-bits";
			rc = sio_parse_u64(optarg, 12, 64, &v);
			a.o.dma_bits = (int)v;
			break;
		case O_TIMEOUT: {
			double sec = 0;

			opt = "--timeout";	/* fio's units; a bare number is ms */
			rc = sio_parse_time(optarg, 1e-3, 1e-3, 3600, &sec);
			a.o.timeout_ms = (int)(sec * 1e3 + 0.5);
			break;
		}
		case O_BUS: opt = "--bus"; rc = sio_parse_u64(optarg, 0, UINT64_MAX, &a.bus); a.have_bus = true; break;
		case O_CLAMP: a.clamp = a.o.unchecked = true; break;
		case O_ONCE: a.once = true; break;
		case O_RING: opt = "--ring"; rc = sio_parse_u64(optarg, 1, UINT32_MAX, &a.ring); break;
		case O_KIND:
			opt = "--irq-kind";
			a.o.irq_kinds = !strcmp(optarg, "intx") ? SIO_IRQ_F(SIO_IRQ_INTX) :
					!strcmp(optarg, "msi") ? SIO_IRQ_F(SIO_IRQ_MSI) :
					!strcmp(optarg, "msix") ? SIO_IRQ_F(SIO_IRQ_MSIX) : 0;
			if (!a.o.irq_kinds && strcmp(optarg, "any"))
				rc = sio_err_set(EINVAL, "'%s' is not intx, msi, msix or any", optarg);
			break;
		case 'h': usage(stdout); return 0;
		case O_VERSION: printf("edu-dma (smartio) %s\n", EDU_DMA_VERSION); return 0;
		default: usage(stderr); return 2;
		}
		if (rc) {
			fprintf(stderr, "edu-dma: %s: %s\n", opt, sio_errmsg());
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "edu-dma: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!a.nfacts)
		a.facts[a.nfacts++] = 10;
	return run(&a);
}
