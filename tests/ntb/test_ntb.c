/* SPDX-License-Identifier: MIT */
/*
 * The ntb backend where it differs from shm and shmwin, on the fake NTB of
 * one host (with-ntb.sh: a node service per port but the last): the
 * bootstrap in the scratchpads refused when it is garbage, damaged, of
 * another layout or stale, a window too small for the state, a translation
 * refused (said by the node service and by the peer it leaves out), a
 * window not translated yet refused until it is, a node without
 * its service, a segment living in its node's memory, a dead kernel's
 * segment and lock reclaimed once its leases stop (processes play separate
 * kernels: $SMARTIO_SHMWIN_KERNEL), one fabric per NTB, a second NTB of a
 * node as its adapter 1, a link up as the NTB says, the home's death taken
 * over by its standby, and two homes after a partition (one yields).
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <smartio/ntbserve.h>
#include "internal.h"
#include "ntb/ntb.h"

static char name[SIO_NAME_MAX];
static int served;	/* ports with a node service: 0 .. served - 1 */

static void setup(void)
{
	struct sio_fabric_config c = { .nodes = 4, .topology = SIO_TOPO_SWITCH };
	const char *e = getenv("SIO_NTB_SERVED");

	served = e ? atoi(e) : 4;
	setenv("SMARTIO_QUIET", "1", 1);
	setenv("SMARTIO_SHMWIN_LEASE_MS", "400", 1);
	setenv("SMARTIO_SHMWIN_KERNEL", "kernel-0", 1);
	snprintf(name, sizeof(name), "n-%d", getpid());
	cr_assert_eq(sio_fabric_create(name, &c), 0, "create: %s", sio_errmsg());
}

static pid_t serve_pid;	/* a node service a test started */
static pid_t serve2_pid;	/* and port 2's, where a test plays that port too */

static char home_name[SIO_NAME_MAX];	/* a take-over test's fabric, if one is left */
static void home_gone(void);

static void kill_service(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	*pid = 0;
}

static void teardown(void)
{
	kill_service(&serve_pid);
	kill_service(&serve2_pid);
	sio_fabric_destroy(name);
	/* a failed take-over test's fabric would make the next tests' create
	 * fail (one fabric per NTB) */
	if (home_name[0])
		home_gone();
}

static void nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* The fake NTB as port @port sees it, without taking the port (no link change). */
static struct ntbdev *port_dev(int port)
{
	const char *spec = getenv("SMARTIO_NTB_DEV");
	struct ntbdev *d;
	int fd;

	cr_assert(spec && !strncmp(spec, "fake:", 5), "run through with-ntb.sh");
	fd = open(spec + 5, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(sio__ntbdev_adopt(fd, port, spec, &d), 0, "%s", sio_errmsg());
	return d;
}

static uint32_t spad(struct ntbdev *d, uint32_t i, bool write, uint32_t v)
{
	struct sio_ntb_info info;
	struct sio_ntb_spad s = { .pidx = SIO_NTB_LOCAL, .value = v };

	cr_assert_eq(ntbdev_ioctl(d, SIO_NTB_IOC_INFO, &info), 0);
	s.sidx = info.spads - 4 + i;
	cr_assert_eq(ntbdev_ioctl(d, write ? SIO_NTB_IOC_SPAD_WRITE : SIO_NTB_IOC_SPAD_READ, &s), 0);
	return s.value;
}

/* Open node 1 and expect @err, with @msg in the message. */
static void refused(int err, const char *msg)
{
	struct sio_fabric *f;

	cr_assert_eq(sio_fabric_open(name, 1, &f), -err, "want %d: %s", -err, sio_errmsg());
	cr_assert(strstr(sio_errmsg(), msg), "'%s' in: %s", msg, sio_errmsg());
}

/* Does a line of @path hold @what (and @also, where not NULL), within @ms? */
static bool log_has(const char *path, const char *what, const char *also, int ms)
{
	char line[512];

	for (; ms > 0; ms -= 50, nap_ms(50)) {
		FILE *l = fopen(path, "r");
		bool seen = false;

		while (l && !seen && fgets(line, sizeof(line), l))
			seen = strstr(line, what) && (!also || strstr(line, also));
		if (l)
			fclose(l);
		if (seen)
			return true;
	}
	return false;
}

/* Port 0's service has published this test's fabric itself (it would write it again after). */
static void home_published(void)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/../serve0.log", getenv("SMARTIO_RUNDIR"));
	cr_assert(log_has(path, name, "is hosted here", 10000),
		  "port 0's service did not publish fabric '%s'", name);
}

Test(ntb, a_bad_bootstrap_is_refused_with_what_was_read, .init = setup, .fini = teardown)
{
	struct ntbdev *home = port_dev(0);
	struct sio_fabric *f;
	uint32_t w[4];

	home_published();

	for (uint32_t i = 0; i < 4; i++)
		w[i] = spad(home, i, false, 0);
	spad(home, 0, true, w[0] ^ 0x1);			/* the check byte */
	refused(EUCLEAN, "damaged bootstrap");
	spad(home, 0, true, (w[0] & ~0xff00u) | 0x0900u);	/* layout 9 */
	refused(EPROTO, "layout 9");
	spad(home, 0, true, w[0]);
	spad(home, 2, true, w[2] + 1);				/* another generation... */
	spad(home, 0, true, w[0] ^ (((w[2] + 1) ^ w[2]) & 0xff) ^ ((((w[2] + 1) ^ w[2]) >> 8) & 0xff) ^
		     ((((w[2] + 1) ^ w[2]) >> 16) & 0xff) ^ (((w[2] + 1) ^ w[2]) >> 24));	/* ...checked */
	refused(ESTALE, "stale bootstrap");
	spad(home, 2, true, w[2]);
	spad(home, 0, true, 0x12345678);			/* another user's words */
	refused(ENOENT, "not a smartio bootstrap");
	spad(home, 0, true, w[0]);
	cr_assert_eq(sio_fabric_open(name, 1, &f), 0, "restored: %s", sio_errmsg());
	sio_fabric_close(f);
	sio__ntbdev_close(home);
}

/*
 * The home's registry reading all ones (what a window across a link that
 * went down reads) is out of reach, not corrupt: -ENOLINK, and nothing
 * that tells the user to destroy a live fabric.
 */
Test(ntb, a_registry_of_all_ones_is_out_of_reach_not_corrupt, .init = setup, .fini = teardown)
{
	struct sio_fabric *f, *g;
	struct sio_registry *save = malloc(sizeof(*save));
	struct sio_segment *s = NULL;
	int ret;

	cr_assert_eq(sio_fabric_open(name, 1, &f), 0, "%s", sio_errmsg());
	memcpy(save, f->reg, sizeof(*save));
	memset(f->reg, 0xff, sizeof(*f->reg));
	refused(ENOLINK, "reads all ones");
	cr_expect_null(strstr(sio_errmsg(), "destroy"), "%s", sio_errmsg());
	/* a segment of a node the fabric has, not "no node 1" (after a
	 * guest's rejoin in a storm, before the state was mapped again) */
	ret = sio_segment_create_on(f, 1, 0, 4096, 0, &s);
	cr_expect_eq(ret, -ENOLINK, "a segment while the state reads all ones: %d %s", ret,
		     sio_errmsg());
	memcpy(f->reg, save, sizeof(*save));
	if (!ret)
		sio_segment_close(s);
	cr_assert_eq(sio_fabric_open(name, 1, &g), 0, "restored: %s", sio_errmsg());
	sio_fabric_close(g);
	sio_fabric_close(f);
	free(save);
}

