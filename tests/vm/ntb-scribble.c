/* SPDX-License-Identifier: MIT */
/*
 * A hostile port of ntb_hw_ivshmem, for the NTB vm suite (ntb-suite.sh): it
 * maps BAR2 of the ivshmem function through sysfs (the driver unbound here,
 * so the region is not busy) and rewrites the layout's descriptor and every
 * port's slot for a while, in rounds, while the other guests' drivers run:
 *
 *   offsets   the descriptor's magic and sizes kept, its slot and data
 *             offsets and the slot size pointed far beyond BAR2 (what made
 *             a driver that read them live access memory out of bounds)
 *   random    the descriptor and the slots random
 *   ones      all ones
 *   slots     the descriptor as it was, every slot random but its magic
 *   zeros     all zeros
 *
 * and leaves them random. The others' kernels must report nothing but their
 * links going down.
 *
 *   ntb-scribble RESOURCE2 SECONDS
 *   ntb-scribble RESOURCE2 clear      zero BAR2's first MiB
 *   ntb-scribble RESOURCE2 is-clear   exit 0 if its first MiB is zero
 *
 * Exits 0 once done, 1 when BAR2 cannot be mapped, holds no layout or (for
 * is-clear) is not clear, 2 on bad usage.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

/* struct ivntb_desc and ivntb_slot (kernel/ntb_hw_ivshmem/ntb_hw_ivshmem.h) */
#define DESC_MAGIC		0x313042544e4f4953ULL
#define SLOT_MAGIC		0x544f4c5342544e49ULL
#define OFF_PORTS		12
#define OFF_SLOT_OFFSET		40
#define OFF_SLOT_SIZE		48
#define OFF_DATA_OFFSET		56

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t rd64(volatile uint8_t *p)
{
	return *(volatile uint64_t *)p;
}

static void wr64(volatile uint8_t *p, uint64_t v)
{
	*(volatile uint64_t *)p = v;
}

static void fill(volatile uint8_t *p, size_t len, int how)
{
	size_t i;

	for (i = 0; i + 8 <= len; i += 8)
		wr64(p + i, how == 0 ? 0 : how == 1 ? ~0ULL : next());
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	volatile uint8_t *shm;
	uint8_t *orig;
	uint64_t slot_off, slot_size, end, off, len;
	unsigned int ports, p, rounds = 0;
	double until;
	struct stat st;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: ntb-scribble RESOURCE2 SECONDS|clear|is-clear\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_SYNC);
	if (fd < 0 || fstat(fd, &st)) {
		perror(argv[1]);
		return 1;
	}
	/*
	 * Only the start of BAR2, where the layout's header lies. PAT may
	 * still track the peers' windows as write-combining (NTB clients map
	 * them so, and in the vm suite some of those entries outlive the
	 * clients), and an uncached map of the whole BAR would conflict.
	 */
	len = st.st_size < (1 << 20) ? st.st_size : 1 << 20;
	shm = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (shm == MAP_FAILED) {
		perror("mmap BAR2");
		return 1;
	}
	end = len;
	if (!strcmp(argv[2], "clear")) {
		fill(shm, end, 0);
		return 0;
	}
	if (!strcmp(argv[2], "is-clear")) {
		for (off = 0; off + 8 <= end; off += 8)
			if (rd64(shm + off)) {
				printf("BAR2 is written at %llu\n",
				       (unsigned long long)off);
				return 1;
			}
		return 0;
	}
	if (rd64(shm) != DESC_MAGIC) {
		fprintf(stderr, "BAR2 holds no ntb_hw_ivshmem layout\n");
		return 1;
	}
	ports = *(volatile uint32_t *)(shm + OFF_PORTS);
	slot_off = rd64(shm + OFF_SLOT_OFFSET);
	slot_size = rd64(shm + OFF_SLOT_SIZE);
	end = rd64(shm + OFF_DATA_OFFSET);	/* the descriptor and every slot */
	if (ports > 8 || end > (uint64_t)st.st_size || slot_off + ports * slot_size > end) {
		fprintf(stderr, "BAR2's layout is not one to scribble over\n");
		return 1;
	}
	if (end > len) {
		munmap((void *)shm, len);
		shm = mmap(NULL, end, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (shm == MAP_FAILED) {
			perror("mmap BAR2's header");
			return 1;
		}
	}
	orig = malloc(end);
	if (!orig)
		return 1;
	memcpy(orig, (void *)shm, end);
	printf("scribbling over %llu bytes of BAR2 (the descriptor, %u slots) for %s s\n",
	       (unsigned long long)end, ports, argv[2]);
	fflush(stdout);
	rng ^= (uint64_t)time(NULL);
	until = now() + atof(argv[2]);
	while (now() < until) {
		switch (rounds++ % 5) {
		case 0:	/* magic and sizes as they were, offsets out of bounds */
			memcpy((void *)shm, orig, end);
			wr64(shm + OFF_SLOT_OFFSET, 1ULL << 40);
			wr64(shm + OFF_SLOT_SIZE, 1ULL << 36);
			wr64(shm + OFF_DATA_OFFSET, ~0ULL << 12);
			break;
		case 1:
			fill(shm, end, 2);
			break;
		case 2:
			fill(shm, end, 1);
			break;
		case 3:	/* the descriptor back, every slot random but its magic */
			memcpy((void *)shm, orig, slot_off);
			fill(shm + slot_off, end - slot_off, 2);
			for (p = 0; p < ports; p++)
				wr64(shm + slot_off + p * slot_size, SLOT_MAGIC);
			break;
		case 4:
			fill(shm, end, 0);
			break;
		}
		usleep(300 * 1000);	/* a few of the others' link polls */
	}
	fill(shm, end, 2);
	printf("scribbled %u rounds\n", rounds);
	return 0;
}
