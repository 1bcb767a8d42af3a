/* SPDX-License-Identifier: MIT */
/*
 * `smartio ntb`: the NTB devices of smartio_ntb (docs/ntb.md), on nothing of
 * smartio's but the uapi header <smartio/ntb.h> (and prog.h, the command
 * line every program shares).
 *
 *   status [DEV]                 every /dev/smartio-ntbN, or DEV
 *   ping PORT | ping --echo      doorbell round trips with the port
 *   bench PORT | bench --serve   stores through an outbound window, checked
 *
 * ping and bench talk between two nodes by the convention of this tool: the
 * doorbell bit of a port is its port number; port P writes its requests into
 * the peer's scratchpad 2P and its answers into scratchpad 2P + 1, so that a
 * pair can talk both ways at once (ports must be below the doorbell bits and
 * half the scratchpads). A message is a 32-bit word: a kind in the top 4
 * bits, a value below.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <stdbool.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <smartio/ntb.h>
#include "clock.h"
#include "prog.h"
#include "smartio-ntb.h"

#define REQ(port)	(2 * (port))	/* the scratchpad of port's requests */
#define ANS(port)	(2 * (port) + 1)	/* and of its answers */
#define MSG(kind, v)	((uint32_t)(kind) << 28 | ((uint32_t)(v) & 0x0fffffff))
#define MSG_KIND(m)	((m) >> 28)
#define MSG_VAL(m)	((m) & 0x0fffffff)
enum { M_PING = 1, M_PONG, M_READY, M_DONE, M_GOOD, M_BAD };

/* One open NTB device and what the tool knows of it. */
struct ntbdev {
	const char *path;
	int fd;
	struct sio_ntb_info info;
};

static void usage(FILE *o)
{
	fprintf(o,
"usage: smartio ntb status [DEV] [--json]  the NTB devices of smartio_ntb: ports, links,\n"
"                                          windows, doorbells, scratchpads\n"
"       smartio ntb ping PORT [--count N]  doorbell round trips with PORT, which runs\n"
"       smartio ntb ping --echo [--count N]  this: answer N pings\n"
"       smartio ntb bench PORT [--rounds N] stores into PORT's buffer through an\n"
"       smartio ntb bench --serve [--rounds N]  outbound window; PORT checks the data\n"
"       smartio ntb serve [--dev DEV]      this kernel's node of an ntb fabric\n"
"                                          (SMARTIO_FABRIC_BACKEND=ntb), until a signal\n"
"       smartio ntb serve ... [--ready-file F] [--background]   F: our pid, once\n"
"                                          serving; --background: return then\n"
"       smartio ntb serve --dev DEV0 --dev DEV1   a second NTB: adapter 1 of\n"
"                                          this node, its links the adapter's\n"
"Options: --dev DEV (/dev/smartio-ntbN or N; default 0), --timeout TIME (each\n"
"wait; default 10s, a bare number is ms). Load smartio_ntb on an NTB hardware\n"
"driver first (docs/ntb.md).\n"
"Exit status: 0 done, 1 failed, 2 usage error.\n");
}

static int ntb_open(struct ntbdev *d, const char *dev)
{
	static char path[64];

	if (dev && dev[0] != '/') {
		snprintf(path, sizeof(path), SIO_NTB_DEV_FMT, (int)prog_u64("--dev", dev, 0, 63));
		dev = path;
	}
	d->path = dev ? dev : "/dev/smartio-ntb0";
	d->fd = open(d->path, O_RDWR | O_CLOEXEC);
	if (d->fd < 0)
		return prog_fail("ntb: %s: %s (is smartio_ntb loaded, and bound to an NTB device?)",
				 d->path, strerror(errno));
	if (ioctl(d->fd, SIO_NTB_IOC_INFO, &d->info)) {
		/* a smartio_ntb of uapi 2 or older knows no request of this magic */
		if (errno == ENOTTY)
			prog_fail("ntb: %s: its smartio_ntb is older than uapi version %d (rmmod smartio_ntb, then load the smartio_ntb of this build: docs/ntb.md)",
				  d->path, SIO_NTB_UAPI_VERSION);
		else
			prog_fail("ntb: %s: %s", d->path, strerror(errno));
		close(d->fd);
		return PROG_FAIL;
	}
	return 0;
}

