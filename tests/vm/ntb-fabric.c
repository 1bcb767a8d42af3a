/* SPDX-License-Identifier: MIT */
/*
 * The core's segments, notifications and events across kernels, for the
 * ntb-fabric vm suite (ntb-fabric-suite.sh): each guest runs its part, on
 * the fabric $SMARTIO_FABRIC, as the node of its NTB port.
 *
 *   ntb-fabric seg-make NODE ID BYTE      a kept 64 KiB segment on NODE (any
 *                                         node's memory), filled with BYTE
 *   ntb-fabric seg-check NODE ID BYTE     it reads BYTE everywhere; then it goes
 *   ntb-fabric wait ID                    a segment here; sleep until its word 0
 *                                         moves (60 s at most): woken, and how
 *                                         many doorbells this kernel's node
 *                                         service took meanwhile
 *   ntb-fabric notify NODE ID             store to that word and notify
 *   ntb-fabric event-wait NODE            wait for the event of NODE's link
 *                                         going down (60 s at most)
 *   ntb-fabric seg-make-at NODE ID BYTE FILE
 *                                         join now, then once FILE exists
 *                                         (180 s at most) seg-make, saying
 *                                         how long it took
 *   ntb-fabric seg-watch NODE ID BYTE ADAPTER FILE
 *                                         map that segment through ADAPTER,
 *                                         say its connection, then read it
 *                                         whole every 50 ms until FILE
 *                                         exists (180 s at most): any byte
 *                                         not BYTE fails, with when
 *   ntb-fabric xlat-check NODE ID BYTE own|pool|either
 *                                         connect to that segment: it reads
 *                                         BYTE, its connection (its info,
 *                                         smartio status) says own window or
 *                                         pool; own: the window is the
 *                                         segment's 64 KiB (mapping past it
 *                                         is refused), BYTE ^ 0xff stored
 *                                         through it, and once disconnected
 *                                         its owner's service frees it;
 *                                         either: whichever the connection
 *                                         took, checked as such, a pool
 *                                         window with the owner's reason
 *   ntb-fabric cc-off DEVICE              NVMe device DEVICE disabled behind its
 *                                         manager's back: a shared borrow
 *                                         stores 0 to CC, and CSTS.RDY clears
 *                                         (10 s at most)
 *
 * Prints what it saw; exits 0 when it is what was expected, 1 otherwise.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include <smartio/smartio.h>
#include "internal.h"
#include "winfab/winfab.h"
#include "ntb/ntb.h"

#define SEG_SIZE	(64 << 10)

static struct sio_fabric *f;

static int fail(const char *what)
{
	printf("FAIL %s: %s\n", what, sio_errmsg());
	return 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int seg_make(int node, uint32_t id, int byte)
{
	struct sio_segment *s;
	void *p;

	if (sio_segment_create_on(f, node, id, SEG_SIZE, SIO_SEG_F_KEEP, &s) ||
	    sio_segment_map(s, &p))
		return fail("segment");
	memset(p, byte, SEG_SIZE);
	printf("segment %u on node %d (made by node %d): %d KiB of 0x%02x\n", id, node,
	       sio_fabric_node_id(f), SEG_SIZE >> 10, byte);
	sio_segment_leave(s);	/* kept, ownerless: it outlives this process */
	return 0;
}

static int seg_check(int node, uint32_t id, int byte)
{
	struct sio_segment *s;
	unsigned char *p;
	size_t i;

	if (sio_segment_connect(f, node, id, &s) || sio_segment_map(s, (void **)&p))
		return fail("connect");
	for (i = 0; i < SEG_SIZE && p[i] == byte; i++)
		;
	if (i < SEG_SIZE) {
		printf("FAIL segment %u of node %d: byte %zu is 0x%02x, not 0x%02x\n", id, node, i,
		       p[i], byte);
		return 1;
	}
	printf("segment %u of node %d read from node %d: %d KiB of 0x%02x\n", id, node,
	       sio_fabric_node_id(f), SEG_SIZE >> 10, byte);
	sio_segment_close(s);
	/* adopted (the kept segment, ownerless), then removed with its handle */
	if (sio_segment_create_on(f, node, id, SEG_SIZE, SIO_SEG_F_KEEP, &s))
		return fail("adopt");
	sio_segment_close(s);
	return 0;
}

