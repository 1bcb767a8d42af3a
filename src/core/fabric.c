/* SPDX-License-Identifier: MIT */
/*
 * Fabric lifetime: create/destroy a fabric, join/leave it as a node, and the
 * registry lock around every use of it. Where the registry lives and how it
 * is locked is the fabric backend's (core/backend.h); what it holds is ours.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "parse.h"
#include "internal.h"

#define REAP_EVERY_NS		100000000ull

/* The latency model's delays are far below a scheduler tick: spin. */
void sio__delay_ns(uint64_t ns)
{
	uint64_t end;

	if (!ns)
		return;
	end = sio__now_ns() + ns;
	while (sio__now_ns() < end)
		__builtin_ia32_pause();
}

static int check_name(const char **name)
{
	const char *n = *name;
	uint64_t ns;
	int ret;

	/* Every entry point passes here: a bad lock timeout is refused at
	 * once rather than replaced, silently, deep inside the lock. */
	if ((ret = sio__lock_timeout_ns(&ns)))
		return ret;
	if (!n)
		n = getenv("SMARTIO_FABRIC");
	if (!n || !*n)
		return sio__err(EINVAL, "no fabric name given and SMARTIO_FABRIC is not set");
	if (strlen(n) >= SIO_NAME_MAX)
		return sio__err(EINVAL, "fabric name '%s' is longer than %d characters", n, SIO_NAME_MAX - 1);
	for (const char *p = n; *p; p++)
		if (!(*p == '-' || *p == '_' || (*p >= '0' && *p <= '9') ||
		      (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
			return sio__err(EINVAL, "fabric name '%s' may hold only letters, digits, '-' and '_'", n);
	/* "-" and "-x" read as options (or stdin) on every command line */
	if (n[0] == '-')
		return sio__err(EINVAL, "fabric name '%s' starts with '-': a name must start with a letter, a digit or '_'", n);
	*name = n;
	return 0;
}

static int config_check(const struct sio_fabric_config *c, struct sio_topology *t)
{
	const char *why;

	memset(t, 0, sizeof(*t));
	if (!c)
		return sio__err(EINVAL, "fabric configuration is NULL");
	if (c->nodes < 1 || c->nodes > SIO_MAX_NODES)
		return sio__err(EINVAL, "nodes must be 1..%d, not %d", SIO_MAX_NODES, c->nodes);
	if ((unsigned)c->topology > SIO_TOPO_CASCADE)
		return sio__err(EINVAL, "unknown topology %d", (int)c->topology);
	if (c->topology == SIO_TOPO_B2B && c->nodes > 2)
		return sio__err(EINVAL, "a back-to-back topology joins at most 2 nodes, not %d", c->nodes);
	t->kind = c->topology;
	t->nodes = c->nodes;
	t->adapters = c->adapters ? c->adapters : 1;
	if (t->adapters < 1 || t->adapters > SIO_MAX_ADAPTERS)
		return sio__err(EINVAL, "adapters per node must be 1..%d", SIO_MAX_ADAPTERS);
	t->windows = c->windows ? c->windows : SIO_DEFAULT_WINDOWS;
	if (t->windows < 1 || t->windows > SIO_MAX_WINDOWS)
		return sio__err(EINVAL, "windows per adapter must be 1..%d, not %d", SIO_MAX_WINDOWS, t->windows);
	t->window_size = c->window_size ? c->window_size : (1ull << 30);
	if (t->window_size < 4096 || t->window_size > SIO_SEG_MAX_SIZE ||
	    (t->window_size & (t->window_size - 1)))
		return sio__err(EINVAL, "window size must be a power of two from 4 KiB to 4 GiB");
	t->mcast_groups = c->mcast_groups ? c->mcast_groups : 16;
	if (t->mcast_groups < 0 || t->mcast_groups > SIO_MAX_GROUPS)
		return sio__err(EINVAL, "multicast groups must be 0..%d", SIO_MAX_GROUPS);
	t->nodes_per_switch = c->nodes_per_switch ? c->nodes_per_switch : 10;
	if (t->kind == SIO_TOPO_CASCADE)
		t->switches = 1 + (t->nodes + t->nodes_per_switch - 1) / t->nodes_per_switch;
	else
		t->switches = t->kind == SIO_TOPO_SWITCH ? 1 : 0;
	t->latency_model = c->latency_model;
	t->adapter_ns = c->adapter_ns ? c->adapter_ns : 132;
	t->chassis_ns = c->chassis_ns ? c->chassis_ns : 150;
	t->switch_ns = c->switch_ns ? c->switch_ns : 170;
	if (sio__reg_topo_check(t, &why))
		return sio__err(EINVAL, "the fabric configuration has %s", why);
	return 0;
}


/* The registry as a new fabric starts: ours to fill, the backend's header fields set. */
static void reg_init(struct sio_registry *r, const struct sio_topology *t, const char *backend)
{
	r->version = SIO_REG_VERSION;
	r->size = sizeof(*r);
	snprintf(r->backend, sizeof(r->backend), "%s", backend);
	memcpy(&r->topo, t, sizeof(*t));
	r->next_dev_id = 1;
	r->next_gen = 1;
	for (int n = 0; n < t->nodes; n++) {
		r->next_seg_id[n] = SIO_AUTO_SEG_ID;
		for (int a = 0; a < t->adapters; a++) {
			r->nodes[n].link_up[a] = 1;
			if (t->kind == SIO_TOPO_B2B)
				r->nodes[n].sw[a] = -1;
			else if (t->kind == SIO_TOPO_SWITCH)
				r->nodes[n].sw[a] = a * t->switches;
			else	/* sub-switches are 1..; 0 is the top switch */
				r->nodes[n].sw[a] = a * t->switches + 1 + n / t->nodes_per_switch;
		}
	}
	atomic_thread_fence(memory_order_release);
	r->magic = SIO_REG_MAGIC;	/* last: a half-made registry is never opened */
}

static int create(const char *name, const struct sio_fabric_config *cfg, bool group, gid_t gid)
{
	struct sio_fabric f = { .proc = -1 };
	struct sio_topology t;
	int ret;

	if ((ret = check_name(&name)) || (ret = config_check(cfg, &t)) ||
	    (ret = sio__fabric_backend(&f.ops)))
		return ret;
	snprintf(f.name, sizeof(f.name), "%s", name);
	if ((ret = f.ops->create(&f, group, gid)))
		return ret;
	reg_init(f.reg, &t, f.ops->name);
	f.ops->detach(&f);
	return 0;
}

int sio_fabric_create(const char *name, const struct sio_fabric_config *cfg)
{
	return create(name, cfg, false, 0);
}

int sio_fabric_create_group(const char *name, const struct sio_fabric_config *cfg, gid_t gid)
{
	return create(name, cfg, true, gid);
}

/* "pid 42 on node 0 (lends 1 device, 2 borrows, 3 segments)", for destroy's refusal. */
static int describe_proc(struct sio_fabric *f, int p, char *buf, size_t len)
{
	const struct sio_registry *r = f->reg;
	int devs = 0, borrows = 0, segs = 0;

	for (int d = 0; d < SIO_MAX_DEVS; d++)
		devs += r->devs[d].used && r->devs[d].owner == p;
	for (int b = 0; b < SIO_MAX_BORROWS; b++)
		borrows += r->borrows[b].used && r->borrows[b].proc == p;
	for (int i = 0; i < SIO_MAX_SEGS; i++)
		segs += r->segs[i].used && r->segs[i].owner == p;
	return snprintf(buf, len, "pid %d on node %d (lends %d device%s, %d borrow%s, %d segment%s)",
			r->procs[p].pid, r->procs[p].node, devs, devs == 1 ? "" : "s",
			borrows, borrows == 1 ? "" : "s", segs, segs == 1 ? "" : "s");
}

static bool want_all(struct sio_fabric *f, int p, const struct sio_event *ev);
static int open_as(const char *name, int node, int32_t flags, struct sio_fabric **out);

/*
 * Who is still attached, reaped of the dead first: refuse (listing them),
 * or with @force tell each to leave. A registry we cannot open or lock says
 * nothing of who is attached; the backend removes it all the same. @seen:
 * whether the fabric was there to look at.
 */
static int destroy_check(const char *name, bool force, bool *seen)
{
	struct sio_event ev = { .type = SIO_EV_FABRIC_GONE, .adapter = -1, .device = -1 };
	struct sio_fabric *f;
	char list[SIO_ERRMSG_MAX - 96] = "";
	size_t at = 0;
	int n = 0, ret;

	/* marked from the start: a destroy at the same time never sees us
	 * unmarked */
	ret = open_as(name, 0, REG_PROC_F_DESTROY, &f);
	*seen = ret != -ENOENT;	/* there, whole or not */
	if (ret)
		return 0;
	if ((f->reg->uid != (uint32_t)geteuid() && geteuid() != 0) || sio__lock_noreap(f)) {
		sio_fabric_close(f);	/* not ours to destroy: the backend says why */
		return 0;
	}
	sio__reg_reap(f);
	for (int p = 0; p < SIO_MAX_PROCS; p++) {
		/* a destroy at the same time is no user of the fabric */
		if (!f->reg->procs[p].used || p == f->proc ||
		    (f->reg->procs[p].flags & REG_PROC_F_DESTROY))
			continue;
		if (++n > 4 || at >= sizeof(list))
			continue;
		if (n > 1)
			at += (size_t)snprintf(list + at, sizeof(list) - at, "; ");
		if (at < sizeof(list))
			at += (size_t)describe_proc(f, p, list + at, sizeof(list) - at);
	}
	if (n && force) {
		ev.node = f->node;
		ev.pid = getpid();
		ev.time_ns = sio__now_ns();
		sio__event_broadcast(f, &ev, want_all);
	}
	sio__unlock(f);
	sio_fabric_close(f);
	if (!n || force)
		return 0;
	return sio__err(EBUSY, "fabric '%s' has %d process%s attached: %s%s; stop them, or destroy with --force (they are told to leave)",
			name, n, n == 1 ? "" : "es", list, n > 4 ? " ..." : "");
}

int sio_fabric_destroy_flags(const char *name, unsigned int flags)
{
	const struct sio_fabric_ops *ops;
	bool seen = false;
	int ret;

	if ((ret = check_name(&name)) || (ret = sio__fabric_backend(&ops)))
		return ret;
	if (flags & ~SIO_DESTROY_FORCE)
		return sio__err(EINVAL, "unknown sio_fabric_destroy_flags() flags 0x%x", flags);
	if ((ret = destroy_check(name, flags & SIO_DESTROY_FORCE, &seen)))
		return ret;
	ret = ops->destroy(name);
	/* gone since we looked: a destroy at the same time won, and the fabric
	 * is no more, as asked */
	if (ret == -ENOENT && seen)
		return 0;
	return ret;
}

int sio_fabric_destroy(const char *name)
{
	return sio_fabric_destroy_flags(name, SIO_DESTROY_FORCE);
}

int sio_fabric_list(char (*names)[SIO_NAME_MAX], int max)
{
	const struct sio_fabric_ops *ops;
	int ret;

	if ((ret = sio__fabric_backend(&ops)))
		return ret;
	if (max < 0 || (max && !names))
		return sio__err(EINVAL, "sio_fabric_list(): %d names at %p", max, (void *)names);
	if (!ops->list)
		return sio__err(EOPNOTSUPP, "the %s fabric backend cannot list its fabrics",
				ops->name);
	return ops->list(names, max);
}

/*
 * Whether our slot in the registry is still ours. Across kernels a process
 * cut off (its link down, its host stopped) for longer than its lease is
 * taken for dead, and its slot released with what it held: going on, it
 * would write to what is no longer its own (a manager to the mailbox a
 * standby took over, which keeps the segment's generation). A slot that
 * reads all ones is out of reach, not released: the waits for the link
 * tell that. Return: 0, or -EOWNERDEAD saying so.
 */
static int slot_check(struct sio_fabric *f)
{
	const struct reg_proc *rp;
	int32_t used, pid, node;

	if (f->proc < 0 || f->proc >= SIO_MAX_PROCS)
		return 0;
	rp = &f->reg->procs[f->proc];
	used = __atomic_load_n(&rp->used, __ATOMIC_ACQUIRE);
	pid = __atomic_load_n(&rp->pid, __ATOMIC_RELAXED);
	node = __atomic_load_n(&rp->node, __ATOMIC_RELAXED);
	if ((used == -1 && pid == -1 && node == -1) || (used && pid == f->pid && node == f->node))
		return 0;
	return sio__err(EOWNERDEAD, "this process (pid %d, node %d) was taken for dead in "
			"fabric '%s' and released with what it held: out of reach for longer "
			"than its lease ($SMARTIO_SHMWIN_LEASE_MS), or its registry slot "
			"written over; join the fabric again", f->pid, f->node, f->name);
}

int sio_fabric_alive(struct sio_fabric *f)
{
	if (!f)
		return sio__err(EINVAL, "fabric handle is NULL");
	if (f->ops->removed && f->ops->removed(f))
		return sio__err(ESHUTDOWN, "fabric '%s' was destroyed", f->name);
	return slot_check(f);
}

int sio__fabric_host_path(struct sio_fabric *f, const char *leaf, char *buf, size_t len)
{
	return f->ops->host_path(f, leaf, buf, len);
}

static void fabric_free(struct sio_fabric *f)
{
	if (f->reg)
		f->ops->detach(f);
	free(f->segmap);
	free(f->segmap_gen);
	free(f->segmap_len);
	free(f);
}

/*
 * The node to join as: @node, or $SMARTIO_NODE for a negative one, or the
 * backend's default (ntb: this kernel's port).
 */
static int pick_node(const struct sio_fabric_ops *ops, int node)
{
	const char *e = getenv("SMARTIO_NODE");
	uint64_t n;

	if (node >= 0)
		return node;
	if (!e || !*e)	/* set but empty is unset, as for $SMARTIO_FABRIC */
		return ops->default_node ? ops->default_node() : 0;
	if (sio_parse_u64(e, 0, SIO_MAX_NODES - 1, &n))
		return sio_err_wrap(EINVAL, "SMARTIO_NODE='%s' is not a node id", e);
	return (int)n;
}

/*
 * Attach the registry through the backend, then check what the core reads
 * before it takes the lock, and copy what must not change under us.
 */
static int attach(struct sio_fabric *f)
{
	struct sio_registry *r;
	const char *why;
	int ret;

	if ((ret = f->ops->attach(f)))
		return ret;
	r = f->reg;
	if (!memchr(r->backend, 0, sizeof(r->backend)))
		return sio__reg_corrupt(f, "its fabric backend's name is not terminated");
	if (strcmp(r->backend, f->ops->name))
		return sio__err(EPROTO, "fabric '%s' belongs to the '%s' fabric backend, not '%s' (set SMARTIO_FABRIC_BACKEND=%s)",
				f->name, r->backend, f->ops->name, r->backend);
	if (sio__reg_topo_check(&r->topo, &why))
		return sio__reg_corrupt(f, "its topology has a %s", why);
	memcpy(&f->topo, &r->topo, sizeof(f->topo));	/* bytes, so sio__lock can compare */
	return 0;
}

int sio__fabric_attach(const char *name, int node, struct sio_fabric **out)
{
	struct sio_fabric *f = calloc(1, sizeof(*f));
	int ret;

	if (!f)
		return sio__err(ENOMEM, "out of memory");
	f->proc = -1;
	f->node = node;
	snprintf(f->name, sizeof(f->name), "%s", name);
	if ((ret = sio__fabric_backend(&f->ops)) || (ret = attach(f))) {
		fabric_free(f);
		return ret;
	}
	if (node < 0 || node >= f->topo.nodes) {
		ret = sio__err(ENODEV, "fabric '%s' has nodes 0..%d; there is no node %d"
			       " (a fabric of more: smartio create --nodes N)", name,
			       f->topo.nodes - 1, node);
		fabric_free(f);
		return ret;
	}
	*out = f;
	return 0;
}

void sio__fabric_detach(struct sio_fabric *f)
{
	if (f)
		fabric_free(f);
}

/* Join as a process with @flags (REG_PROC_F_*), set as it is registered. */
static int open_as(const char *name, int node, int32_t flags, struct sio_fabric **out)
{
	const struct sio_fabric_ops *ops;
	struct sio_fabric *f;
	int ret, p;

	if (!out)
		return sio__err(EINVAL, "out is NULL");
	if ((ret = check_name(&name)) || (ret = sio__fabric_backend(&ops)))
		return ret;
	if ((node = pick_node(ops, node)) < 0)
		return node;
	f = calloc(1, sizeof(*f));
	if (!f)
		return sio__err(ENOMEM, "out of memory");
	f->proc = -1;
	f->ops = ops;
	f->node = node;	/* the backend may check it (ntb: a kernel is the node of its port) */
	snprintf(f->name, sizeof(f->name), "%s", name);
	if ((ret = attach(f)))
		goto fail;
	if (node >= f->topo.nodes) {
		ret = sio__err(ENODEV, "fabric '%s' has nodes 0..%d; there is no node %d"
			       " (a fabric of more: smartio create --nodes N)", name,
			       f->topo.nodes - 1, node);
		goto fail;
	}
	f->node = node;
	f->segmap = calloc(SIO_MAX_SEGS, sizeof(*f->segmap));
	f->segmap_gen = calloc(SIO_MAX_SEGS, sizeof(*f->segmap_gen));
	f->segmap_len = calloc(SIO_MAX_SEGS, sizeof(*f->segmap_len));
	if (!f->segmap || !f->segmap_gen || !f->segmap_len) {
		ret = sio__err(ENOMEM, "out of memory");
		goto fail;
	}
	if ((ret = sio__lock_noreap(f)))
		goto fail;
	if ((ret = sio__reg_validate(f))) {
		sio__unlock(f);
		goto fail;
	}
	sio__reg_reap(f);
	for (p = 0; p < SIO_MAX_PROCS && f->reg->procs[p].used; p++)
		;
	if (p == SIO_MAX_PROCS) {
		sio__unlock(f);
		ret = sio__err(EUSERS, "fabric '%s' has all %d process slots in use", name, SIO_MAX_PROCS);
		goto fail;
	}
	f->reg->procs[p] = (struct reg_proc){ .used = 1, .pid = getpid(), .node = node,
					      .flags = flags };
	f->ops->proc_init(f, &f->reg->procs[p]);
	f->proc = p;
	f->pid = f->reg->procs[p].pid;
	sio__unlock(f);
	if ((ret = f->ops->ev_open(f))) {
		if (!sio__lock(f)) {
			memset(&f->reg->procs[p], 0, sizeof(f->reg->procs[p]));
			sio__unlock(f);
		}
		goto fail;
	}
	*out = f;
	return 0;
fail:
	fabric_free(f);
	return ret;
}

int sio_fabric_open(const char *name, int node, struct sio_fabric **out)
{
	return open_as(name, node, 0, out);
}

void sio_fabric_close(struct sio_fabric *f)
{
	if (!f)
		return;
	/* a registry we cannot lock keeps our slot until a reaper finds us gone */
	if (!sio__lock(f)) {
		sio__reg_proc_release(f, f->proc, false);
		sio__unlock(f);
	}
	for (int s = 0; s < SIO_MAX_SEGS; s++)
		sio__segmap_drop(f, s);
	f->ops->ev_close(f);
	fabric_free(f);
}

int sio__lock_noreap(struct sio_fabric *f)
{
	bool died;
	int ret = f->ops->lock(f, &died);

	if (ret)
		return ret;
	/* all ones across a link that is down: out of reach, not corrupt */
	if ((ret = sio__reg_reach_check(f)) || (ret = sio__reg_check_header(f->reg, f->name)) ||
	    (memcmp(&f->reg->topo, &f->topo, sizeof(f->topo)) &&
	     (ret = sio__reg_corrupt(f, "its topology changed since this process joined")))) {
		sio__unlock(f);
		return ret;
	}
	/* released, it holds nothing here, and its slot may be another's */
	if ((ret = slot_check(f))) {
		sio__unlock(f);
		return ret;
	}
	if (died)	/* it may have left its work half done: reap it now */
		f->reg->last_reap_ns = 0;
	if (f->nleft)
		sio__seg_leaves_apply(f);
	return 0;
}

int sio__lock(struct sio_fabric *f)
{
	int ret = sio__lock_noreap(f);

	if (!ret && sio__now_ns() - f->reg->last_reap_ns > REAP_EVERY_NS)
		sio__reg_reap(f);
	return ret;
}

void sio__unlock(struct sio_fabric *f)
{
	f->ops->unlock(f);
}

int sio_fabric_node_id(const struct sio_fabric *f)
{
	return f ? f->node : sio__err(EINVAL, "fabric handle is NULL");
}

const char *sio_fabric_name(const struct sio_fabric *f)
{
	return f ? f->name : "";
}

void sio__node_info(struct sio_fabric *f, int n, struct sio_node_info *o)
{
	const struct reg_node *rn = &f->reg->nodes[n];

	memset(o, 0, sizeof(*o));
	o->id = n;
	o->adapters = f->topo.adapters;
	o->windows_total = f->topo.windows;
	for (int a = 0; a < o->adapters; a++) {
		o->switch_id[a] = rn->sw[a];
		o->link_up[a] = rn->link_up[a] != 0;
		o->windows_used[a] = rn->windows_used[a];
	}
	for (int p = 0; p < SIO_MAX_PROCS; p++)
		o->procs += f->reg->procs[p].used && f->reg->procs[p].node == n;
}

int sio_fabric_nodes(struct sio_fabric *f, struct sio_node_info *out, int max)
{
	int n;

	if (!f || max < 0 || (max && !out))
		return sio__err(EINVAL, "bad arguments to sio_fabric_nodes");
	if ((n = sio__lock(f)))
		return n;
	n = f->topo.nodes;
	for (int i = 0; i < n && i < max; i++)
		sio__node_info(f, i, &out[i]);
	sio__unlock(f);
	return n;
}

int sio_fabric_topology(struct sio_fabric *f, struct sio_topology *out)
{
	if (!f || !out)
		return sio__err(EINVAL, "bad arguments to sio_fabric_topology");
	*out = f->topo;
	return 0;
}

int sio_fabric_reap(struct sio_fabric *f)
{
	int n;

	if (!f)
		return sio__err(EINVAL, "fabric handle is NULL");
	if ((n = sio__lock_noreap(f)))
		return n;
	n = sio__reg_reap(f);
	sio__unlock(f);
	return n;
}

int sio_fabric_proc_alive(struct sio_fabric *f, int node, int pid)
{
	int n, found = 0;

	if (!f)
		return sio__err(EINVAL, "fabric handle is NULL");
	if (pid <= 0 || node < 0 || node >= f->topo.nodes)
		return 0;
	if ((n = sio__lock_noreap(f)))
		return n;
	/* the process asked about, not every one (a manager asks for each of
	 * its clients in turn): one dead is reclaimed as a reap would */
	for (int p = 0; p < SIO_MAX_PROCS && !found; p++) {
		struct reg_proc *rp = &f->reg->procs[p];

		if (!rp->used || rp->pid != pid || rp->node != node)
			continue;
		if (f->ops->proc_alive(f, rp))
			found = 1;
		else
			sio__reg_proc_release(f, p, true);
	}
	sio__unlock(f);
	return found;
}

static bool want_all(struct sio_fabric *f, int p, const struct sio_event *ev)
{
	(void)f; (void)p; (void)ev;
	return true;
}

/* The registry's link state and the backend's (struct sio_fabric_ops @link). */
static int link_state(struct sio_fabric *f, int node, int adapter, bool resume)
{
	bool reg;

	if (!f || node < 0 || node >= f->topo.nodes || adapter < 0 || adapter >= f->topo.adapters)
		return sio__err(EINVAL, "no adapter %d on node %d", adapter, node);
	reg = atomic_load_explicit(&f->reg->nodes[node].link_up[adapter], memory_order_acquire);
	/* a resume takes the remapping over even while the link is down */
	if (!f->ops->link || (!reg && !resume))
		return reg;
	return f->ops->link(f, node, adapter, resume) && reg;
}

int sio_link_get(struct sio_fabric *f, int node, int adapter)
{
	return link_state(f, node, adapter, false);
}

int sio_link_resume(struct sio_fabric *f, int node, int adapter)
{
	return link_state(f, node, adapter, true);
}

int sio_link_set(struct sio_fabric *f, int node, int adapter, bool up)
{
	struct sio_event ev = { .type = up ? SIO_EV_LINK_UP : SIO_EV_LINK_DOWN, .node = node };
	int ret;

	if (!f)
		return sio__err(EINVAL, "fabric handle is NULL");
	if (node < 0 || node >= f->topo.nodes)
		return sio__err(EINVAL, "no node %d (fabric has %d)", node, f->topo.nodes);
	if (adapter < -1 || adapter >= f->topo.adapters)
		return sio__err(EINVAL, "node %d has adapters 0..%d, not %d", node,
				f->topo.adapters - 1, adapter);
	if ((ret = sio__lock(f)))
		return ret;
	for (int a = 0; a < f->topo.adapters; a++) {
		if (adapter >= 0 && a != adapter)
			continue;
		if (!!f->reg->nodes[node].link_up[a] == up)
			continue;
		atomic_store(&f->reg->nodes[node].link_up[a], up);
		ev.adapter = a;
		ev.time_ns = sio__now_ns();
		sio__event_broadcast(f, &ev, want_all);
	}
	reg_bump(f->reg);
	sio__unlock(f);
	return 0;
}
