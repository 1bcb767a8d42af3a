/* SPDX-License-Identifier: MIT */
/*
 * nvme-mcast-identify: one Identify Controller whose data pointer is a
 * multicast group's address lands the same 4 KiB in every subscriber's
 * memory in a single command (paper sections 6.5 and 7.4.2). Subscribers
 * are processes on other nodes, each with a local segment attached to the
 * group; each checks what it received against a unicast Identify. The same
 * data is then fetched with one unicast Identify per subscriber, to compare
 * times.
 *
 * The issuing node brings the controller up itself, so run it while no
 * manager holds the controller.
 *
 * Where the nodes are separate kernels (the shmwin backend), the
 * subscribers cannot be forked here: each kernel runs
 * `nvme-mcast-identify --subscribe ISSUER --node N`, and the issuer runs
 * with `--external`; they meet at the issuer's control segment, whose id
 * is fixed (CTL_ID).
 */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <smartio/nvme.h>
#include "tool.h"

#define ID_SIZE		4096
#define MAX_SUBS	255
#define WAIT_NS		(60ull * 1000000000ull)
#define SETTLE_NS	(2ull * 1000000000ull)	/* a fabric that copies to subscribers */
#define CTL_ID		0x4d434931u		/* "MCI1": the control segment, --external */
#define CTL_MAGIC	0x4d434944u

struct control {		/* a segment on the issuing node */
	uint32_t ready;
	uint32_t go;
	uint32_t done;
	uint32_t magic;		/* set last, --external: group and ref_id are valid */
	uint32_t group;
	uint32_t ref_id;
	uint8_t verdict[MAX_SUBS + 1];	/* per node: 1 same data, 2 differs, 3 error */
};

enum { V_SAME = 1, V_DIFF = 2, V_ERR = 3 };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Bounded wait until the control word at @off reaches @want. */
static int wait_for(struct sio_segment *s, struct control *c, size_t off, uint32_t want)
{
	uint32_t *w = (uint32_t *)((char *)c + off), v;
	uint64_t end = now_ns() + WAIT_NS;

	while ((v = __atomic_load_n(w, __ATOMIC_ACQUIRE)) < want) {
		if (now_ns() > end)
			return -ETIMEDOUT;
		if (sio_fabric_alive(sio_segment_fabric(s))) {
			fprintf(stderr, "nvme-mcast-identify: %s; stopping\n", sio_errmsg());
			return -ESHUTDOWN;
		}
		sio_segment_wait(s, off, v, 10000000);
	}
	return 0;
}

static void bump(struct sio_segment *s, struct control *c, size_t off)
{
	__atomic_fetch_add((uint32_t *)((char *)c + off), 1, __ATOMIC_RELEASE);
	sio_segment_notify(s, off);
}

/*
 * Does @got hold @want? A fabric whose multicast is a copy (shmwin: the
 * lender's relay) delivers a little later: wait a bounded time for it.
 */
static bool received(struct sio_segment *s, const uint8_t *got, const uint8_t *want)
{
	uint64_t end = now_ns() + SETTLE_NS;

	while (memcmp(got, want, ID_SIZE)) {
		if (now_ns() > end)
			return false;
		sio_segment_wait(s, 0, *(const volatile uint32_t *)got, 5000000);
	}
	return true;
}

/* --subscribe: find the issuer's control segment, waiting for it a bounded time. */
static int find_control(struct sio_fabric *f, int issuer, struct sio_segment **ctl,
			struct control **c)
{
	uint64_t end = now_ns() + WAIT_NS;

	for (;;) {
		if (!sio_segment_connect(f, issuer, CTL_ID, ctl)) {
			if (sio_segment_map(*ctl, (void **)c))
				return -1;
			while (__atomic_load_n(&(*c)->magic, __ATOMIC_ACQUIRE) != CTL_MAGIC) {
				if (now_ns() > end)
					return -1;
				sio_segment_wait(*ctl, offsetof(struct control, magic), 0, 10000000);
			}
			return 0;
		}
		if (now_ns() > end)
			return -1;
		struct timespec ts = { 0, 100000000 };
		nanosleep(&ts, NULL);
	}
}