Test(ntb, a_window_too_small_for_the_state_is_refused, .init = setup, .fini = teardown)
{
	struct ntbdev *home = port_dev(0);
	struct sio_ntb_buf b = { .pidx = 0, .widx = 0 };
	struct sio_ntb_peer_mw pm = { .widx = 0 };
	struct sio_ntb_xlat x = { .pidx = 0, .widx = 0 };
	struct ntbdev *peer = port_dev(1);
	struct sio_fabric *f;

	/* port 1 reaches port 0 through port 0's window 0 for peer index 0: narrow it */
	cr_assert_eq(ntbdev_ioctl(peer, SIO_NTB_IOC_PEER_MW, &pm), 0);
	x.addr = ((uint64_t)1 << 50);	/* port 0's buffer of peer 0, window 0 (the fake's encoding) */
	x.size = 1 << 20;
	cr_assert_eq(ntbdev_ioctl(home, SIO_NTB_IOC_MW_XLAT, &x), 0, "narrowing the window");
	refused(EMSGSIZE, "window to this port reaches 1024 KiB");
	x.size = 0;	/* cleared first: translated again, the module says -EEXIST */
	cr_assert_eq(ntbdev_ioctl(home, SIO_NTB_IOC_MW_XLAT, &x), 0);
	x.size = pm.size;
	cr_assert_eq(ntbdev_ioctl(home, SIO_NTB_IOC_MW_XLAT, &x), 0);
	cr_assert_eq(sio_fabric_open(name, 1, &f), 0, "widened again: %s", sio_errmsg());
	sio_fabric_close(f);
	(void)b;
	sio__ntbdev_close(peer);
	sio__ntbdev_close(home);
}

Test(ntb, a_node_without_its_service_says_so, .init = setup, .fini = teardown)
{
	struct sio_fabric *f;
	struct sio_segment *s;

	if (served >= 4)
		cr_skip_test("every port has a service (SIO_NTB_SERVED)");
	cr_assert_eq(sio_fabric_open(name, 3, &f), -EHOSTDOWN);
	cr_assert(strstr(sio_errmsg(), "smartio ntb serve"), "%s", sio_errmsg());
	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_create_on(f, 3, 0, 4096, 0, &s), -ENODEV, "a node without memory");
	cr_assert(strstr(sio_errmsg(), "node 3 has no memory"), "%s", sio_errmsg());
	sio_fabric_close(f);
}

/* Node 0's handle, port 3 held by no kernel (skipped where each port has
 * a service). */
static struct sio_fabric *open_port3_free(void)
{
	struct sio_fabric *f = NULL;

	if (served >= 4)
		cr_skip_test("every port has a service (SIO_NTB_SERVED)");
	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	return f;
}

/* A link is up as the NTB says, not as the registry alone: port 3's goes
 * down and comes back while no kernel, then one, then none holds it. */
Test(ntb, a_link_is_up_as_the_ntb_says, .init = setup, .fini = teardown)
{
	struct sio_fabric *f = open_port3_free();
	struct ntbdev *d;

	cr_assert_eq(sio_link_get(f, 0, 0), 1, "this node's own");
	cr_assert_eq(sio_link_get(f, 1, 0), 1, "port 1's service holds it up");
	cr_assert_eq(sio_link_get(f, 3, 0), 0, "no kernel on port 3: its link is down");
	cr_assert_eq(sio__ntbdev_open(getenv("SMARTIO_NTB_DEV"), 3, &d), 0, "%s", sio_errmsg());
	/* down until the heartbeat has mapped its windows again */
	for (int i = 0; i < 100 && sio_link_get(f, 3, 0) != 1; i++)
		nap_ms(20);
	cr_assert_eq(sio_link_get(f, 3, 0), 1, "port 3 came up");
	sio__ntbdev_close(d);
	cr_assert_eq(sio_link_get(f, 3, 0), 0, "port 3 went down again");
	cr_assert_eq(sio_link_set(f, 1, 0, false), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_link_get(f, 1, 0), 0, "down in the registry: down");
	cr_assert_eq(sio_link_set(f, 1, 0, true), 0, "%s", sio_errmsg());
	sio_fabric_close(f);
}

/* Whether @d's NTB says its link with port @port is up. */
static bool ntb_peer_up(struct ntbdev *d, int port)
{
	struct sio_ntb_peer pr = { .pidx = (uint32_t)sio__ntbdev_pidx(d, port) };

	return (int)pr.pidx >= 0 && !ntbdev_ioctl(d, SIO_NTB_IOC_PEER, &pr) && pr.link_up;
}

/* Once a process resumes a link itself, the heartbeat no longer maps its
 * windows again behind its back: port 3's link comes back and reads down
 * until sio_link_resume() maps them. */
Test(ntb, a_resumed_link_is_mapped_again_only_when_asked, .init = setup, .fini = teardown)
{
	struct sio_fabric *f = open_port3_free();
	struct ntbdev *d;

	cr_assert_eq(sio_link_resume(f, 3, 0), 0, "no kernel on port 3: its link is down");
	cr_assert_eq(sio__ntbdev_open(getenv("SMARTIO_NTB_DEV"), 3, &d), 0, "%s", sio_errmsg());
	/* up at the NTB (as port 3 sees port 0): heartbeats pass, it reads down */
	for (int i = 0; i < 100 && !ntb_peer_up(d, 0); i++)
		nap_ms(20);
	cr_assert(ntb_peer_up(d, 0), "port 3's link to port 0 never came up");
	nap_ms((int)(6 * WF_BEAT_NS / 1000000));
	cr_assert_eq(sio_link_get(f, 3, 0), 0, "mapped again behind the resumer's back");
	cr_assert_eq(sio_link_resume(f, 3, 0), 1, "port 3 mapped again when asked");
	cr_assert_eq(sio_link_get(f, 3, 0), 1, "port 3 up once resumed");
	sio__ntbdev_close(d);
	cr_assert_eq(sio_link_get(f, 3, 0), 0, "port 3 went down again");
	cr_assert_eq(sio_link_resume(f, 1, 0), 1, "port 1's link was never lost");
	sio_fabric_close(f);
}

static volatile sig_atomic_t serve_stop;

static void on_term(int sig)
{
	(void)sig;
	serve_stop = 1;
}

/* Does @path hold @what, within @ms? */
static bool log_says(const char *path, const char *what, int ms)
{
	return log_has(path, what, NULL, ms);
}

/*
 * Port 3's service, its log at @log; @refuse: on hardware that refuses its
 * translations; @dev: its NTBs, one per adapter (NULL: $SMARTIO_NTB_DEV's).
 */
static pid_t serve_on(int port, const char *dev, char *log, size_t len, bool refuse)
{
	pid_t pid;

	snprintf(log, len, "%s/serve%d-%d.log", getenv("SMARTIO_RUNDIR"), port, getpid());
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		FILE *l = fopen(log, "a");

		signal(SIGTERM, on_term);
		if (refuse)
			setenv("SMARTIO_NTB_FAKE_REFUSE_XLAT", "22", 1);	/* EINVAL */
		_exit(l && !sio_ntb_serve(dev, port, &serve_stop, l) ? 0 : 1);
	}
	return pid;
}

static pid_t serve3_on(const char *dev, char *log, size_t len, bool refuse)
{
	return serve_pid = serve_on(3, dev, log, len, refuse);
}

static pid_t serve3(char *log, size_t len, bool refuse)
{
	return serve3_on(NULL, log, len, refuse);
}

/*
 * Port 3's service, on hardware that refuses its translations: only the peer
 * whose window holds its memory (port 0's, the first up) reaches it.
 */
static pid_t serve_refusing(char *log, size_t len)
{
	pid_t pid = serve3(log, len, true);

	cr_assert(log_says(log, "cannot export this node's memory to peer 1, port 1 (its window 0): Invalid argument", 10000),
		  "the service says which peer it could not export to");
	return pid;
}

static void serve_stop_clean(pid_t pid)
{
	int st;

	kill(pid, SIGTERM);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	serve_pid = 0;
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "port 3's service stopped cleanly");
}

