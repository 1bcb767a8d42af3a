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
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <smartio/nvme.h>
#include "clock.h"
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
	uint8_t joined[MAX_SUBS + 1];	/* per node: 1 once its subscriber is ready */
};

enum { V_SAME = 1, V_DIFF = 2, V_ERR = 3 };

struct issuer;
static int lost_subscriber(struct issuer *is, size_t off);

/*
 * Bounded wait until the control word at @off reaches @want. The issuer
 * passes itself to stop at once when a subscriber it forked is gone.
 */
static int wait_for(struct sio_segment *s, struct control *c, size_t off, uint32_t want,
		    struct issuer *is)
{
	uint32_t *w = (uint32_t *)((char *)c + off), v;
	uint64_t end = sio__now_ns() + WAIT_NS;

	while ((v = __atomic_load_n(w, __ATOMIC_ACQUIRE)) < want) {
		if (sio__now_ns() > end)
			return -ETIMEDOUT;
		if (is && lost_subscriber(is, off))
			return -ECHILD;
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
	uint64_t end = sio__now_ns() + SETTLE_NS;

	while (memcmp(got, want, ID_SIZE)) {
		if (sio__now_ns() > end)
			return false;
		sio_segment_wait(s, 0, *(const volatile uint32_t *)got, 5000000);
	}
	return true;
}

/* --subscribe: find the issuer's control segment, waiting for it a bounded time. */
static int find_control(struct sio_fabric *f, int issuer, struct sio_segment **ctl,
			struct control **c)
{
	uint64_t end = sio__now_ns() + WAIT_NS;