/* One peer, as text or into @arr. */
static void status_peer(struct ntbdev *d, unsigned int pidx, struct json_object *arr)
{
	struct sio_ntb_peer p = { .pidx = pidx };
	struct sio_ntb_mw mw = { .pidx = pidx };
	struct json_object *x = arr ? pj_push_obj(arr) : NULL;
	bool lim;

	if (ioctl(d->fd, SIO_NTB_IOC_PEER, &p)) {
		if (x)
			pj_str(x, "error", strerror(errno));
		else
			printf("  peer %u: %s\n", pidx, strerror(errno));
		return;
	}
	lim = p.link_up && p.mws && !ioctl(d->fd, SIO_NTB_IOC_MW, &mw);
	if (x) {
		pj_int(x, "pidx", pidx);
		pj_int(x, "port", p.port);
		pj_bool(x, "link_up", p.link_up);
		pj_int(x, "inbound_windows", p.mws);
		if (lim) {
			pj_u64(x, "window_size_max", mw.size_max);
			pj_u64(x, "window_addr_align", mw.addr_align);
		}
		return;
	}
	printf("  peer %u: port %d, link %s", pidx, p.port, p.link_up ? "up" : "down");
	if (lim)
		printf(", %u inbound windows of %llu KiB (translations aligned to %llu KiB)", p.mws,
		       (unsigned long long)mw.size_max >> 10, (unsigned long long)mw.addr_align >> 10);
	else if (p.mws)
		printf(", %u inbound windows", p.mws);
	printf("\n");
}

static void status_json(struct ntbdev *d, struct json_object *x)
{
	struct sio_ntb_info *i = &d->info;
	struct json_object *peers;

	pj_str(x, "device", d->path);
	pj_str(x, "name", i->name);
	pj_str(x, "driver", i->driver);
	pj_int(x, "uapi", i->version);
	pj_int(x, "port", i->port);
	pj_int(x, "outbound_windows", i->peer_mws);
	pj_int(x, "outbound_windows_per_peer", i->mws_per_peer);
	pj_u64(x, "doorbells", i->db_valid);
	pj_int(x, "doorbell_vectors", i->db_vectors);
	pj_int(x, "scratchpads", i->spads);
	pj_int(x, "message_registers", i->msgs);
	pj_bool(x, "inbound_translation", i->flags & SIO_NTB_F_INBOUND_XLAT);
	pj_bool(x, "outbound_translation", i->flags & SIO_NTB_F_OUTBOUND_XLAT);
	pj_bool(x, "bar_translation_emulated", i->flags & SIO_NTB_F_BAR_XLAT_EMULATED);
	peers = pj_arr(x, "peers");
	for (unsigned int p = 0; p < i->peers; p++)
		status_peer(d, p, peers);
}

static int status_one(const char *path, struct json_object *arr)
{
	struct ntbdev d;
	struct sio_ntb_info *i = &d.info;

	if (ntb_open(&d, path))
		return PROG_FAIL;
	if (arr) {
		status_json(&d, pj_push_obj(arr));
		close(d.fd);
		return 0;
	}
	printf("%s: %s (%s), port %d, %u peers, uapi %u\n", d.path, i->name, i->driver,
	       i->port, i->peers, i->version);
	for (unsigned int p = 0; p < i->peers; p++)
		status_peer(&d, p, NULL);
	printf("  outbound windows: %u (%u per peer); doorbells: %d bits on %u vectors;"
	       " scratchpads: %u; message registers: %u\n", i->peer_mws, i->mws_per_peer,
	       __builtin_popcountll(i->db_valid), i->db_vectors, i->spads, i->msgs);
	printf("  translations: inbound %s, outbound %s%s\n",
	       i->flags & SIO_NTB_F_INBOUND_XLAT ? "yes" : "no",
	       i->flags & SIO_NTB_F_OUTBOUND_XLAT ? "yes" : "no",
	       i->flags & SIO_NTB_F_BAR_XLAT_EMULATED ?
	       "; onto a device's BAR: emulated by the driver, where it accepts one" : "");
	close(d.fd);
	return 0;
}

