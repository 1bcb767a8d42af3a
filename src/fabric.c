/* SPDX-License-Identifier: MIT */
/* Fabric lifetime: create/destroy the registry, join/leave as a node. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include "internal.h"
#include "sio_config.h"
#if SIO_HAVE_HUGETLBFS
#include <hugetlbfs.h>
#endif

uint64_t sio__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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

static const char *run_base(void)
{
	const char *b = getenv("SMARTIO_RUNDIR");

	return b && *b ? b : "/dev/shm";
}

static int check_name(const char **name)
{
	const char *n = *name;

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
	*name = n;
	return 0;
}

static void fabric_dir(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/smartio-%s", run_base(), name);
}

static void find_hugedir(struct sio_registry *r)
{
#if SIO_HAVE_HUGETLBFS
	const char *p = hugetlbfs_find_path();

	if (p && strlen(p) < sizeof(r->hugedir))
		strcpy(r->hugedir, p);
#else
	(void)r;
#endif
}

static int config_check(const struct sio_fabric_config *c, struct sio_topology *t)
{
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
	return 0;
}

int sio_fabric_create(const char *name, const struct sio_fabric_config *cfg)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	struct sio_registry *r;
	struct sio_topology t;
	pthread_mutexattr_t ma;
	int fd, ret;

	if ((ret = check_name(&name)) || (ret = config_check(cfg, &t)))
		return ret;
	fabric_dir(name, dir, sizeof(dir));
	if (mkdir(dir, 0700)) {
		if (errno == EEXIST)
			return sio__err(EEXIST, "fabric '%s' already exists (%s)", name, dir);
		return sio__err(errno, "cannot create %s: %s", dir, strerror(errno));
	}
	snprintf(path, sizeof(path), "%s/registry", dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(*r))) {
		ret = sio__err(errno, "cannot create %s: %s", path, strerror(errno));
		goto fail;
	}
	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r == MAP_FAILED) {
		ret = sio__err(errno, "cannot map %s: %s", path, strerror(errno));
		goto fail;
	}
	r->version = SIO_REG_VERSION;
	r->size = sizeof(*r);
	r->topo = t;
	r->next_dev_id = 1;
	r->next_gen = 1;
	for (int n = 0; n < t.nodes; n++) {
		r->next_seg_id[n] = SIO_AUTO_SEG_ID;
		for (int a = 0; a < t.adapters; a++) {
			r->nodes[n].link_up[a] = 1;
			if (t.kind == SIO_TOPO_B2B)
				r->nodes[n].sw[a] = -1;
			else if (t.kind == SIO_TOPO_SWITCH)
				r->nodes[n].sw[a] = a * t.switches;
			else	/* sub-switches are 1..; 0 is the top switch */
				r->nodes[n].sw[a] = a * t.switches + 1 + n / t.nodes_per_switch;
		}
	}
	find_hugedir(r);
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&r->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	atomic_thread_fence(memory_order_release);
	r->magic = SIO_REG_MAGIC;	/* last: a half-made registry is never opened */
	munmap(r, sizeof(*r));
	close(fd);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(path);
	rmdir(dir);
	return ret;
}

static void rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[PATH_MAX + 300];

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

int sio_fabric_destroy(const char *name)
{
	char dir[PATH_MAX], reg[PATH_MAX + 16], hp[PATH_MAX + 300];
	int ret;

	if ((ret = check_name(&name)))
		return ret;
	fabric_dir(name, dir, sizeof(dir));
	if (access(dir, F_OK))
		return sio__err(ENOENT, "no fabric '%s' (%s does not exist)", name, dir);
	/* huge-page segment files live outside the directory */
	snprintf(reg, sizeof(reg), "%s/registry", dir);
	int fd = open(reg, O_RDONLY);
	if (fd >= 0) {
		struct sio_registry *r = mmap(NULL, sizeof(*r), PROT_READ, MAP_SHARED, fd, 0);
		if (r != MAP_FAILED) {
			for (int s = 0; r->hugedir[0] && s < SIO_MAX_SEGS; s++)
				if (r->segs[s].used && r->segs[s].huge) {
					snprintf(hp, sizeof(hp), "%s/smartio-%s-seg.%d.%llu", r->hugedir, name,
						 s, (unsigned long long)r->segs[s].gen);
					unlink(hp);
				}
			munmap(r, sizeof(*r));
		}
		close(fd);
	}
	rm_tree(dir);
	return 0;
}