/* A subscriber on @node: attach a local segment, wait, compare. */
static int subscriber(const char *fabric, int node, int issuer, uint32_t group,
		      uint32_t ctl_id, uint32_t ref_id)
{
	struct sio_fabric *f;
	struct sio_segment *mine, *ctl, *ref;
	struct control *c;
	uint8_t *got, *want;
	int v = V_ERR;

	if (sio_fabric_open(fabric, node, &f))
		return 1;
	node = sio_fabric_node_id(f);	/* -1 was $SMARTIO_NODE */
	if (!ctl_id) {	/* --subscribe: the issuer is elsewhere */
		if (find_control(f, issuer, &ctl, &c)) {
			fprintf(stderr, "nvme-mcast-identify: no issuer on node %d within %llu s: %s\n",
				issuer, WAIT_NS / 1000000000ull, sio_errmsg());
			sio_fabric_close(f);
			return 1;
		}
		group = c->group;
		ref_id = c->ref_id;
	} else if (sio_segment_connect(f, issuer, ctl_id, &ctl) || sio_segment_map(ctl, (void **)&c)) {
		return 1;
	}
	if (!sio_segment_create(f, 0, ID_SIZE, 0, &mine) && !sio_segment_map(mine, (void **)&got) &&
	    !sio_mcast_subscribe(f, group, mine) &&
	    !sio_segment_connect(f, issuer, ref_id, &ref) && !sio_segment_map(ref, (void **)&want)) {
		memset(got, 0, ID_SIZE);
		bump(ctl, c, offsetof(struct control, ready));
		if (!wait_for(ctl, c, offsetof(struct control, go), 1))
			v = received(mine, got, want) ? V_SAME : V_DIFF;
	} else {
		fprintf(stderr, "subscriber on node %d: %s\n", node, sio_errmsg());
		bump(ctl, c, offsetof(struct control, ready));
	}
	c->verdict[node] = (uint8_t)v;
	bump(ctl, c, offsetof(struct control, done));
	sio_fabric_close(f);	/* releases the segments and the subscription */
	if (!ctl_id)
		printf("subscriber on node %d: %s\n", node, v == V_SAME ? "received the same 4 KiB" :
		       v == V_DIFF ? "received other data" : "failed");
	return ctl_id ? 0 : v != V_SAME;
}