static int cmd_status(int argc, char **argv)
{
	static const struct option o[] = { { "json", 0, 0, 'j' }, PROG_LONGOPTS, { 0 } };
	struct json_object *arr = NULL;
	int ret = 0, opt;
	glob_t g;

	while ((opt = prog_getopt(argc, argv, "h", o)) != -1)
		if (opt == 'j' && !arr)
			arr = json_object_new_array();
	if (argc - optind > 1)
		prog_usage_error("ntb status: one device at most, not '%s'", argv[optind + 1]);
	if (optind < argc) {
		ret = status_one(argv[optind], arr);
	} else if (glob("/dev/smartio-ntb*", 0, NULL, &g)) {
		json_object_put(arr);
		return prog_fail("ntb: no /dev/smartio-ntbN (load smartio_ntb on an NTB hardware driver)");
	} else {
		for (size_t k = 0; k < g.gl_pathc; k++)
			ret |= status_one(g.gl_pathv[k], arr);
		globfree(&g);
	}
	if (arr && !ret)
		return prog_json_print(stdout, arr);
	json_object_put(arr);
	return ret;
}

/*
 * Wait up to @ms for doorbell bit @bit (other bits are other ports'); poll()
 * sleeps, nothing spins. 0, or -ETIMEDOUT, -ENODEV (the device went).
 */
static int wait_bit(struct ntbdev *d, unsigned int bit, int ms)
{
	long long end = (long long)sio__now_ns() + ms * 1000000LL;
	struct sio_ntb_event ev;

	for (;;) {
		struct pollfd p = { .fd = d->fd, .events = POLLIN };
		long long left = (end - (long long)sio__now_ns()) / 1000000;

		if (left < 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)left + 1) < 0 && errno != EINTR)
			return -errno;
		if (p.revents & (POLLHUP | POLLERR))
			return -ENODEV;
		if (!(p.revents & POLLIN))
			continue;
		if (read(d->fd, &ev, sizeof(ev)) == (ssize_t)sizeof(ev) && (ev.db >> bit & 1))
			return 0;
	}
}

static int spad(struct ntbdev *d, unsigned int pidx, unsigned int sidx, uint32_t *val, int write)
{
	struct sio_ntb_spad s = { .pidx = pidx, .sidx = sidx, .value = write ? *val : 0 };

	if (ioctl(d->fd, write ? SIO_NTB_IOC_SPAD_WRITE : SIO_NTB_IOC_SPAD_READ, &s))
		return -errno;
	*val = s.value;
	return 0;
}

static int ring(struct ntbdev *d, unsigned int port)
{
	uint64_t bits = 1ULL << port;

	return ioctl(d->fd, SIO_NTB_IOC_DB_RING, &bits) ? -errno : 0;
}

/* The peer index of @port, once its link is up (within @ms); -1, said why. */
static int peer_of(struct ntbdev *d, int port, int ms)
{
	long long end = (long long)sio__now_ns() + ms * 1000000LL;

	if (port < 0 || port >= 64 || !(d->info.db_valid >> port & 1) || ANS(port) >= (int)d->info.spads ||
	    d->info.port >= 64 || !(d->info.db_valid >> d->info.port & 1) ||
	    ANS(d->info.port) >= (int)d->info.spads) {
		prog_fail("ntb: ports %d and %d need doorbell bits of their numbers and scratchpads of twice them (this NTB has %u scratchpads, bits %#llx)",
			  port, d->info.port, d->info.spads, (unsigned long long)d->info.db_valid);
		return -1;
	}
	do {
		for (unsigned int i = 0; i < d->info.peers; i++) {
			struct sio_ntb_peer p = { .pidx = i };

			if (!ioctl(d->fd, SIO_NTB_IOC_PEER, &p) && p.port == port && p.link_up)
				return (int)i;
		}
		usleep(20000);
	} while ((long long)sio__now_ns() < end);
	prog_fail("ntb: %s: no link with port %d within %d ms (is it up, with smartio_ntb loaded?)",
		  d->path, port, ms);
	return -1;
}