int sio__segment_path(struct sio_fabric *f, int slot, char *buf, size_t len)
{
	const struct reg_seg *s = &f->reg->segs[slot];

	if (s->huge)
		snprintf(buf, len, "%s/smartio-%s-seg.%d.%llu", f->reg->hugedir, f->name, slot,
			 (unsigned long long)s->gen);
	else
		snprintf(buf, len, "%s/seg.%d.%llu", f->dir, slot, (unsigned long long)s->gen);
	return 0;
}

static int open_evsock(struct sio_fabric *f)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return sio__err(errno, "socket: %s", strerror(errno));
	if (strlen(f->dir) > 80) {
		close(fd);
		return sio__err(ENAMETOOLONG, "fabric directory %s is too long for its event sockets; use a shorter SMARTIO_RUNDIR",
				f->dir);
	}
	snprintf(a.sun_path, sizeof(a.sun_path), "%.80s/ev.%d.%d", f->dir, f->proc, getpid());
	unlink(a.sun_path);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || chmod(a.sun_path, 0600)) {
		int e = errno;
		close(fd);
		return sio__err(e, "cannot bind event socket %s: %s", a.sun_path, strerror(e));
	}
	f->evfd = fd;
	return 0;
}

static void fabric_free(struct sio_fabric *f)
{
	if (f->evfd >= 0)
		close(f->evfd);
	free(f->segmap);
	free(f->segmap_gen);
	free(f->segmap_len);
	munmap(f->reg, sizeof(*f->reg));
	close(f->regfd);
	free(f);
}