/*
 * Fabric @home of @adapters adapters per node (0: one), made again on port
 * 3 (its service running), for node 0 of this process.
 */
static void create_on_port3(const char *home, int adapters)
{
	struct sio_fabric_config c = { .nodes = 4, .topology = SIO_TOPO_SWITCH,
				       .adapters = adapters };
	int ret = -1;

	cr_assert_eq(sio_fabric_destroy(name), 0, "%s", sio_errmsg());
	setenv("SMARTIO_NODE", "3", 1);
	for (int i = 0; i < 100 && ret; i++, nap_ms(50))	/* port 0 takes its bootstrap back */
		ret = sio_fabric_create(home, &c);
	unsetenv("SMARTIO_NODE");
	cr_assert_eq(ret, 0, "created on port 3: %s", sio_errmsg());
}

Test(ntb, a_translation_refused_is_said_on_both_sides, .init = setup, .fini = teardown)
{
	char log[PATH_MAX];
	struct sio_fabric *f, *g;
	struct sio_segment *s, *r;
	volatile uint64_t *p;
	pid_t pid;

	if (served >= 4)
		cr_skip_test("every port has a service (SIO_NTB_SERVED)");
	pid = serve_refusing(log, sizeof(log));
	cr_assert(log_says(log, "node 3's pool", 10000), "port 3 joined");
	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_fabric_open(name, 1, &g), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_create_on(f, 3, 11, 8192, 0, &s), 0, "port 0 reaches it: %s", sio_errmsg());
	cr_assert_eq(sio_segment_map(s, (void **)&p), 0, "%s", sio_errmsg());
	p[0] = 0xfeedull;
	cr_assert_eq(sio_segment_connect(g, 3, 11, &r), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(r, (void **)&p), -ENXIO, "port 1 does not: %s", sio_errmsg());
	cr_assert(strstr(sio_errmsg(), "port 3's hardware driver refused to translate its inbound window 0 for port 1"),
		  "%s", sio_errmsg());
	sio_segment_close(r);
	cr_assert_eq(sio_segment_map(s, (void **)&p), 0, "%s", sio_errmsg());
	cr_assert_eq(p[0], 0xfeedull, "nothing lost on the side that reaches it");
	sio_segment_close(s);
	sio_fabric_close(g);
	sio_fabric_close(f);
	serve_stop_clean(pid);
}

/*
 * A pool whose node has not translated its window for this port yet
 * (reach0): that window reaches other memory (on ntb_hw_ivshmem the
 * region of a former life of the port), so it is refused, not mapped,
 * until the node's service says it translated it. Its service is stopped
 * meanwhile, so that it does not write the pool again within its tick.
 */
Test(ntb, a_window_not_translated_yet_is_not_mapped, .init = setup, .fini = teardown)
{
	struct sio_segment *s, *r;
	struct sio_fabric *f, *g;
	volatile uint64_t *p;
	char log[PATH_MAX];
	uint64_t *reach0;
	int ret = -1;
	pid_t pid;

	if (served >= 4)
		cr_skip_test("every port has a service (SIO_NTB_SERVED)");
	pid = serve3(log, sizeof(log), false);
	cr_assert(log_says(log, "node 3's pool", 10000), "port 3 joined");
	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_fabric_open(name, 1, &g), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_create_on(f, 3, 12, 8192, 0, &s), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(s, (void **)&p), 0, "%s", sio_errmsg());
	p[0] = 0xc0ffeeull;
	cr_assert_eq(sio_segment_connect(g, 3, 12, &r), 0, "%s", sio_errmsg());
	reach0 = &wf_of(g)->hdr->pools[3].reach0;
	cr_assert(*reach0 >> 1 & 1, "port 3's pool says it translated port 1's window");
	kill(pid, SIGSTOP);
	__atomic_fetch_and(reach0, ~(1ull << 1), __ATOMIC_SEQ_CST);
	cr_assert_eq(sio_segment_map(r, (void **)&p), -ENOTCONN, "%s", sio_errmsg());
	cr_assert(strstr(sio_errmsg(), "port 3 has not translated its inbound window 0 for port 1 yet"),
		  "%s", sio_errmsg());
	kill(pid, SIGCONT);
	for (int i = 0; i < 50 && ret; i++) {	/* the service's next tick records it again */
		if ((ret = sio_segment_map(r, (void **)&p)))
			usleep(100000);
	}
	cr_assert_eq(ret, 0, "mapped once port 3's service said so again: %s", sio_errmsg());
	cr_assert_eq(p[0], 0xc0ffeeull, "the segment's bytes, through the translated window");
	sio_segment_close(r);
	sio_segment_close(s);
	sio_fabric_close(g);
	sio_fabric_close(f);
	serve_stop_clean(pid);
}

Test(ntb, a_home_that_cannot_export_the_state_is_named, .init = setup, .fini = teardown)
{
	char log[PATH_MAX], home[SIO_NAME_MAX], peer_log[PATH_MAX];
	struct sio_fabric *f;
	pid_t pid;

	if (served >= 4)
		cr_skip_test("every port has a service (SIO_NTB_SERVED)");
	pid = serve_refusing(log, sizeof(log));
	/* the fabric moves to port 3, whose memory port 0 reaches and ports 1 and 2 do not */
	snprintf(home, sizeof(home), "h-%d", getpid());
	create_on_port3(home, 0);
	for (int node = 1; node <= 2; node++) {
		char want[160];

		cr_assert_eq(sio_fabric_open(home, node, &f), -ENXIO, "node %d: %s", node, sio_errmsg());
		snprintf(want, sizeof(want), "port 3 hosts fabric '%s', but its hardware driver refused to translate its inbound window 0 for port %d",
			 home, node);
		cr_assert(strstr(sio_errmsg(), want), "'%s' in: %s", want, sio_errmsg());
		cr_assert(strstr(sio_errmsg(), "port 3's smartio ntb serve log"), "%s", sio_errmsg());
	}
	snprintf(peer_log, sizeof(peer_log), "%s/../serve1.log", getenv("SMARTIO_RUNDIR"));
	cr_assert(log_says(peer_log, "port 3 hosts a fabric, but its hardware driver refused to translate its memory for this port (1)", 5000),
		  "port 1's service says why it does not join");
	cr_assert_eq(sio_fabric_open(home, 0, &f), 0, "port 0 reaches it: %s", sio_errmsg());
	sio_fabric_close(f);
	cr_assert_eq(sio_fabric_destroy(home), 0, "%s", sio_errmsg());
	serve_stop_clean(pid);
}

Test(ntb, a_segment_lives_in_its_nodes_memory, .init = setup, .fini = teardown)
{
	const char *spec = getenv("SMARTIO_NTB_DEV");
	struct sio_fabric *f, *g;
	struct sio_segment *s, *r;
	char path[PATH_MAX], *buf;
	volatile uint64_t *p, *q;
	int fd, found = 0;

	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_fabric_open(name, 1, &g), 0, "%s", sio_errmsg());
	/* made by node 0, on node 1: it lives in port 1's memory */
	cr_assert_eq(sio_segment_create_on(f, 1, 7, 8192, 0, &s), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(s, (void **)&p), 0, "%s", sio_errmsg());
	p[0] = 0x5eed1ab5ull;
	cr_assert_eq(sio_segment_connect(g, 1, 7, &r), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(r, (void **)&q), 0, "%s", sio_errmsg());
	cr_assert_eq(q[0], 0x5eed1ab5ull, "node 1 reads what node 0 stored");
	/* in the fake's file of port 1's memory (its buffer of some peer's window 0) */
	for (int i = 0; i < 3 && !found; i++) {
		snprintf(path, sizeof(path), "%s/buf-1-%d-0", spec + 5, i);
		if ((fd = open(path, O_RDONLY)) < 0)
			continue;
		buf = mmap(NULL, 16 << 20, PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		cr_assert_neq(buf, MAP_FAILED);
		for (size_t o = 0; o < (16 << 20) && !found; o += 4096)
			found = *(uint64_t *)(buf + o) == 0x5eed1ab5ull;
		munmap(buf, 16 << 20);
	}
	cr_assert(found, "the data is in port 1's memory");
	sio_segment_close(r);
	sio_segment_close(s);
	sio_fabric_close(g);
	sio_fabric_close(f);
}