/* Send @m to @port (peer @pidx) in its scratchpad @sidx, and ring its bit. */
static int send_msg(struct ntbdev *d, int pidx, int port, int sidx, uint32_t m)
{
	int ret = spad(d, pidx, sidx, &m, 1);

	return ret ? ret : ring(d, port);
}

static int report(const char *what, int ret)
{
	return prog_fail("ntb: %s: %s", what, strerror(-ret));
}

static int ping_client(struct ntbdev *d, int port, unsigned long count, int ms)
{
	int pidx = peer_of(d, port, ms), ret;
	long long t, sum = 0, best = -1;
	uint32_t base = (uint32_t)sio__now_ns() & 0xfffff, got = 0;

	if (pidx < 0)
		return PROG_FAIL;
	for (unsigned long k = 1; k <= count; k++) {
		t = (long long)sio__now_ns();
		if ((ret = send_msg(d, pidx, port, REQ(d->info.port), MSG(M_PING, base + k))))
			return report("ping", ret);
		do {
			if ((ret = wait_bit(d, d->info.port, ms)))
				return report("waiting for the pong", ret);
			if ((ret = spad(d, SIO_NTB_LOCAL, ANS(port), &got, 0)))
				return report("reading the pong", ret);
		} while (got != MSG(M_PONG, base + k));
		t = (long long)sio__now_ns() - t;
		sum += t;
		best = best < 0 || t < best ? t : best;
	}
	printf("ping port %d: %lu round trips, mean %.1f us, best %.1f us\n", port, count,
	       sum / 1e3 / count, best / 1e3);
	return 0;
}

/* Answer @count pings, from whichever ports send them. */
static int ping_echo(struct ntbdev *d, int port, unsigned long count, int ms)
{
	uint32_t last[64] = { 0 }, m = 0;
	unsigned long done = 0;
	int ret;

	for (unsigned int p = 0; p < 64 && ANS(p) < d->info.spads; p++)
		spad(d, SIO_NTB_LOCAL, REQ(p), &last[p], 0);	/* older messages are not pings */
	printf("ping --echo: port %d answers\n", d->info.port);
	fflush(stdout);
	while (done < count) {
		if ((ret = wait_bit(d, d->info.port, ms)))
			return report("waiting for a ping", ret);
		for (unsigned int i = 0; i < d->info.peers; i++) {
			struct sio_ntb_peer p = { .pidx = i };

			if (ioctl(d->fd, SIO_NTB_IOC_PEER, &p) || !p.link_up || p.port >= 64 ||
			    ANS(p.port) >= (int)d->info.spads ||
			    spad(d, SIO_NTB_LOCAL, REQ(p.port), &m, 0) || m == last[p.port] ||
			    MSG_KIND(m) != M_PING)
				continue;
			last[p.port] = m;
			if ((ret = send_msg(d, i, p.port, ANS(d->info.port), MSG(M_PONG, MSG_VAL(m)))))
				return report("pong", ret);
			done++;
		}
	}
	printf("ping --echo: answered %lu pings\n", done);
	return 0;
}

/* The options of ping and bench: --dev, --count or --rounds, --timeout, a flag. */
struct args {
	const char *dev;
	unsigned long count;
	unsigned long ms;
	bool flag;	/* --echo, --serve */
	int port;
};

static void parse(int argc, char **argv, const char *flag, const char *countname, struct args *a)
{
	const struct option o[] = {
		{ "dev", 1, 0, 'd' }, { countname, 1, 0, 'c' }, { "timeout", 1, 0, 't' },
		{ flag, 0, 0, 'f' }, PROG_LONGOPTS, { 0 } };
	int opt;

	*a = (struct args){ .count = 10, .ms = 10000, .port = -1 };
	while ((opt = prog_getopt(argc, argv, "h", o)) != -1) {
		switch (opt) {
		case 'd': a->dev = optarg; break;
		case 'c': a->count = prog_u64(countname, optarg, 1, 1000000); break;
		case 't':
			a->ms = (uint64_t)(prog_time("--timeout", optarg, 1e-3, 1e-3, 3600) * 1e3 + 0.5);
			break;
		case 'f': a->flag = true; break;
		}
	}
	if (a->flag == (optind < argc) || argc - optind > 1)
		prog_usage_error("ntb %s: give a PORT, or --%s", argv[0], flag);
	if (optind < argc)
		a->port = (int)prog_u64("PORT", argv[optind], 0, 63);
}