int sio_fabric_open(const char *name, int node, struct sio_fabric **out)
{
	char path[PATH_MAX + 16];
	struct sio_fabric *f;
	struct stat st;
	int ret, p;

	if (!out)
		return sio__err(EINVAL, "out is NULL");
	if ((ret = check_name(&name)))
		return ret;
	if (node < 0) {
		const char *e = getenv("SMARTIO_NODE");
		node = e && *e ? atoi(e) : 0;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return sio__err(ENOMEM, "out of memory");
	f->evfd = -1;
	snprintf(f->name, sizeof(f->name), "%s", name);
	fabric_dir(name, f->dir, sizeof(f->dir));
	snprintf(path, sizeof(path), "%s/registry", f->dir);
	f->regfd = open(path, O_RDWR | O_CLOEXEC);
	if (f->regfd < 0) {
		ret = errno == ENOENT ? sio__err(ENOENT, "no fabric '%s' (create it with 'smartio create %s')", name, name)
				      : sio__err(errno, "cannot open fabric '%s': %s", name, strerror(errno));
		free(f);
		return ret;
	}
	if (fstat(f->regfd, &st) || (uint64_t)st.st_size != sizeof(struct sio_registry)) {
		close(f->regfd);
		free(f);
		return sio__err(EPROTO, "fabric '%s' has a registry of another version", name);
	}
	f->reg = mmap(NULL, sizeof(*f->reg), PROT_READ | PROT_WRITE, MAP_SHARED, f->regfd, 0);
	if (f->reg == MAP_FAILED || f->reg->magic != SIO_REG_MAGIC) {
		if (f->reg != MAP_FAILED)
			munmap(f->reg, sizeof(*f->reg));
		close(f->regfd);
		free(f);
		return sio__err(EPROTO, "fabric '%s' is not initialised", name);
	}
	if (node >= f->reg->topo.nodes) {
		ret = sio__err(ENODEV, "fabric '%s' has nodes 0..%d; there is no node %d", name,
			       f->reg->topo.nodes - 1, node);
		goto fail_map;
	}
	f->node = node;
	f->segmap = calloc(SIO_MAX_SEGS, sizeof(*f->segmap));
	f->segmap_gen = calloc(SIO_MAX_SEGS, sizeof(*f->segmap_gen));
	f->segmap_len = calloc(SIO_MAX_SEGS, sizeof(*f->segmap_len));
	if (!f->segmap || !f->segmap_gen || !f->segmap_len) {
		ret = sio__err(ENOMEM, "out of memory");
		goto fail_map;
	}
	sio__lock(f);
	reg_reap(f);
	for (p = 0; p < SIO_MAX_PROCS && f->reg->procs[p].used; p++)
		;
	if (p == SIO_MAX_PROCS) {
		sio__unlock(f);
		ret = sio__err(EUSERS, "fabric '%s' has all %d process slots in use", name, SIO_MAX_PROCS);
		goto fail_map;
	}
	f->reg->procs[p] = (struct reg_proc){ .used = 1, .pid = getpid(), .node = node,
					      .starttime = reg_starttime(getpid()) };
	f->proc = p;
	sio__unlock(f);
	if ((ret = open_evsock(f))) {
		sio__lock(f);
		memset(&f->reg->procs[p], 0, sizeof(f->reg->procs[p]));
		sio__unlock(f);
		goto fail_map;
	}
	*out = f;
	return 0;
fail_map:
	fabric_free(f);
	return ret;
}

void sio_fabric_close(struct sio_fabric *f)
{
	char p[PATH_MAX + 32];

	if (!f)
		return;
	sio__lock(f);
	reg_proc_release(f, f->proc, false);
	sio__unlock(f);
	for (int s = 0; s < SIO_MAX_SEGS; s++)
		sio__segmap_drop(f, s);
	snprintf(p, sizeof(p), "%s/ev.%d.%d", f->dir, f->proc, getpid());
	unlink(p);
	fabric_free(f);
}

int sio_fabric_node_id(const struct sio_fabric *f)
{
	return f ? f->node : sio__err(EINVAL, "fabric handle is NULL");
}

const char *sio_fabric_name(const struct sio_fabric *f)
{
	return f ? f->name : "";
}

int sio_fabric_nodes(struct sio_fabric *f, struct sio_node_info *out, int max)
{
	int n;

	if (!f || max < 0 || (max && !out))
		return sio__err(EINVAL, "bad arguments to sio_fabric_nodes");
	sio__lock(f);
	n = f->reg->topo.nodes;
	for (int i = 0; i < n && i < max; i++) {
		struct sio_node_info *o = &out[i];
		const struct reg_node *rn = &f->reg->nodes[i];

		memset(o, 0, sizeof(*o));
		o->id = i;
		o->adapters = f->reg->topo.adapters;
		o->windows_total = f->reg->topo.windows;
		for (int a = 0; a < o->adapters; a++) {
			o->switch_id[a] = rn->sw[a];
			o->link_up[a] = rn->link_up[a];
			o->windows_used[a] = rn->windows_used[a];
		}
		for (int p = 0; p < SIO_MAX_PROCS; p++)
			o->procs += f->reg->procs[p].used && f->reg->procs[p].node == i;
	}
	sio__unlock(f);
	return n;
}

int sio_fabric_topology(struct sio_fabric *f, struct sio_topology *out)
{
	if (!f || !out)
		return sio__err(EINVAL, "bad arguments to sio_fabric_topology");
	*out = f->reg->topo;
	return 0;
}

static void lock_noreap(struct sio_fabric *f)
{
	if (pthread_mutex_lock(&f->reg->lock) == EOWNERDEAD)
		pthread_mutex_consistent(&f->reg->lock);	/* the holder died; reaped soon */
}

int sio_fabric_reap(struct sio_fabric *f)
{
	int n;

	if (!f)
		return sio__err(EINVAL, "fabric handle is NULL");
	lock_noreap(f);
	n = reg_reap(f);
	sio__unlock(f);
	return n;
}

void sio__lock(struct sio_fabric *f)
{
	lock_noreap(f);
	if (sio__now_ns() - f->reg->last_reap_ns > 100000000ull)
		reg_reap(f);
}

void sio__unlock(struct sio_fabric *f)
{
	pthread_mutex_unlock(&f->reg->lock);
}

static bool want_all(struct sio_fabric *f, int p, const struct sio_event *ev)
{
	(void)f; (void)p; (void)ev;
	return true;
}

int sio_link_get(struct sio_fabric *f, int node, int adapter)
{
	if (!f || node < 0 || node >= f->reg->topo.nodes || adapter < 0 ||
	    adapter >= f->reg->topo.adapters)
		return sio__err(EINVAL, "no adapter %d on node %d", adapter, node);
	return atomic_load_explicit(&f->reg->nodes[node].link_up[adapter], memory_order_acquire);
}

int sio_link_set(struct sio_fabric *f, int node, int adapter, bool up)
{
	struct sio_event ev = { .type = up ? SIO_EV_LINK_UP : SIO_EV_LINK_DOWN, .node = node };

	if (!f)
		return sio__err(EINVAL, "fabric handle is NULL");
	if (node < 0 || node >= f->reg->topo.nodes)
		return sio__err(EINVAL, "no node %d (fabric has %d)", node, f->reg->topo.nodes);
	if (adapter < -1 || adapter >= f->reg->topo.adapters)
		return sio__err(EINVAL, "node %d has adapters 0..%d, not %d", node,
				f->reg->topo.adapters - 1, adapter);
	sio__lock(f);
	for (int a = 0; a < f->reg->topo.adapters; a++) {
		if (adapter >= 0 && a != adapter)
			continue;
		if (f->reg->nodes[node].link_up[a] == up)
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