/* seg_make() by a process that joined before @go was there. */
static int seg_make_at(int node, uint32_t id, int byte, const char *go)
{
	uint64_t t0 = now_ms(), t;
	int ret;

	printf("joined as node %d, waiting for %s\n", sio_fabric_node_id(f), go);
	fflush(stdout);
	while (access(go, F_OK) && now_ms() - t0 < 180000)
		usleep(50000);
	t = now_ms();
	ret = seg_make(node, id, byte);
	printf("%s after %.3f s\n", ret ? "failed" : "made", (now_ms() - t) / 1e3);
	return ret;
}

/* The first byte of @p that is not @byte, or SEG_SIZE. */
static size_t first_other(const volatile unsigned char *p, int byte)
{
	size_t i;

	for (i = 0; i < SEG_SIZE && p[i] == byte; i++)
		;
	return i;
}

static int seg_watch(int node, uint32_t id, int byte, int adapter, const char *stop)
{
	struct sio_segment_info si;
	struct sio_segment *s;
	unsigned char *p;
	uint64_t t0 = now_ms(), reads = 0;
	size_t i = SEG_SIZE;

	if (sio_segment_connect(f, node, id, &s) || sio_segment_map_adapter(s, adapter, (void **)&p) ||
	    sio_segment_info(s, &si))
		return fail("connect");
	printf("segment %u of node %d mapped through adapter %d; connection: %s\n", id, node,
	       adapter, si.reach);
	fflush(stdout);
	while (access(stop, F_OK) && now_ms() - t0 < 180000) {
		if ((i = first_other(p, byte)) < SEG_SIZE)
			break;
		reads++;
		usleep(50000);
	}
	if (i < SEG_SIZE)
		printf("FAIL segment %u of node %d through adapter %d: byte %zu is 0x%02x, not 0x%02x, %.1f s in, after %llu whole reads\n",
		       id, node, adapter, i, p[i], byte, (now_ms() - t0) / 1e3,
		       (unsigned long long)reads);
	else
		printf("segment %u of node %d through adapter %d: %llu whole reads in %.1f s, every byte 0x%02x\n",
		       id, node, adapter, (unsigned long long)reads, (now_ms() - t0) / 1e3, byte);
	sio_segment_close(s);
	return i < SEG_SIZE || !reads;
}

/* The doorbells this kernel's node service took for the fabric. */
static uint64_t interrupts(void)
{
	struct wf_fabric *s = f->be;

	return s && s->wake ? atomic_load(&s->wake->interrupts) : 0;
}

static int wait_word(uint32_t id)
{
	struct sio_segment *s;
	volatile uint32_t *w;
	uint64_t t0, t1, i0;
	int ret;

	if (sio_segment_create(f, id, 4096, 0, &s) || sio_segment_map(s, (void **)&w))
		return fail("segment");
	i0 = interrupts();
	printf("waiting on segment %u of node %d\n", id, sio_fabric_node_id(f));
	fflush(stdout);
	t0 = now_ms();
	while (!*w && now_ms() - t0 < 60000)
		if ((ret = sio_segment_wait(s, 0, 0, 60000ull * 1000000)) && ret != -ETIMEDOUT)
			return fail("wait");
	t1 = now_ms();
	/*
	 * The waiter looks at the word between sleeps too: it may see the
	 * store before the doorbell's interrupt has come through the node
	 * service. The interrupt must come all the same (bounded wait).
	 */
	while (interrupts() == i0 && now_ms() - t1 < 10000)
		usleep(10000);
	printf("word %u after %llu ms; this kernel took %llu doorbell interrupt(s) (waited %llu ms more for the first)\n",
	       *w, (unsigned long long)(t1 - t0), (unsigned long long)(interrupts() - i0),
	       (unsigned long long)(now_ms() - t1));
	return *w == 0x600d && interrupts() > i0 ? 0 : 1;
}

static int notify(int node, uint32_t id)
{
	struct sio_segment *s;
	volatile uint32_t *w;

	if (sio_segment_connect(f, node, id, &s) || sio_segment_map(s, (void **)&w))
		return fail("connect");
	__atomic_store_n(w, 0x600d, __ATOMIC_RELEASE);
	printf("notified segment %u of node %d: %d woken here\n", id, node,
	       sio_segment_notify(s, 0));
	return 0;
}