/* The port whose service says @what in its log (ports 0 to 2), within @ms; -1: none. */
static int service_saying(const char *what, int ms)
{
	char path[PATH_MAX];

	for (; ms > 0; ms -= 150)
		for (int port = 0; port < 3; port++) {
			snprintf(path, sizeof(path), "%s/../serve%d.log", getenv("SMARTIO_RUNDIR"), port);
			if (log_says(path, what, 50))
				return port;
		}
	return -1;
}

/*
 * A take-over test's fabric, left by a test that failed before it
 * destroyed it. Its standby may still take over, after its hold (5 s):
 * keep trying to destroy it that long, then let its new home's service
 * take the bootstrap back. Nothing is asserted: the test failed already.
 */
static void home_gone(void)
{
	struct timespec t0, t;
	char want[96];

	snprintf(want, sizeof(want), "fabric '%s' was destroyed", home_name);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (!sio_fabric_destroy(home_name)) {
			service_saying(want, 10000);
			break;
		}
		nap_ms(200);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 12);
	home_name[0] = 0;
}

/*
 * Port 3's service, fabric @home created on it (the home), node 0's handle
 * to it in @f, and a segment of node 0's in @s holding 0x0ddba11.
 */
static pid_t home_on_port3(char *log, size_t len, const char *home, struct sio_fabric **f,
			   struct sio_segment **s)
{
	volatile uint64_t *p;
	pid_t pid = serve3(log, len, false);

	cr_assert(log_says(log, "port 3's memory", 10000), "port 3's service is up");
	snprintf(home_name, sizeof(home_name), "%s", home);
	create_on_port3(home, 0);
	cr_assert_eq(sio_fabric_open(home, 0, f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_create(*f, 31, 8192, 0, s), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(*s, (void **)&p), 0, "%s", sio_errmsg());
	p[0] = 0x0ddba11ull;
	return pid;
}

/* Port @sb's service took over, after the home's link stayed down for the hold, and @f followed. */
static void taken_over(struct sio_fabric *f, int sb)
{
	char want[96];
	int i;

	snprintf(want, sizeof(want), "this node (port %d) is the fabric's home from now on", sb);
	cr_assert_eq(service_saying(want, 30000), sb, "port %d did not take over", sb);
	for (i = 0; i < 200 && src_of(wf_of(f))->boot.port != sb; i++)
		nap_ms(50);
	cr_assert_eq(src_of(wf_of(f))->boot.port, sb, "the handle did not follow the take-over");
}

/* home_on_port3(), and the port whose service became the home's standby. */
static int home_and_standby(char *log, size_t len, const char *home, struct sio_fabric **f,
			    struct sio_segment **s, pid_t *pid)
{
	char want[96];
	int sb;