	for (;;) {
		if (!sio_segment_connect(f, issuer, CTL_ID, ctl)) {
			if (sio_segment_map(*ctl, (void **)c))
				return -1;
			while (__atomic_load_n(&(*c)->magic, __ATOMIC_ACQUIRE) != CTL_MAGIC) {
				if (sio__now_ns() > end)
					return -1;
				sio_segment_wait(*ctl, offsetof(struct control, magic), 0, 10000000);
			}
			return 0;
		}
		if (sio__now_ns() > end)
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

	if (sio_fabric_open(fabric, node, &f)) {
		fprintf(stderr, "subscriber on node %d: %s\n", node, sio_errmsg());
		return 1;
	}
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
		fprintf(stderr, "subscriber on node %d: the issuer's control segment: %s\n", node,
			sio_errmsg());
		sio_fabric_close(f);
		return 1;
	}
	if (!sio_segment_create(f, 0, ID_SIZE, 0, &mine) && !sio_segment_map(mine, (void **)&got) &&
	    !sio_mcast_subscribe(f, group, mine) &&
	    !sio_segment_connect(f, issuer, ref_id, &ref) && !sio_segment_map(ref, (void **)&want)) {
		memset(got, 0, ID_SIZE);
		c->joined[node] = 1;	/* published by the bump's release */
		bump(ctl, c, offsetof(struct control, ready));
		if (!wait_for(ctl, c, offsetof(struct control, go), 1, NULL))
			v = received(mine, got, want) ? V_SAME : V_DIFF;
	} else {
		fprintf(stderr, "subscriber on node %d: %s\n", node, sio_errmsg());
		c->joined[node] = 1;
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
		"Identify per subscriber. It brings the controller up itself: run it\n"
		"while no manager serves the device.\n\n"
		TOOL_COMMON_HELP
		"  --subscribers N   one subscriber process on each of N other nodes\n"
		"                    (default: every other node, at most %d)\n"
		"  --external        the subscribers run elsewhere (other kernels): wait\n"
		"                    for N of them, on whichever nodes they run, instead\n"
		"                    of starting them (give N where not every node runs\n"
		"                    one: an NTB's nodes are its port numbers)\n"
		"  --local-subscriber  the issuer's own node has a subscriber too (with\n"
		"                    --external: a --subscribe process of this node)\n"
		"  --subscribe ISSUER  be one subscriber, as --node, of the issuer on\n"
		"                    node ISSUER (which runs with --external)\n"
		TOOL_JSON_HELP
		PROG_HELP
		"Exit status: 0 every subscriber received the same data, 1 not, or an\n"
		"error; 2 usage error.\n", MAX_SUBS);
}

/* The issuer's state: the controller, the reference copy, the group. */
struct issuer {
	struct tool_common *t;
	struct sio_fabric *f;
	struct sio_topology topo;
	struct sio_device *dev;
	struct sio_nvme_ctrl *ctrl;
	struct sio_segment *ctl_seg, *ref_seg;
	struct control *c;
	uint8_t *ref;
	uint64_t ref_bus, gbus;
	uint32_t group;
	bool external, local, have_group;
	int nodes[MAX_SUBS], n;
	pid_t pids[MAX_SUBS];
};

/*
 * A subscriber forked here that exited without its node's mark for the
 * stage at @off (joined for ready, a verdict for done): say which and how.
 */
static int lost_subscriber(struct issuer *is, size_t off)
{
	for (int i = 0; i < is->n && !is->external; i++) {
		int node = is->nodes[i], st;
		bool marked = off == offsetof(struct control, ready) ? is->c->joined[node] :
			      is->c->verdict[node];

		if (is->pids[i] <= 0 || waitpid(is->pids[i], &st, WNOHANG) != is->pids[i])
			continue;
		is->pids[i] = 0;	/* reaped */
		if (marked)
			continue;
		fprintf(stderr, "nvme-mcast-identify: the subscriber on node %d %s %d before it "
			"was %s\n", node, WIFSIGNALED(st) ? "was killed by signal" : "exited with",
			WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
			off == offsetof(struct control, ready) ? "ready" : "done");
		return 1;
	}
	return 0;
}

/* Take the controller, make the reference Identify and the group. */
static int issuer_setup(struct issuer *is)
{
	struct sio_device_info di;
	uint16_t st = 0;
	int ret;

	if ((ret = sio_nvme_find_device(is->f, is->t->device, &di)) ||
	    (ret = sio_device_borrow(is->f, di.id, SIO_BORROW_EXCLUSIVE, &is->dev)))
		return prog_fail("%s%s", sio_errmsg(), ret == -EBUSY ? " (stop the manager first: "
				 "this program brings the controller up itself)" : "");
	if (sio_nvme_ctrl_open(is->dev, NULL, &is->ctrl))
		return prog_fail("controller bring-up: %s", sio_errmsg());
	/* the reference: a unicast Identify into the issuer's own memory */
	if (sio_segment_create(is->f, is->external ? CTL_ID : 0, sizeof(*is->c), 0, &is->ctl_seg) ||
	    sio_segment_map(is->ctl_seg, (void **)&is->c) ||
	    sio_segment_create(is->f, 0, ID_SIZE, 0, &is->ref_seg) ||
	    sio_segment_map(is->ref_seg, (void **)&is->ref) ||
	    sio_device_map(is->dev, is->ref_seg, &is->ref_bus) ||
	    sio_nvme_ctrl_identify(is->ctrl, NVME_IDENTIFY_CNS_CTRL, 0, is->ref_bus, &st) ||
	    sio_mcast_create(is->f, ID_SIZE, &is->group))
		return prog_fail("setup: %s %s", sio_errmsg(), st ? sio_nvme_status_str(st) : "");
	is->have_group = true;
	if (sio_device_map_mcast(is->dev, is->group, &is->gbus))
		return prog_fail("setup: %s", sio_errmsg());
	memset(is->c, 0, sizeof(*is->c));
	return 0;
}

/* The subscribers: forked here, one per node, or (--external) announced. */
static void start_subscribers(struct issuer *is, int nsub)
{
	struct sio_segment_info ci, ri;

	sio_segment_info(is->ctl_seg, &ci);
	sio_segment_info(is->ref_seg, &ri);
	fflush(stdout);
	if (is->external) {	/* they come by themselves: the control segment tells them where */
		is->c->group = is->group;
		is->c->ref_id = ri.id;
		__atomic_store_n(&is->c->magic, CTL_MAGIC, __ATOMIC_RELEASE);
		sio_segment_notify(is->ctl_seg, offsetof(struct control, magic));
		is->n = nsub;	/* their nodes once they are ready (joined_nodes()) */
		return;
	}
	for (int node = 0; node < is->topo.nodes && is->n < nsub; node++) {
		pid_t p;

		if (node == is->t->node && !is->local)
			continue;
		p = fork();
		if (p == 0)
			_exit(subscriber(sio_fabric_name(is->f), node, is->t->node, is->group, ci.id,
					 ri.id));
		is->nodes[is->n] = node;
		is->pids[is->n++] = p;
	}
}

/*
 * --external: the nodes whose subscribers said they are ready. A fabric's
 * node ids need not all have a kernel (an NTB's port numbers: idt's 0, 2
 * and 4 make nodes 0 to 4), so they are not guessed from the count.
 */
static int joined_nodes(struct issuer *is, char *list, size_t len)
{
	int n = 0;
	size_t at = 0;

	list[0] = '\0';
	for (int node = 0; node < is->topo.nodes && node <= MAX_SUBS; node++) {
		if (!__atomic_load_n(&is->c->joined[node], __ATOMIC_ACQUIRE))
			continue;
		if (n < MAX_SUBS)
			is->nodes[n++] = node;
		if (at < len)
			at += (size_t)snprintf(list + at, len - at, " %d", node);
	}
	return n;
}

/* The same 4 KiB to each subscriber node by unicast, one command each. */
static uint64_t unicast_all(struct issuer *is)
{
	uint64_t t_uni = 0, t0;
	uint16_t st;

	for (int i = 0; i < is->n; i++) {
		struct sio_segment *s;
		uint64_t bus;

		if (sio_segment_create_on(is->f, is->nodes[i], 0, ID_SIZE, 0, &s) ||
		    sio_device_map(is->dev, s, &bus)) {
			prog_fail("unicast to node %d: %s", is->nodes[i], sio_errmsg());
			break;
		}
		t0 = sio__now_ns();
		sio_nvme_ctrl_identify(is->ctrl, NVME_IDENTIFY_CNS_CTRL, 0, bus, &st);
		t_uni += sio__now_ns() - t0;
		sio_device_unmap(is->dev, s);
		sio_segment_close(s);
	}
	return t_uni;
}

static void report(const struct issuer *is, int same, uint64_t t_mc, uint64_t t_uni)
{
	if (is->t->json) {
		struct json_object *o = json_object_new_object();

		pj_int(o, "subscribers", is->n);
		pj_int(o, "identical", same);
		pj_int(o, "multicast_commands", 1);
		pj_dbl(o, "multicast_us", (double)t_mc / 1e3);
		pj_int(o, "unicast_commands", is->n);
		pj_dbl(o, "unicast_us", (double)t_uni / 1e3);
		prog_json_print(stdout, o);
		return;
	}
	printf("multicast Identify: 1 command put the same 4 KiB in %d of %d subscribers' memory in %.1f us\n"
	       "unicast Identify:   %d commands, one per subscriber, took %.1f us\n"
	       "(wall-clock times on this fabric's backend, not hardware figures)\n",
	       same, is->n, (double)t_mc / 1e3, is->n, (double)t_uni / 1e3);
}

/* One multicast Identify, checked by every subscriber; then the unicasts. */
static int issue(struct issuer *is, int nsub)
{
	uint64_t t0, t_mc, t_uni = 0;
	int ret, same = 0;
	uint16_t st = 0;

	start_subscribers(is, nsub);
	ret = wait_for(is->ctl_seg, is->c, offsetof(struct control, ready), (uint32_t)is->n, is);
	if (is->external) {
		char list[4 * (MAX_SUBS + 1)];
		int got = joined_nodes(is, list, sizeof(list));

		if (ret)
			return prog_fail("subscribers did not get ready: %d of %d within %llu s "
					 "(ready on nodes:%s); where fewer nodes run one, say how "
					 "many with --subscribers", got, is->n,
					 WAIT_NS / 1000000000ull, got ? list : " none");
		is->n = got;
	} else if (ret) {
		return prog_fail("subscribers did not get ready: %u of %d%s", is->c->ready, is->n,
				 ret == -ECHILD ? " (one exited, above)" : " within the wait");
	}
	t0 = sio__now_ns();
	ret = sio_nvme_ctrl_identify(is->ctrl, NVME_IDENTIFY_CNS_CTRL, 0, is->gbus, &st);
	t_mc = sio__now_ns() - t0;
	if (ret)
		prog_fail("multicast Identify failed: %s", st ? sio_nvme_status_str(st) : sio_errmsg());
	bump(is->ctl_seg, is->c, offsetof(struct control, go));
	wait_for(is->ctl_seg, is->c, offsetof(struct control, done), (uint32_t)is->n, is);
	for (int i = 0; i < is->n; i++)
		same += is->c->verdict[is->nodes[i]] == V_SAME;
	if (!ret)
		t_uni = unicast_all(is);
	report(is, same, t_mc, t_uni);
	return ret || same != is->n ? PROG_FAIL : PROG_OK;
}

static int run_issuer(struct tool_common *t, int nsub, bool external, bool local)
{
	struct issuer is = { .t = t, .external = external, .local = local };
	int rc, most;

	if (tool_open(t, &is.f))
		return PROG_FAIL;
	sio_fabric_topology(is.f, &is.topo);
	most = is.topo.nodes - 1 + local < MAX_SUBS ? is.topo.nodes - 1 + local : MAX_SUBS;
	if (nsub < 0)
		nsub = most;
	if (nsub < 1 || nsub > most) {
		sio_fabric_close(is.f);
		prog_usage_error("--subscribers must be 1..%d (the fabric has %d other nodes%s)",
				 most, is.topo.nodes - 1, local ? ", and this one" : "");
	}
	rc = issuer_setup(&is);
	if (!rc)
		rc = issue(&is, nsub);
	for (int i = 0; i < is.n && !external; i++) {
		if (rc && is.pids[i] > 0)	/* they would wait for a go that never comes */
			kill(is.pids[i], SIGTERM);
		if (is.pids[i] > 0)
			waitpid(is.pids[i], NULL, 0);
	}
	if (is.have_group)
		sio_mcast_destroy(is.f, is.group);
	sio_nvme_ctrl_close(is.ctrl);
	sio_device_close(is.dev);
	sio_segment_close(is.ref_seg);
	sio_segment_close(is.ctl_seg);
	sio_fabric_close(is.f);
	return rc;
}

int main(int argc, char **argv)
{
	enum { O_SUBS = 256, O_EXTERNAL, O_LOCAL, O_SUBSCRIBE };
	static const struct option lo[] = {
		TOOL_COMMON_LONGOPTS,
		TOOL_JSON_LONGOPT,
		{ "subscribers", required_argument, NULL, O_SUBS },
		{ "external", no_argument, NULL, O_EXTERNAL },
		{ "local-subscriber", no_argument, NULL, O_LOCAL },
		{ "subscribe", required_argument, NULL, O_SUBSCRIBE },
		{ NULL, 0, NULL, 0 } };
	struct tool_common t;
	int nsub = -1, opt, issuer = -1;
	bool external = false, local = false;

	tool_init(&t, "nvme-mcast-identify", usage);
	while ((opt = tool_getopt(&t, argc, argv, "h", lo)) != -1) {
		switch (opt) {
		case O_SUBS: nsub = (int)prog_u64("--subscribers", optarg, 1, MAX_SUBS); break;
		case O_EXTERNAL: external = true; break;
		case O_LOCAL: local = true; break;
		case O_SUBSCRIBE: issuer = (int)prog_u64("--subscribe", optarg, 0, SIO_MAX_NODES - 1); break;
		}
	}
	if (issuer >= 0) {	/* one subscriber, the issuer elsewhere */
		if (external || local)
			prog_usage_error("--subscribe names the issuer's node, and goes without "
					 "--external and --local-subscriber");
		return subscriber(t.fabric, t.node, issuer, 0, 0, 0);
	}
	return run_issuer(&t, nsub, external, local);
}