static int event_wait(int node)
{
	struct pollfd pf = { .fd = sio_event_fd(f), .events = POLLIN };
	struct sio_event ev[8];
	uint64_t t0 = now_ms();

	printf("listening for node %d's link going down\n", node);
	fflush(stdout);
	while (now_ms() - t0 < 60000) {
		int n;

		poll(&pf, 1, 1000);
		n = sio_event_read(f, ev, 8);
		for (int i = 0; i < n; i++)
			if (ev[i].type == SIO_EV_LINK_DOWN && ev[i].node == node) {
				printf("node %d's link went down (event from pid %d of node %d)\n",
				       node, ev[i].pid, ev[i].node);
				return 0;
			}
	}
	printf("FAIL no link-down event for node %d within 60 s\n", node);
	return 1;
}

/* smartio status's word on how node @me reaches segment @id of @node. */
static bool status_says(int node, uint32_t id, const char *what)
{
	struct sio_fabric_status *st;
	bool said = false;

	if (sio_fabric_status_get(f, &st))
		return false;
	for (int i = 0; i < st->nsegments; i++)
		if (st->segments[i].info.node == node && st->segments[i].info.id == id) {
			printf("status: segment %u of node %d: %s\n", id, node, st->segments[i].info.reach);
			said = strstr(st->segments[i].info.reach, what) != NULL;
		}
	sio_fabric_status_close(st);
	return said;
}

/* The own window @w of port @node: exactly the segment, nothing past it. */
static int window_is_segment(int node, uint32_t w)
{
	struct ntbsrc *n = ((struct wf_fabric *)f->be)->priv;
	uint64_t off, size;
	void *va;
	int ret;

	if (sio__ntb_window_of(n, node, w, &off, &size))
		return fail("window");
	ret = ntbdev_mmap(n->dev, NULL, off, size + 4096, &va);
	printf("window %u of port %d: %llu KiB; mapping 4 KiB past it: %s\n", w, node,
	       (unsigned long long)(size >> 10), ret ? strerror(-ret) : "mapped (!)");
	if (!ret)
		munmap(va, size + 4096);
	return size == SEG_SIZE && ret ? 0 : 1;
}

/* After a disconnect: port @node's service clears window @w within 20 s. */
static int window_freed(const struct sio_segment *s, int node, int w)
{
	const struct wf_hdr *h = ((struct wf_fabric *)f->be)->hdr;
	uint64_t t0 = now_ms();

	while (now_ms() - t0 < 20000) {
		bool held = false;

		for (int i = 0; i < WF_OWNWINS; i++) {
			const struct wf_ownwin *x = &h->ownwin[i];

			held |= x->owner == node && x->peer == sio_fabric_node_id(f) &&
				x->seg == s->slot && __atomic_load_n(&x->widx, __ATOMIC_ACQUIRE) == w;
		}
		if (!held) {
			printf("window %d freed by port %d's service %llu ms after the disconnect\n", w,
			       node, (unsigned long long)(now_ms() - t0));
			return 0;
		}
		usleep(50000);
	}
	printf("FAIL window %d of port %d still held 20 s after the disconnect\n", w, node);
	return 1;
}

/*
 * @want: "own", "pool", or "either" where the hardware's rule decides by
 * the segment's bus address (switchtec: aligned to its size's power of two).
 */
static int xlat_check(int node, uint32_t id, int byte, const char *want)
{
	bool either = !strcmp(want, "either"), own = !strcmp(want, "own");
	const char *pool_why = either ? "pool window (port " :
		"pool window (port 2's hardware driver translates no window per segment)";
	struct sio_segment_info si;
	struct sio_segment *s;
	unsigned char *p;
	const char *wp;
	size_t i;
	int w = -1, ret = 0;

	if (sio_segment_connect(f, node, id, &s) || sio_segment_map(s, (void **)&p) ||
	    sio_segment_info(s, &si))
		return fail("connect");
	for (i = 0; i < SEG_SIZE && p[i] == byte; i++)
		;
	printf("segment %u of node %d: %s; connection: %s\n", id, node,
	       i == SEG_SIZE ? "reads what its owner wrote" : "FAIL reads other bytes", si.reach);
	/* the window's number: "inbound window W", or outbound "outbound window W" */
	if ((own || either) && ((wp = strstr(si.reach, "inbound window ")) || (wp = strstr(si.reach, "outbound window "))))
		w = atoi(wp + strcspn(wp, "0123456789"));
	own = either ? w > 0 : own;
	if (i < SEG_SIZE || own != (w > 0) || !status_says(node, id, own ? "own window" : pool_why))
		ret = 1;
	if (own && !ret)
		ret = window_is_segment(node, (uint32_t)w);
	if ((own || either) && !ret)
		memset(p, byte ^ 0xff, SEG_SIZE);	/* its owner checks it, and its neighbour */
	sio_segment_unmap(s);
	if (own && !ret)
		ret = window_freed(s, node, w);
	sio_segment_close(s);
	return ret;
}