static void usage(FILE *o)
{
	fprintf(o, "usage: nvme-mcast-identify [options]\n"
		"Issue one Identify Controller to a multicast group and check that every\n"
		"subscribed node received the same 4 KiB; compare with one unicast\n"
		"Identify per subscriber.\n"
		TOOL_COMMON_HELP
		"  --subscribers N one subscriber process on each of N other nodes\n"
		"                  (default: every other node, at most %d)\n"
		"  --external      the subscribers run elsewhere (other kernels): wait\n"
		"                  for N of them instead of starting them\n"
		"  --subscribe ISSUER  be one subscriber, as --node, of the issuer on\n"
		"                  node ISSUER (which runs with --external)\n", MAX_SUBS);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { TOOL_COMMON_LONGOPTS,
		{ "subscribers", required_argument, NULL, 's' }, { "help", no_argument, NULL, 'h' },
		{ "external", no_argument, NULL, 'x' }, { "subscribe", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 } };
	struct tool_common t;
	struct sio_fabric *f;
	struct sio_device_info di;
	struct sio_device *dev;
	struct sio_nvme_ctrl *ctrl;
	struct sio_segment *ctl_seg, *ref_seg;
	struct sio_topology topo;
	struct control *c;
	uint8_t *ref;
	uint64_t ref_bus, gbus, t_mc, t_uni = 0;
	uint32_t group;
	int nsub = -1, opt, ret, nodes[MAX_SUBS], n = 0, same = 0, issuer = -1;
	bool external = false;
	pid_t pids[MAX_SUBS];
	uint16_t st = 0;
	uint64_t v;

	tool_init(&t, "nvme-mcast-identify");
	while ((opt = tool_getopt(&t, argc, argv, lo)) != -1) {
		if (opt == TOOL_OPT_BAD)
			return 2;
		if (opt == 's') {
			if (tool_u64(&t, "--subscribers", optarg, 1, MAX_SUBS, &v))
				return 2;
			nsub = (int)v;
		} else if (opt == 'x') {
			external = true;
		} else if (opt == 'S') {
			if (tool_u64(&t, "--subscribe", optarg, 0, SIO_MAX_NODES - 1, &v))
				return 2;
			issuer = (int)v;
		} else if (opt == 'h')
			return usage(stdout), 0;
		else
			return usage(stderr), 2;
	}
	if (issuer >= 0) {	/* one subscriber, the issuer elsewhere */
		if (external || issuer == t.node) {
			fprintf(stderr, "nvme-mcast-identify: --subscribe names the issuer's node, another than --node, and goes without --external\n");
			return 2;
		}
		return subscriber(t.fabric, t.node, issuer, 0, 0, 0);
	}
	if (tool_open(&t, &f))
		return 1;
	sio_fabric_topology(f, &topo);
	if (nsub < 0)
		nsub = topo.nodes - 1;
	if (nsub < 1 || nsub > MAX_SUBS || nsub > topo.nodes - 1) {
		fprintf(stderr, "nvme-mcast-identify: --subscribers must be 1..%d (the fabric has %d other nodes)\n",
			topo.nodes - 1 < MAX_SUBS ? topo.nodes - 1 : MAX_SUBS, topo.nodes - 1);
		return 2;
	}
	if ((ret = sio_nvme_find_device(f, t.device, &di)) ||
	    (ret = sio_device_borrow(f, di.id, SIO_BORROW_EXCLUSIVE, &dev))) {
		fprintf(stderr, "nvme-mcast-identify: %s%s\n", sio_errmsg(),
			ret == -EBUSY ? " (stop the manager first: this program brings the controller up itself)" : "");
		return 1;
	}
	if ((ret = sio_nvme_ctrl_open(dev, NULL, &ctrl))) {
		fprintf(stderr, "nvme-mcast-identify: controller bring-up: %s\n", sio_errmsg());
		return 1;
	}
	/* the reference: a unicast Identify into the issuer's own memory */
	if (sio_segment_create(f, external ? CTL_ID : 0, sizeof(*c), 0, &ctl_seg) ||
	    sio_segment_map(ctl_seg, (void **)&c) ||
	    sio_segment_create(f, 0, ID_SIZE, 0, &ref_seg) || sio_segment_map(ref_seg, (void **)&ref) ||
	    sio_device_map(dev, ref_seg, &ref_bus) ||
	    sio_nvme_ctrl_identify(ctrl, NVME_IDENTIFY_CNS_CTRL, 0, ref_bus, &st) ||
	    sio_mcast_create(f, ID_SIZE, &group) || sio_device_map_mcast(dev, group, &gbus)) {
		fprintf(stderr, "nvme-mcast-identify: setup: %s %s\n", sio_errmsg(),
			st ? sio_nvme_status_str(st) : "");
		return 1;
	}
	memset(c, 0, sizeof(*c));
	struct sio_segment_info ci, ri;
	sio_segment_info(ctl_seg, &ci);
	sio_segment_info(ref_seg, &ri);
	fflush(stdout);
	if (external) {	/* they come by themselves: the control segment tells them where */
		c->group = group;
		c->ref_id = ri.id;
		__atomic_store_n(&c->magic, CTL_MAGIC, __ATOMIC_RELEASE);
		sio_segment_notify(ctl_seg, offsetof(struct control, magic));
		for (int node = 0; node < topo.nodes && n < nsub; node++)
			if (node != t.node)
				nodes[n++] = node;
	}
	for (int node = 0; node < topo.nodes && n < nsub && !external; node++) {
		if (node == t.node)
			continue;
		pid_t p = fork();
		if (p == 0)
			_exit(subscriber(sio_fabric_name(f), node, t.node, group, ci.id, ri.id));
		nodes[n] = node;
		pids[n++] = p;
	}
	ret = wait_for(ctl_seg, c, offsetof(struct control, ready), (uint32_t)n);
	if (ret) {
		fprintf(stderr, "nvme-mcast-identify: subscribers did not get ready\n");
		goto out;
	}
	uint64_t t0 = now_ns();
	ret = sio_nvme_ctrl_identify(ctrl, NVME_IDENTIFY_CNS_CTRL, 0, gbus, &st);
	t_mc = now_ns() - t0;
	if (ret)
		fprintf(stderr, "nvme-mcast-identify: multicast Identify failed: %s\n",
			st ? sio_nvme_status_str(st) : sio_errmsg());
	bump(ctl_seg, c, offsetof(struct control, go));
	wait_for(ctl_seg, c, offsetof(struct control, done), (uint32_t)n);
	for (int i = 0; i < n; i++)
		same += c->verdict[nodes[i]] == V_SAME;

	/* the same 4 KiB to each subscriber node by unicast, one command each */
	for (int i = 0; i < n && !ret; i++) {
		struct sio_segment *s;
		uint64_t bus;
		if (sio_segment_create_on(f, nodes[i], 0, ID_SIZE, 0, &s) || sio_device_map(dev, s, &bus)) {
			fprintf(stderr, "nvme-mcast-identify: unicast to node %d: %s\n", nodes[i], sio_errmsg());
			break;
		}
		t0 = now_ns();
		sio_nvme_ctrl_identify(ctrl, NVME_IDENTIFY_CNS_CTRL, 0, bus, &st);
		t_uni += now_ns() - t0;
		sio_device_unmap(dev, s);
		sio_segment_close(s);
	}
	if (t.json)
		printf("{\"subscribers\":%d,\"identical\":%d,\"multicast_commands\":1,\"multicast_us\":%.1f,"
		       "\"unicast_commands\":%d,\"unicast_us\":%.1f}\n", n, same, t_mc / 1e3, n, t_uni / 1e3);
	else
		printf("multicast Identify: 1 command put the same 4 KiB in %d of %d subscribers' memory in %.1f us\n"
		       "unicast Identify:   %d commands, one per subscriber, took %.1f us\n"
		       "(wall-clock times on this fabric's backend, not hardware figures)\n",
		       same, n, t_mc / 1e3, n, t_uni / 1e3);
out:
	for (int i = 0; i < n && !external; i++)
		waitpid(pids[i], NULL, 0);
	sio_mcast_destroy(f, group);
	sio_nvme_ctrl_close(ctrl);
	sio_device_close(dev);
	sio_segment_close(ref_seg);
	sio_segment_close(ctl_seg);
	sio_fabric_close(f);
	return ret || same != n ? 1 : 0;
}