	*pid = home_on_port3(log, len, home, f, s);
	snprintf(want, sizeof(want), "the standby home of fabric '%s'", home);
	sb = service_saying(want, 10000);
	cr_assert_geq(sb, 0, "no node service became the standby home");
	/* the other nodes' services map the standby's copy at their next beat
	 * (50 ms): a home that died before knew no standby to them */
	nap_ms(400);
	return sb;
}

/* The home's kernel dies: its service's link goes down with it. */
static void home_dies(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	serve_pid = 0;
}

/* Port 3 comes back: a node of the fabric that port @sb hosts. Its service. */
static pid_t port3_rejoins(char *log, size_t len, int sb)
{
	char want[96];
	pid_t pid = serve3(log, len, false);

	snprintf(want, sizeof(want), "hosted by port %d) as node 3", sb);
	cr_assert(log_says(log, want, 10000), "port 3 did not rejoin");
	return pid;
}

/*
 * Fabric @home destroyed: the new home's service (port @sb) takes its
 * bootstrap back at its next tick (the next test's create must not find
 * it); port 3's service, @pid, stopped.
 */
static void destroyed_on(const char *home, int sb, pid_t pid)
{
	char want[96];

	cr_assert_eq(sio_fabric_destroy(home), 0, "%s", sio_errmsg());
	snprintf(want, sizeof(want), "fabric '%s' was destroyed", home);
	cr_assert_eq(service_saying(want, 10000), sb, "port %d kept hosting '%s'", sb, home);
	home_name[0] = 0;
	serve_stop_clean(pid);
}

/*
 * Does @g, a process that came after the home changed, find node 0's
 * segment 31, made before (its first word 0x0ddba11), and 32, made @when?
 */
static void finds_both(struct sio_fabric *g, const char *when)
{
	volatile uint64_t *p;
	struct sio_segment *r;

	cr_assert_eq(sio_segment_connect(g, 0, 31, &r), 0, "the segment of before: %s", sio_errmsg());
	cr_assert_eq(sio_segment_map(r, (void **)&p), 0, "%s", sio_errmsg());
	cr_assert_eq(p[0], 0x0ddba11ull, "its data");
	sio_segment_close(r);
	cr_assert_eq(sio_segment_connect(g, 0, 32, &r), 0, "the segment of %s: %s", when,
		     sio_errmsg());
	sio_segment_close(r);
}

/*
 * The home (port 3) dies: a standby (port 0, 1 or 2) that kept a copy of the
 * state takes over; a process of a live node goes on in place (its segment,
 * its lock, on the new home), a new process finds the new home, and port 3
 * comes back as a node of the fabric.
 */
Test(ntb, the_homes_death_is_taken_over_by_its_standby, .init = setup, .fini = teardown)
{
	char log[PATH_MAX], home[SIO_NAME_MAX];
	struct sio_fabric *f, *g;
	struct sio_segment *s, *t;
	int sb;
	pid_t pid;

	if (served >= 4)
		cr_skip_test("every port has a service (SIO_NTB_SERVED)");
	snprintf(home, sizeof(home), "h-%d", getpid());
	sb = home_and_standby(log, sizeof(log), home, &f, &s, &pid);
	home_dies(pid);
	/* this process follows in place: a segment made now is made on the new home */
	taken_over(f, sb);
	cr_assert_eq(sio_segment_create(f, 32, 4096, 0, &t), 0, "after the take-over: %s", sio_errmsg());
	/* a new process finds the new home, with what the live node had before and after */
	cr_assert_eq(sio_fabric_open(home, 1, &g), 0, "%s", sio_errmsg());
	finds_both(g, "after");
	pid = port3_rejoins(log, sizeof(log), sb);
	sio_segment_close(t);
	sio_segment_close(s);
	sio_fabric_close(g);
	sio_fabric_close(f);
	destroyed_on(home, sb, pid);
}

/* The fake NTB's test hook @sym (tests/ntb/fake.c). */
static void *fake_hook(const char *sym)
{
	void *lib = dlopen(getenv("SMARTIO_NTB_FAKE_LIB"), RTLD_NOW), *fn;

	cr_assert(lib, "%s", dlerror());
	fn = dlsym(lib, sym);
	cr_assert(fn, "%s", dlerror());
	return fn;
}

/* Port @port's link on the fake NTB: cut (a partition, its service alive) or up again. */
static void fake_link(int port, int on)
{
	int (*link)(const char *, int, int);

	*(void **)&link = fake_hook("sio_test_ntb_fake_link");
	cr_assert_eq(link(getenv("SMARTIO_NTB_DEV") + 5, port, on), 0);
}

/*
 * The home (port 3) dies, and its standby is cut off before the hold is
 * over: no node can take over. A process of a third node is told so, by
 * name, and so is that node's service, instead of a bare "cannot be
 * read"; the standby's link back, it takes over and the process goes on.
 */
Test(ntb, a_standby_cut_off_in_the_take_over_is_said, .init = setup, .fini = teardown)
{
	char log[PATH_MAX], home[SIO_NAME_MAX], want[160], msg[512];
	struct sio_fabric *f, *g;
	struct sio_segment *s, *t = NULL;
	int sb, o, i, ret = 0, said;
	bool told;
	pid_t pid;

	if (served >= 4)
		cr_skip_test("every port has a service (SIO_NTB_SERVED)");
	snprintf(home, sizeof(home), "c-%d", getpid());
	sb = home_and_standby(log, sizeof(log), home, &f, &s, &pid);
	o = sb ? 0 : 1;
	cr_assert_eq(sio_fabric_open(home, o, &g), 0, "%s", sio_errmsg());
	home_dies(pid);
	fake_link(sb, 0);
	snprintf(want, sizeof(want),
		 "the link to its home, port 3, is down, and its standby home, port %d, is out of reach too", sb);
	for (i = 0; i < 100; i++) {
		ret = sio_segment_create(g, 33, 4096, 0, &t);
		if (ret && strstr(sio_errmsg(), want))
			break;
		if (!ret)
			sio_segment_close(t);
		nap_ms(100);
	}
	told = ret == -EHOSTDOWN && strstr(sio_errmsg(), want);
	snprintf(msg, sizeof(msg), "%d: %s", ret, sio_errmsg());
	/* and another node's service, once the hold is over (the link back either way) */
	snprintf(want, sizeof(want), "its standby home, port %d, is out of reach too", sb);
	said = service_saying(want, 20000);
	fake_link(sb, 1);
	cr_assert(told, "%s", msg);
	cr_assert(said >= 0 && said != sb, "no other node's service says it");
	/* the standby back: it takes over (or took over, cut off), and g goes on */
	taken_over(g, sb);
	cr_assert_eq(sio_segment_create(g, 33, 4096, 0, &t), 0, "after the take-over: %s", sio_errmsg());
	pid = port3_rejoins(log, sizeof(log), sb);
	sio_segment_close(t);
	sio_segment_close(s);
	sio_fabric_close(g);
	sio_fabric_close(f);
	destroyed_on(home, sb, pid);
}

/*
 * A process of port 3's kernel: joins fabric @home as node 3, says its slot
 * on @fd, then waits (bounded) for its handle to end, and says 'o' if it did.
 */
static pid_t port3_process(const char *home, int fd)
{
	pid_t pid = fork();

	cr_assert_neq(pid, -1);
	if (pid == 0) {
		struct sio_fabric *g;
		int32_t slot;

		setenv("SMARTIO_SHMWIN_KERNEL", "kernel-3", 1);
		if (sio_fabric_open(home, 3, &g))
			_exit(1);
		slot = wf_of(g)->slot;
		if (write(fd, &slot, sizeof(slot)) != sizeof(slot))
			_exit(2);
		for (int i = 0; i < 1200 && !sio_fabric_alive(g); i++)
			nap_ms(50);
		if (sio_fabric_alive(g) && write(fd, "o", 1) != 1)
			_exit(3);
		_exit(0);
	}
	return pid;
}

/* The fake NTB's hook that cuts port @victim's link at @port's next map. */
static void fake_cut_at_map(int port, int victim)
{
	int (*cut)(const char *, int, int);

	*(void **)&cut = fake_hook("sio_test_ntb_fake_cut_at_map");
	cr_assert_eq(cut(getenv("SMARTIO_NTB_DEV") + 5, port, victim), 0);
}

/*
 * A process of port 1's kernel joining fabric @home while its home is cut
 * off, in the hold before the standby takes over (@cut: the home's link
 * cut by the fake NTB right after the join's first map, the state's, so
 * that the join loses it half way): it must wait for the take-over and
 * join, not be told there is no fabric, nor that the home is down. Exit 0
 * once joined.
 */
static pid_t joiner_in_hold(const char *home, bool cut)
{
	pid_t pid = fork();

	cr_assert_neq(pid, -1);
	if (pid == 0) {
		struct sio_fabric *g;

		setenv("SMARTIO_SHMWIN_KERNEL", "kernel-1", 1);
		if (cut)
			fake_cut_at_map(1, 3);
		if (sio_fabric_open(home, 1, &g)) {
			fprintf(stderr, "joining in the hold: %s\n", sio_errmsg());
			_exit(1);
		}
		sio_fabric_close(g);
		_exit(0);
	}
	return pid;
}

/*
 * A partition cuts the home (port 3) off while its service lives: the
 * standby takes over. Once the link is back two ports host the fabric, and
 * the old home, at the older epoch, yields: one home again, what a live
 * node made before and during the partition kept; a process of port 3 that
 * the new home reclaimed meanwhile is not merged in: its handle ends.
 */
Test(ntb, a_home_back_after_a_take_over_yields, .init = setup, .fini = teardown)
{
	char log[PATH_MAX], home[SIO_NAME_MAX], want[128], o = 0;
	struct sio_fabric *f, *g;
	struct sio_segment *s, *t;
	int pfd[2], sb, i, st;
	int32_t slot = -1;
	pid_t pid, kid, joiner, cutter;

	if (served >= 4)
		cr_skip_test("every port has a service (SIO_NTB_SERVED)");
	snprintf(home, sizeof(home), "y-%d", getpid());
	pid = home_on_port3(log, sizeof(log), home, &f, &s);
	cr_assert_eq(pipe(pfd), 0);
	kid = port3_process(home, pfd[1]);
	close(pfd[1]);	/* its end: a read ends when it does */
	cr_assert_eq(read(pfd[0], &slot, sizeof(slot)), sizeof(slot), "port 3's process did not join");
	snprintf(want, sizeof(want), "the standby home of fabric '%s'", home);
	sb = service_saying(want, 10000);
	cr_assert_geq(sb, 0, "no node service became the standby home");
	cutter = joiner_in_hold(home, true);
	for (i = 0; i < 100 && sio_link_get(f, 3, 0) == 1; i++)
		nap_ms(50);
	fake_link(3, 0);	/* (the cut, if the join did not make it) */
	joiner = joiner_in_hold(home, false);
	taken_over(f, sb);
	cr_assert_eq(waitpid(cutter, &st, 0), cutter);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "a process whose join lost the home's link half way failed");
	cr_assert_eq(waitpid(joiner, &st, 0), joiner);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a process joining in the hold failed");
	cr_assert_eq(sio_segment_create(f, 32, 4096, 0, &t), 0, "during the partition: %s", sio_errmsg());
	/* port 3's process beats in the old home's state only: the new home reclaims it */
	for (i = 0; i < 200 && atomic_load(&wf_of(f)->hdr->procs[slot].token); i++, nap_ms(50))
		sio_fabric_reap(f);
	cr_assert_eq(atomic_load(&wf_of(f)->hdr->procs[slot].token), 0, "port 3's process was not reclaimed");
	fake_link(3, 1);
	cr_assert(log_says(log, "it yields (the higher epoch, then the lower port", 20000), "port 3 did not yield");
	cr_assert(log_says(log, "1 of its processes are not in", 50), "the process not merged is counted");
	snprintf(want, sizeof(want), "hosted by port %d from now on", sb);
	cr_assert(log_says(log, want, 10000), "port 3's service did not follow the new home");
	/* one home: a new process finds it, with what was made before and during the partition */
	cr_assert_eq(sio_fabric_open(home, 1, &g), 0, "%s", sio_errmsg());
	cr_assert_eq(src_of(wf_of(g))->boot.port, sb, "the new process's home");
	finds_both(g, "the partition");
	/* the process the new home reclaimed is not taken back in: its handle ends */
	cr_assert_eq(read(pfd[0], &o, 1), 1, "port 3's process was not told");
	cr_assert_eq(o, 'o');
	cr_assert_eq(waitpid(kid, &st, 0), kid);
	cr_assert(WIFEXITED(st) && !WEXITSTATUS(st), "port 3's process: status %d", st);
	close(pfd[0]);
	sio_segment_close(t);
	sio_segment_close(s);
	sio_fabric_close(g);
	sio_fabric_close(f);
	destroyed_on(home, sb, pid);
}