static int cc_off(uint32_t id)
{
	struct sio_segment *bar;
	struct sio_device *dev;
	volatile uint32_t *regs;
	uint64_t end = now_ms() + 10000;
	int ret = 1;

	if (sio_device_borrow(f, id, SIO_BORROW_SHARED, &dev))
		return fail("borrow");
	if (sio_device_bar(dev, 0, &bar) || sio_segment_map(bar, (void **)&regs)) {
		sio_device_close(dev);
		return fail("map BAR0");
	}
	regs[0x14 / 4] = 0;				/* CC: EN clear */
	while ((regs[0x1c / 4] & 1) && now_ms() < end)	/* CSTS.RDY */
		usleep(10000);
	ret = regs[0x1c / 4] & 1;
	printf("%s device %u: CC 0x%08x, CSTS 0x%08x (BAR0 %s)\n", ret ? "FAIL" : "disabled",
	       id, regs[0x14 / 4], regs[0x1c / 4], sio_device_bar_path(dev, 0));
	sio_segment_close(bar);
	sio_device_close(dev);
	return ret;
}

int main(int argc, char **argv)
{
	int ret = 2;

	if (argc < 3) {
		fprintf(stderr, "usage: ntb-fabric seg-make|seg-check NODE ID BYTE | seg-make-at NODE ID BYTE FILE | seg-watch NODE ID BYTE ADAPTER FILE | wait ID | notify NODE ID | event-wait NODE | xlat-check NODE ID BYTE own|pool|either | cc-off DEVICE\n");
		return 2;
	}
	if (sio_fabric_open(NULL, -1, &f))
		return fail("open");
	if (!strcmp(argv[1], "seg-make") && argc == 5)
		ret = seg_make(atoi(argv[2]), (uint32_t)strtoul(argv[3], NULL, 0), (int)strtol(argv[4], NULL, 0));
	else if (!strcmp(argv[1], "seg-check") && argc == 5)
		ret = seg_check(atoi(argv[2]), (uint32_t)strtoul(argv[3], NULL, 0), (int)strtol(argv[4], NULL, 0));
	else if (!strcmp(argv[1], "wait"))
		ret = wait_word((uint32_t)strtoul(argv[2], NULL, 0));
	else if (!strcmp(argv[1], "notify") && argc == 4)
		ret = notify(atoi(argv[2]), (uint32_t)strtoul(argv[3], NULL, 0));
	else if (!strcmp(argv[1], "event-wait"))
		ret = event_wait(atoi(argv[2]));
	else if (!strcmp(argv[1], "seg-make-at") && argc == 6)
		ret = seg_make_at(atoi(argv[2]), (uint32_t)strtoul(argv[3], NULL, 0),
				  (int)strtol(argv[4], NULL, 0), argv[5]);
	else if (!strcmp(argv[1], "seg-watch") && argc == 7)
		ret = seg_watch(atoi(argv[2]), (uint32_t)strtoul(argv[3], NULL, 0),
				(int)strtol(argv[4], NULL, 0), atoi(argv[5]), argv[6]);
	else if (!strcmp(argv[1], "xlat-check") && argc == 6)
		ret = xlat_check(atoi(argv[2]), (uint32_t)strtoul(argv[3], NULL, 0),
				 (int)strtol(argv[4], NULL, 0), argv[5]);
	else if (!strcmp(argv[1], "cc-off") && argc == 3)
		ret = cc_off((uint32_t)strtoul(argv[2], NULL, 0));
	sio_fabric_close(f);
	return ret;
}