/* The words round @r of port @port writes: different in every word, round and port. */
static uint64_t pattern(unsigned int r, int port, size_t i)
{
	return ((uint64_t)r << 40 | (uint64_t)port << 32) * 0x9e3779b97f4a7c15ULL + i;
}

/* Serve bench clients: a buffer for each, the data of each round checked. */
static int bench_serve(struct ntbdev *d, int port, unsigned long rounds, int ms)
{
	volatile uint64_t *buf[64] = { 0 };
	uint32_t last[64] = { 0 }, m = 0;
	size_t size[64] = { 0 };
	unsigned long done = 0;
	int ret;

	for (unsigned int p = 0; p < 64 && ANS(p) < d->info.spads; p++)
		spad(d, SIO_NTB_LOCAL, REQ(p), &last[p], 0);	/* older messages are not requests */
	printf("bench --serve: port %d serves\n", d->info.port);
	fflush(stdout);
	while (done < rounds) {
		if ((ret = wait_bit(d, d->info.port, ms)))
			return report("waiting for a bench client", ret);
		for (unsigned int i = 0; i < d->info.peers && i < 64; i++) {
			struct sio_ntb_peer p = { .pidx = i };
			struct sio_ntb_buf b = { .pidx = i, .widx = 0 };
			uint32_t reply;

			if (ioctl(d->fd, SIO_NTB_IOC_PEER, &p) || !p.link_up || p.port >= 64 ||
			    ANS(p.port) >= (int)d->info.spads ||
			    spad(d, SIO_NTB_LOCAL, REQ(p.port), &m, 0) || m == last[p.port])
				continue;
			last[p.port] = m;
			if (MSG_KIND(m) == M_READY && !buf[i]) {	/* a new client: its buffer */
				if (ioctl(d->fd, SIO_NTB_IOC_MW_ALLOC, &b))
					return report("allocating an inbound buffer", -errno);
				buf[i] = mmap(NULL, b.size, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd,
					      (off_t)b.mmap_offset);
				if (buf[i] == MAP_FAILED)
					return report("mapping the inbound buffer", -errno);
				size[i] = b.size;
			}
			if (MSG_KIND(m) == M_READY) {
				reply = MSG(M_READY, size[i] >> 10);
			} else if (MSG_KIND(m) == M_DONE && buf[i]) {
				size_t k, n = size[i] / 8;

				for (k = 0; k < n && buf[i][k] == pattern(MSG_VAL(m), p.port, k); k++)
					;
				if (k < n)
					fprintf(stderr, "bench --serve: round %u of port %d: word %zu of %zu is %#llx, not %#llx\n",
						MSG_VAL(m), p.port, k, n, (unsigned long long)buf[i][k],
						(unsigned long long)pattern(MSG_VAL(m), p.port, k));
				reply = MSG(k == n ? M_GOOD : M_BAD, MSG_VAL(m));
				done++;
			} else {
				continue;
			}
			if ((ret = send_msg(d, i, p.port, ANS(d->info.port), reply)))
				return report("answering", ret);
		}
	}
	printf("bench --serve: checked %lu rounds\n", done);
	return 0;
}

/* Send @m to port @port (peer @pidx) and wait for its answer. */
static int bench_ask(struct ntbdev *d, int pidx, int port, uint32_t m, int ms, uint32_t *answer)
{
	uint32_t none = 0;
	int ret = spad(d, SIO_NTB_LOCAL, ANS(port), &none, 1);	/* no answer of before */

	if (!ret)
		ret = send_msg(d, pidx, port, REQ(d->info.port), m);
	while (!ret) {
		if ((ret = wait_bit(d, d->info.port, ms)) ||
		    (ret = spad(d, SIO_NTB_LOCAL, ANS(port), answer, 0)))
			break;
		if (*answer)
			return 0;
	}
	return ret;
}