/* A state of fabric generation @gen hosted by @port at @epoch, for the two-homes rule. */
static struct wf_hdr *state_of(uint64_t gen, int port, uint32_t epoch)
{
	struct wf_hdr *h = calloc(1, sizeof(*h));

	cr_assert(h);
	h->magic = WF_MAGIC;
	h->create_gen = gen;
	snprintf(h->name, sizeof(h->name), "r");
	h->home.port = port;
	h->home.standby = -1;
	h->home.epoch = epoch;
	return h;
}

/* Two homes of one fabric: the higher epoch stays, then the lower port; never two fabrics. */
Test(ntb_rule, two_homes_one_yields)
{
	struct wf_hdr *a = state_of(7, 1, 2), *b = state_of(7, 2, 3), *c = state_of(7, 0, 2),
		      *d = state_of(8, 0, 5);
	char msg[512];

	cr_assert_eq(sio__ntb_home_rule(a, 1, b, 2, msg, sizeof(msg)), 1, "the older epoch yields");
	cr_assert(strstr(msg, "this node (port 1) is at epoch 2: it yields"), "%s", msg);
	cr_assert_eq(sio__ntb_home_rule(b, 2, a, 1, msg, sizeof(msg)), 0, "the newer epoch stays");
	cr_assert(strstr(msg, "port 1 yields"), "%s", msg);
	cr_assert_eq(sio__ntb_home_rule(a, 1, c, 0, msg, sizeof(msg)), 1, "a tie: the higher port yields");
	cr_assert_eq(sio__ntb_home_rule(c, 0, a, 1, msg, sizeof(msg)), 0, "a tie: the lower port stays");
	cr_assert_eq(sio__ntb_home_rule(a, 1, d, 0, msg, sizeof(msg)), -1, "another fabric: no rule");
	d->create_gen = 7;
	d->home.port = 3;
	cr_assert_eq(sio__ntb_home_rule(a, 1, d, 0, msg, sizeof(msg)), -1, "a copy, not a home");
	/* what the yielding home has that the other does not: counted, not merged */
	atomic_store(&a->procs[4].token, 0x1234);
	atomic_store(&a->procs[5].token, 0x5678);
	atomic_store(&b->procs[5].token, 0x5678);
	cr_assert_eq(sio__ntb_home_rule(a, 1, b, 2, msg, sizeof(msg)), 1);
	cr_assert(strstr(msg, "1 of its processes are not in port 2's state"), "%s", msg);
	free(a);
	free(b);
	free(c);
	free(d);
}

/* A child on "kernel-N" that joins as node @node, does @what, reports on @fd. */
static pid_t other_kernel(int node, void (*what)(struct sio_fabric *), int fd)
{
	pid_t pid = fork();

	cr_assert_neq(pid, -1);
	if (pid == 0) {
		struct sio_fabric *g;
		char k[32];

		snprintf(k, sizeof(k), "kernel-%d", node);
		setenv("SMARTIO_SHMWIN_KERNEL", k, 1);
		if (sio_fabric_open(name, node, &g))
			_exit(1);
		what(g);
		if (write(fd, "r", 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	return pid;
}

static void hold_segment(struct sio_fabric *g)
{
	struct sio_segment *s;

	if (sio_segment_create(g, 9, 8192, 0, &s))
		_exit(3);
}

static void hold_lock(struct sio_fabric *g)
{
	if (sio__lock(g))
		_exit(4);
}

Test(ntb, a_dead_kernels_segment_and_lock_are_reclaimed, .init = setup, .fini = teardown)
{
	struct sio_fabric *f;
	struct sio_segment *s;
	int pfd[2], i;
	char b;
	pid_t pid;

	cr_assert_eq(pipe(pfd), 0);
	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	pid = other_kernel(1, hold_segment, pfd[1]);
	cr_assert_eq(read(pfd[0], &b, 1), 1, "the child could not make its segment");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (i = 0; i < 100 && sio_segment_connect(f, 1, 9, &s) == 0; i++) {
		sio_segment_close(s);
		nap_ms(50);
		sio_fabric_reap(f);
	}
	cr_assert_eq(sio_segment_connect(f, 1, 9, &s), -ENOENT, "the dead kernel's segment stayed");
	/* a kernel dies holding the lock (the bakery's entry): taken over after its lease */
	pid = other_kernel(2, hold_lock, pfd[1]);
	cr_assert_eq(read(pfd[0], &b, 1), 1, "the child could not take the lock");
	setenv("SMARTIO_LOCK_TIMEOUT_MS", "300", 1);
	cr_assert_eq(sio_segment_create(f, 1, 4096, 0, &s), -ETIMEDOUT);
	cr_assert(strstr(sio_errmsg(), "node 2"), "the holder is named: %s", sio_errmsg());
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* dead: its lease stands still, and is waited out past a shorter timeout */
	setenv("SMARTIO_LOCK_TIMEOUT_MS", "100", 1);
	cr_assert_eq(sio_segment_create(f, 1, 4096, 0, &s), 0, "after the lease: %s", sio_errmsg());
	sio_segment_close(s);
	sio_fabric_close(f);
}

Test(ntb, one_fabric_per_ntb, .init = setup, .fini = teardown)
{
	struct sio_fabric_config c = { .nodes = 2 };
	char list[4][SIO_NAME_MAX];

	cr_assert_eq(sio_fabric_create("another", &c), -EEXIST);
	cr_assert(strstr(sio_errmsg(), "one fabric per NTB"), "%s", sio_errmsg());
	cr_assert_eq(sio_fabric_list(list, 4), 1, "%s", sio_errmsg());
	cr_assert_str_eq(list[0], name);
}

/* Does the mode the fake runs in give segments windows of their own? */
static bool page_xlat(void)
{
	const char *e = getenv("SMARTIO_NTB_FAKE_PAGE_XLAT");

	return e && atoi(e) == 1;
}

/* Port @port's service log says @what (its mode), within a second. */
static bool serve_log_says(int port, const char *what)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/../serve%d.log", getenv("SMARTIO_RUNDIR"), port);
	return log_says(path, what, 1000);
}

/* The window a connection's info names ("... inbound window W ..."), -1: the pool's. */
static int own_widx(struct sio_segment *r)
{
	struct sio_segment_info si;
	const char *w;

	cr_assert_eq(sio_segment_info(r, &si), 0, "%s", sio_errmsg());
	if (strncmp(si.reach, "own window", 10))
		return -1;
	cr_assert(w = strstr(si.reach, "inbound window "), "%s", si.reach);
	return atoi(w + strlen("inbound window "));
}

/* Port 0's outbound window @w to port 1: its size while translated (it maps), else 0. */
static uint64_t window_size(uint32_t w)
{
	struct ntbdev *d = port_dev(0);
	struct sio_ntb_info i;
	struct sio_ntb_peer_mw pm = { 0 };
	void *va;

	cr_assert_eq(sio__ntbdev_info(d, &i), 0);
	pm.widx = (uint32_t)sio__ntbdev_pidx(d, 1) * i.mws_per_peer + w;
	cr_assert_eq(ntbdev_ioctl(d, SIO_NTB_IOC_PEER_MW, &pm), 0);
	if (ntbdev_mmap(d, NULL, pm.mmap_offset, 4096, &va))
		pm.size = 0;	/* no translation: it reaches nothing */
	else
		munmap(va, 4096);
	sio__ntbdev_close(d);
	return pm.size;
}

/*
 * A connection to another kernel's segment: its own window, translated to
 * the segment alone, where the driver translates page by page; the pool
 * window where it translates whole regions, said either way.
 */
Test(xlat, a_connection_gets_a_window_of_its_own_or_says_pool, .init = setup, .fini = teardown)
{
	struct sio_fabric *f, *g;
	struct sio_segment *s[4] = { 0 }, *r[4] = { 0 }, *r2;
	struct sio_segment_info si;
	struct sio_fabric_status *st;
	volatile uint64_t *p, *q, *p2;
	int w, i;

	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_fabric_open(name, 1, &g), 0, "%s", sio_errmsg());
	cr_assert(serve_log_says(1, page_xlat() ? "segments: own windows" : "segments: pool window"),
		  "port 1's service says its mode");
	for (i = 0; i < 4; i++)
		cr_assert_eq(sio_segment_create(g, 20 + i, 65536, 0, &s[i]), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(s[1], (void **)&q), 0, "%s", sio_errmsg());
	q[0] = 0x6e6569676862ull;	/* the neighbour's first word */
	cr_assert_eq(sio_segment_connect(f, 1, 20, &r[0]), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(r[0], (void **)&p), 0, "%s", sio_errmsg());
	p[8191] = 0xfeedull;
	cr_assert_eq(sio_segment_map(s[0], (void **)&q), 0, "%s", sio_errmsg());
	cr_assert_eq(q[8191], 0xfeedull, "node 1 reads what node 0 stored");
	w = own_widx(r[0]);
	cr_assert_eq(sio_fabric_status_get(g, &st), 0, "%s", sio_errmsg());
	for (i = 0; i < st->nsegments && st->segments[i].info.id != 20; i++)
		;
	cr_assert(i < st->nsegments);
	if (!page_xlat()) {
		cr_assert_eq(w, -1, "whole regions: the pool window");
		cr_assert(strstr(st->segments[i].info.reach, "node 0: pool window (port 1's hardware driver translates no window per segment)"),
			  "status: %s", st->segments[i].info.reach);
		sio_fabric_status_close(st);
		goto out;
	}
	cr_assert_gt(w, 0, "its own window, not the pool's: %s", st->segments[i].info.reach);
	cr_assert(strstr(st->segments[i].info.reach, "node 0: own window"), "status: %s",
		  st->segments[i].info.reach);
	sio_fabric_status_close(st);
	/* the window is the segment: 64 KiB, nothing of the neighbour's past it */
	cr_assert_eq(window_size((uint32_t)w), 65536);
	/*
	 * A second connection of this kernel to the segment (another process
	 * of it, as clients share a manager's mailbox) asks again: the same
	 * window, and the first connection keeps it.
	 */
	cr_assert_eq(sio_segment_connect(f, 1, 20, &r2), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(r2, (void **)&p2), 0, "%s", sio_errmsg());
	cr_assert_eq(own_widx(r2), w, "the kernel's window for the segment, again");
	cr_assert_eq(window_size((uint32_t)w), 65536, "window %d still translated", w);
	p[8190] = 0x5ec0ull;
	p2[8189] = 0x5ec1ull;
	cr_assert(q[8190] == 0x5ec0ull && q[8189] == 0x5ec1ull, "both connections reach the segment");
	sio_segment_close(r2);
	/* two windows per peer for segments (the fake's 3 for 4 ports, less the pool's): the third connects through the pool */
	for (i = 1; i < 4; i++) {
		cr_assert_eq(sio_segment_connect(f, 1, 20 + i, &r[i]), 0, "%s", sio_errmsg());
		cr_assert_eq(sio_segment_map(r[i], (void **)&p), 0, "%s", sio_errmsg());
	}
	cr_assert_eq(p[0], 0, "segment 23 reads its own zeroes");
	cr_assert_gt(own_widx(r[1]), 0);
	cr_assert_eq(own_widx(r[2]), -1, "no window left: the pool's");
	cr_assert_eq(sio_segment_info(r[2], &si), 0, "%s", sio_errmsg());
	cr_assert(strstr(si.reach, "every window of port 1 for this node is in use"), "%s", si.reach);
	/* disconnected: the window's translation is cleared (the owner's service, within a few ticks) */
	cr_assert_eq(sio_segment_unmap(r[0]), 0, "%s", sio_errmsg());
	for (i = 0; i < 50 && window_size((uint32_t)w); i++)
		nap_ms(100);
	cr_assert_eq(window_size((uint32_t)w), 0, "window %d freed after the disconnect", w);
out:
	for (i = 0; i < 4; i++) {
		sio_segment_close(r[i]);
		sio_segment_close(s[i]);
	}
	sio_fabric_close(g);
	sio_fabric_close(f);
}

/* Within @ms, does fabric @f say that node @node's adapter @a is @up? */
static bool link_becomes(struct sio_fabric *f, int node, int a, int up, int ms)
{
	for (; ms > 0 && sio_link_get(f, node, a) != up; ms -= 50)
		nap_ms(50);
	return sio_link_get(f, node, a) == up;
}

/* The path from node 0 to node 3 through @adapter (-1: the one resolution picks). */
static struct sio_path path_0_3(struct sio_fabric *f, int adapter)
{
	struct sio_endpoint a = { .kind = SIO_EP_NODE, .node = 0 }, b = { .kind = SIO_EP_NODE, .node = 3 };
	struct sio_path p;

	cr_assert_eq(sio_path_resolve(f, &a, &b, adapter, &p), 0, "%s", sio_errmsg());
	return p;
}

/*
 * Within @ms, does the path from node 0 to node 3 through @adapter say
 * @up? It reads the node's links in the registry, which port 3's service
 * writes; sio_link_get() also follows this process's own NTB, whose link
 * to port 3 reads down for a moment whenever this process's windows are
 * behind the fake NTB's link generation.
 */
static bool path_becomes(struct sio_fabric *f, int adapter, bool up, int ms)
{
	for (; ms > 0 && path_0_3(f, adapter).up != up; ms -= 50)
		nap_ms(50);
	return path_0_3(f, adapter).up == up;
}

/*
 * A node of two NTBs (port 3's service holds the run's fake NTB and a
 * second one) is a node of two adapters, each with its NTB's links: NTB 1
 * losing its link with a node that NTB 0 still reaches takes adapter 1 of
 * node 3 down, and paths keep adapter 0; NTB 0 losing its link with a node
 * that NTB 1 reaches takes adapter 0 down, and paths take adapter 1; each
 * comes back with its link. This process plays ports 0 to 2 on NTB 1 and
 * port 2 on NTB 0 (SIO_NTB_SERVED=2: ports 0 and 1 run their services on
 * NTB 0, ports 2 and 3 none).
 */
Test(adapters, each_ntb_is_an_adapter_with_its_own_links, .fini = teardown)
{
	struct sio_fabric_config c = { .nodes = 4, .topology = SIO_TOPO_SWITCH, .adapters = 2 };
	char log[PATH_MAX], b[PATH_MAX], dev[2 * PATH_MAX];
	struct ntbdev *b_port[3], *a_port2;
	struct sio_fabric *f;
	struct sio_path p;
	int ret = -1;

	served = getenv("SIO_NTB_SERVED") ? atoi(getenv("SIO_NTB_SERVED")) : 4;
	if (served != 2)	/* before setup(): the next test's create finds nothing hosted */
		cr_skip_test("ports 2 and 3 are played here: SIO_NTB_SERVED=2 (meson test ntb-adapters)");
	setup();
	snprintf(b, sizeof(b), "fake:%s/../ntb1", getenv("SMARTIO_RUNDIR"));
	cr_assert(!mkdir(b + 5, 0700), "%s: %s", b + 5, strerror(errno));
	for (int port = 0; port < 3; port++)
		cr_assert_eq(sio__ntbdev_open(b, port, &b_port[port]), 0, "%s", sio_errmsg());
	cr_assert_eq(sio__ntbdev_open(NULL, 2, &a_port2), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_fabric_destroy(name), 0, "%s", sio_errmsg());
	for (int i = 0; i < 100 && ret; i++, nap_ms(50))	/* port 0 takes its bootstrap back */
		ret = sio_fabric_create(name, &c);
	cr_assert_eq(ret, 0, "two adapters: %s", sio_errmsg());
	snprintf(dev, sizeof(dev), "%s,%s", getenv("SMARTIO_NTB_DEV"), b);
	serve3_on(dev, log, sizeof(log), false);
	cr_assert(log_says(log, "adapter 1 of node 3: fake NTB", 10000), "port 3's service holds NTB 1");
	cr_assert(log_says(log, "node 3's pool", 10000), "port 3 joined");
	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	p = path_0_3(f, -1);
	cr_assert(p.adapter == 0 && p.up, "both NTBs up: adapter %d, up %d", p.adapter, p.up);

	sio__ntbdev_close(b_port[1]);	/* NTB 1 loses port 1, which NTB 0 reaches */
	cr_assert(link_becomes(f, 3, 1, 0, 10000), "adapter 1 of node 3 still up");
	cr_assert(log_has(log, "adapter 1 of node 3", "link down: no link with port 1", 5000),
		  "its service says why");
	cr_assert_eq(sio_link_get(f, 3, 0), 1, "adapter 0 stays up");
	p = path_0_3(f, -1);
	cr_assert(p.adapter == 0 && p.up, "adapter %d, up %d", p.adapter, p.up);
	cr_assert(!path_0_3(f, 1).up, "the path through adapter 1 is down");
	cr_assert_eq(sio__ntbdev_open(b, 1, &b_port[1]), 0, "%s", sio_errmsg());
	cr_assert(link_becomes(f, 3, 1, 1, 10000), "adapter 1 of node 3 not up again");

	sio__ntbdev_close(a_port2);	/* NTB 0 loses port 2, which NTB 1 reaches */
	cr_assert(path_becomes(f, 0, false, 10000), "adapter 0 of node 3 still up");
	p = path_0_3(f, -1);
	cr_assert(p.adapter == 1 && p.up, "paths take adapter 1: adapter %d, up %d", p.adapter, p.up);
	cr_assert_eq(sio__ntbdev_open(NULL, 2, &a_port2), 0, "%s", sio_errmsg());
	cr_assert(path_becomes(f, 0, true, 10000), "adapter 0 of node 3 not up again");
	p = path_0_3(f, -1);
	cr_assert(p.adapter == 0 && p.up, "back on adapter 0: adapter %d, up %d", p.adapter, p.up);

	sio_fabric_close(f);
	serve_stop_clean(serve_pid);
	for (int port = 0; port < 3; port++)
		sio__ntbdev_close(b_port[port]);
	sio__ntbdev_close(a_port2);
}

/*
 * A process of port @port joining fabric @home, in a child: its error in
 * @msg ("" once it joined), within @ms. Return: its errno, 0 joined, -1
 * no answer in time.
 */
static int join_from(const char *home, int port, char *msg, size_t len, int ms)
{
	int pfd[2], st, err = -1;
	ssize_t n;
	pid_t pid;

	cr_assert_eq(pipe(pfd), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		struct sio_fabric *g;
		int e = sio_fabric_open(home, port, &g);
		char out[sizeof(int) + 512] = { 0 };

		memcpy(out, &(int){ -e }, sizeof(int));
		if (e)
			snprintf(out + sizeof(int), sizeof(out) - sizeof(int), "%s", sio_errmsg());
		else
			sio_fabric_close(g);
		_exit(write(pfd[1], out, sizeof(out)) == sizeof(out) ? 0 : 1);
	}
	close(pfd[1]);
	msg[0] = 0;
	if (poll(&(struct pollfd){ .fd = pfd[0], .events = POLLIN }, 1, ms) == 1) {
		char in[sizeof(int) + 512];

		n = read(pfd[0], in, sizeof(in));
		if (n == (ssize_t)sizeof(in)) {
			memcpy(&err, in, sizeof(int));
			snprintf(msg, len, "%s", in + sizeof(int));
		}
	}
	close(pfd[0]);
	if (err < 0)
		kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return err;
}

/*
 * The standby (port 2) loses its link with the home (port 3) on NTB 0
 * while NTB 1 still has it: the home is alive, so the standby must not take
 * over once the hold is over (two homes), and its service says why. Both
 * nodes hold two NTBs; ports 0 and 1's services never stand by
 * (SMARTIO_NTB_STANDBY=0 for ntb-adapters), port 2's may.
 */
Test(adapters, a_home_reached_through_another_ntb_is_not_taken_over, .fini = teardown)
{
	char log3[PATH_MAX], log2[PATH_MAX], b[PATH_MAX], dev[2 * PATH_MAX], home[SIO_NAME_MAX];
	char msg[512];
	struct sio_fabric *f;
	struct sio_segment *s;
	bool held, took;
	int err;

	served = getenv("SIO_NTB_SERVED") ? atoi(getenv("SIO_NTB_SERVED")) : 4;
	if (served != 2)
		cr_skip_test("ports 2 and 3 are played here: SIO_NTB_SERVED=2 (meson test ntb-adapters)");
	setup();
	snprintf(b, sizeof(b), "fake:%s/../ntb1-sb", getenv("SMARTIO_RUNDIR"));
	cr_assert(!mkdir(b + 5, 0700), "%s: %s", b + 5, strerror(errno));
	snprintf(dev, sizeof(dev), "%s,%s", getenv("SMARTIO_NTB_DEV"), b);
	serve3_on(dev, log3, sizeof(log3), false);
	cr_assert(log_says(log3, "port 3's memory", 10000), "port 3's service is up");
	snprintf(home, sizeof(home), "r-%d", getpid());
	snprintf(home_name, sizeof(home_name), "%s", home);
	create_on_port3(home, 2);
	setenv("SMARTIO_NTB_STANDBY", "1", 1);
	serve2_pid = serve_on(2, dev, log2, sizeof(log2), false);
	unsetenv("SMARTIO_NTB_STANDBY");
	cr_assert(log_says(log2, "the standby home of fabric", 15000), "port 2 did not stand by");

	fake_link(2, 0);	/* NTB 0 alone: NTB 1 keeps port 2's link with port 3 */
	held = log_says(log2, "adapter 1 (fake NTB", 20000) &&
	       log_says(log2, "the home is alive, so this node does not take over", 100);
	took = log_says(log2, "is the fabric's home from now on", 1000);
	/* a process of port 2 cannot reach the state meanwhile: it is told why
	 * at once (its service sees NTB 1, it does not), not after the hold */
	err = held && !took ? join_from(home, 2, msg, sizeof(msg), 3000) : 0;
	fake_link(2, 1);
	cr_assert(!took, "port 2 took over from a home that NTB 1 still reaches");
	cr_assert(held, "port 2's service did not say why it held back");
	cr_assert_eq(err, EHOSTUNREACH, "a process of port 2 was told (%d): %s", err, msg);
	cr_assert(strstr(msg, "adapter 1") && strstr(msg, "the home is alive"),
		  "a process of port 2 was told: %s", msg);
	/* the home stayed where it was: a process finds it there */
	cr_assert_eq(sio_fabric_open(home, 0, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(src_of(wf_of(f))->boot.port, 3, "the home moved");
	cr_assert_eq(sio_segment_create(f, 34, 4096, 0, &s), 0, "%s", sio_errmsg());
	sio_segment_close(s);
	sio_fabric_close(f);
	cr_assert_eq(sio_fabric_destroy(home), 0, "%s", sio_errmsg());
	home_name[0] = 0;
}