/* The outbound window that reaches inbound window 0 of peer @pidx, mapped. */
static volatile uint64_t *bench_window(struct ntbdev *d, int pidx, size_t *size)
{
	struct sio_ntb_peer_mw w = { .widx = (uint32_t)pidx * d->info.mws_per_peer };
	void *p;

	if (!d->info.mws_per_peer) {
		prog_fail("ntb bench: %u outbound windows do not divide among %u peers: which reaches the port is unknown",
			  d->info.peer_mws, d->info.peers);
		return NULL;
	}
	if (ioctl(d->fd, SIO_NTB_IOC_PEER_MW, &w)) {
		report("outbound window", -errno);
		return NULL;
	}
	*size = *size < w.size ? *size : w.size;
	p = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd, (off_t)w.mmap_offset);
	if (p == MAP_FAILED) {
		report("mapping the outbound window", -errno);
		return NULL;
	}
	return p;
}

static int bench_client(struct ntbdev *d, int port, unsigned long rounds, int ms)
{
	int pidx = peer_of(d, port, ms), ret;
	volatile uint64_t *win;
	long long t, ns = 0;
	uint32_t m;
	size_t size;

	if (pidx < 0)
		return PROG_FAIL;
	/* a value of its own, that no earlier request left in the scratchpad */
	if ((ret = bench_ask(d, pidx, port, MSG(M_READY, (long long)sio__now_ns() >> 10), ms, &m)))
		return report("asking for a buffer", ret);
	size = (size_t)MSG_VAL(m) << 10;
	if (!size || !(win = bench_window(d, pidx, &size)))
		return PROG_FAIL;
	for (unsigned long r = 1; r <= rounds; r++) {
		t = (long long)sio__now_ns();
		for (size_t i = 0; i < size / 8; i++)
			win[i] = pattern(r, d->info.port, i);
		/* the stores (write-combining) reach the window before the peer is told */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		ns += (long long)sio__now_ns() - t;
		if ((ret = bench_ask(d, pidx, port, MSG(M_DONE, r), ms, &m)))
			return report("waiting for the check", ret);
		if (m != MSG(M_GOOD, r))
			return prog_fail("ntb bench: round %lu: port %d found other data in its buffer", r, port);
	}
	printf("bench port %d: %lu rounds of %zu KiB stored through the outbound window, %.0f MB/s,"
	       " every round checked by port %d\n", port, rounds, size >> 10,
	       (double)size * rounds / (ns / 1e3), port);
	munmap((void *)win, size);
	return 0;
}

typedef int (*side_fn)(struct ntbdev *d, int port, unsigned long count, int ms);

/* ping and bench: the side that serves (with --@flag) or the one that asks PORT. */
static int cmd_sides(int argc, char **argv, const char *flag, const char *countname,
		     side_fn serve, side_fn ask)
{
	struct ntbdev d;
	struct args a;
	int ret;

	parse(argc, argv, flag, countname, &a);
	if (ntb_open(&d, a.dev))
		return PROG_FAIL;
	ret = (a.flag ? serve : ask)(&d, a.port, a.count, (int)a.ms);
	close(d.fd);
	return ret;
}

int sio_tool_ntb(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;

	optind = 0;	/* glibc: 0 restarts getopt afresh */
	if (!sub) {
		usage(stderr);
		return PROG_USAGE;
	}
	for (int i = 1; i < argc; i++)	/* this text, not smartio's, for any --help */
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help") || !strcmp(argv[i], "help")) {
			usage(stdout);
			return PROG_OK;
		}
	if (!strcmp(sub, "status"))
		return cmd_status(argc - 1, argv + 1);
	if (!strcmp(sub, "ping"))
		return cmd_sides(argc - 1, argv + 1, "echo", "count", ping_echo, ping_client);
	if (!strcmp(sub, "bench"))
		return cmd_sides(argc - 1, argv + 1, "serve", "rounds", bench_serve, bench_client);
	if (!strcmp(sub, "serve"))
		return sio_tool_ntb_serve(argc - 1, argv + 1);
	prog_usage_error("ntb: no subcommand '%s' (status, ping, bench, serve)", sub);
}
