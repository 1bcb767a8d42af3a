/* SPDX-License-Identifier: MIT */
/* Fabric lifetime: create/destroy the registry, join/leave as a node. */
#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
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

static void find_hugedir(char *buf, size_t len)
{
	buf[0] = 0;
#if SIO_HAVE_HUGETLBFS
	const char *p = hugetlbfs_find_path();

	if (p && strlen(p) < len)
		strcpy(buf, p);
#else
	(void)len;
#endif
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
	if (reg_topo_check(t, &why))
		return sio__err(EINVAL, "the fabric configuration has %s", why);
	return 0;
}

/* "uid 1000 (alice)", for messages. */
static const char *who(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *res = NULL;
	char tmp[1024];

	if (!getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) && res)
		snprintf(buf, len, "uid %u (%s)", (unsigned)uid, res->pw_name);
	else
		snprintf(buf, len, "uid %u", (unsigned)uid);
	return buf;
}

static bool in_group(gid_t gid)
{
	gid_t list[256];
	int n = getgroups(256, list);

	if (getegid() == gid)
		return true;
	for (int i = 0; i < n; i++)
		if (list[i] == gid)
			return true;
	return false;
}

/*
 * Open a fabric's directory without following a symlink, for a caller who
 * may use it: its owner, or a member of its group when it is a group fabric
 * (mode 2770). Anything else (a symlink, another user's directory, loose
 * modes) is refused: its registry is not ours to trust. Fills @st.
 */
static int open_dir(const char *name, const char *dir, struct stat *st, bool *group)
{
	char u[96], me[96];
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		int e = errno;
		if (e == ENOENT)
			return sio__err(ENOENT, "no fabric '%s' (create it with 'smartio create %s')", name, name);
		if (!lstat(dir, st) && S_ISLNK(st->st_mode))
			return sio__err(EPERM, "fabric '%s': %s is a symbolic link, not a fabric directory; refusing it",
					name, dir);
		if (!lstat(dir, st) && !S_ISDIR(st->st_mode))
			return sio__err(ENOTDIR, "fabric '%s': %s is not a directory", name, dir);
		if (e == EACCES && !lstat(dir, st) && st->st_uid != geteuid())
			return sio__err(EACCES, "fabric '%s' belongs to %s, not to you (%s)", name,
					who(st->st_uid, u, sizeof(u)), who(geteuid(), me, sizeof(me)));
		return sio__err(e, "fabric '%s': cannot open %s: %s", name, dir, strerror(e));
	}
	if (fstat(fd, st)) {
		int e = errno;
		close(fd);
		return sio__err(e, "fabric '%s': cannot stat %s: %s", name, dir, strerror(e));
	}
	*group = (st->st_mode & 07777) == 02770;
	if (st->st_uid != geteuid() && !(*group && in_group(st->st_gid))) {
		close(fd);
		return sio__err(EACCES, "fabric '%s' belongs to %s, not to you (%s): refusing it", name,
				who(st->st_uid, u, sizeof(u)), who(geteuid(), me, sizeof(me)));
	}
	if ((st->st_mode & 07777) != 0700 && !*group) {
		close(fd);
		return sio__err(EPERM, "fabric '%s': %s has mode %04o; a fabric's directory has 0700 (2770 for a group): refusing it",
				name, dir, (unsigned)(st->st_mode & 07777));
	}
	return fd;
}

/* The registry file itself: a plain file of the directory's owner, private, whole. */
static int check_regfile(const char *name, int fd, const struct stat *dst, bool group)
{
	unsigned want = group ? 0660 : 0600;
	struct stat st;
	char u[96], o[96];

	if (fstat(fd, &st))
		return sio__err(errno, "fabric '%s': cannot stat its registry: %s", name, strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1)
		return sio__err(EPERM, "fabric '%s': its registry is not a plain file with one link; refusing it", name);
	if (st.st_uid != dst->st_uid)
		return sio__err(EPERM, "fabric '%s': its registry belongs to %s, its directory to %s; refusing it",
				name, who(st.st_uid, u, sizeof(u)), who(dst->st_uid, o, sizeof(o)));
	if ((st.st_mode & 07777) != want || (group && st.st_gid != dst->st_gid))
		return sio__err(EPERM, "fabric '%s': its registry has mode %04o (group %u); expected %04o (group %u); refusing it",
				name, (unsigned)(st.st_mode & 07777), (unsigned)st.st_gid, want,
				(unsigned)dst->st_gid);
	if ((uint64_t)st.st_size != sizeof(struct sio_registry))
		return sio__err(EUCLEAN, "fabric '%s': its registry is %lld bytes, not %zu (truncated, or of another smartio version)",
				name, (long long)st.st_size, sizeof(struct sio_registry));
	return 0;
}

static int create(const char *name, const struct sio_fabric_config *cfg, bool group, gid_t gid)
{
	char dir[PATH_MAX], u[96];
	struct sio_registry *r;
	struct sio_topology t;
	struct stat st;
	int dfd = -1, fd = -1, ret;

	if ((ret = check_name(&name)) || (ret = config_check(cfg, &t)))
		return ret;
	fabric_dir(name, dir, sizeof(dir));
	if (mkdir(dir, 0700)) {
		if (errno != EEXIST)
			return sio__err(errno, "cannot create %s: %s", dir, strerror(errno));
		if (!lstat(dir, &st) && (st.st_uid != geteuid() || !S_ISDIR(st.st_mode)))
			return sio__err(EEXIST, "fabric '%s' already exists (%s, a %s of %s)", name, dir,
					S_ISDIR(st.st_mode) ? "directory" : "file", who(st.st_uid, u, sizeof(u)));
		return sio__err(EEXIST, "fabric '%s' already exists (%s)", name, dir);
	}
	/* modes exact, whatever the umask; the group after the owner is set */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || (group ? fchown(dfd, (uid_t)-1, gid) || fchmod(dfd, 02770) : fchmod(dfd, 0700))) {
		ret = sio__err(errno, "cannot set up %s%s: %s", dir, group ? " for its group" : "",
			       strerror(errno));
		goto fail;
	}
	fd = openat(dfd, "registry", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || (group && (fchown(fd, (uid_t)-1, gid) || fchmod(fd, 0660))) ||
	    (!group && fchmod(fd, 0600)) || ftruncate(fd, sizeof(*r))) {
		ret = sio__err(errno, "cannot create %s/registry: %s", dir, strerror(errno));
		goto fail;
	}
	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r == MAP_FAILED) {
		ret = sio__err(errno, "cannot map %s/registry: %s", dir, strerror(errno));
		goto fail;
	}
	r->version = SIO_REG_VERSION;
	r->size = sizeof(*r);
	r->uid = (uint32_t)geteuid();
	r->gid = group ? (uint32_t)gid : (uint32_t)getegid();
	r->flags = group ? REG_F_GROUP : 0;
	memcpy(&r->topo, &t, sizeof(t));
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
	find_hugedir(r->hugedir, sizeof(r->hugedir));
	atomic_thread_fence(memory_order_release);
	r->magic = SIO_REG_MAGIC;	/* last: a half-made registry is never opened */
	munmap(r, sizeof(*r));
	close(fd);
	close(dfd);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	if (dfd >= 0) {
		unlinkat(dfd, "registry", 0);
		close(dfd);
	}
	rmdir(dir);
	return ret;
}

int sio_fabric_create(const char *name, const struct sio_fabric_config *cfg)
{
	return create(name, cfg, false, 0);
}

int sio__fabric_create_group(const char *name, const struct sio_fabric_config *cfg, gid_t gid)
{
	return create(name, cfg, true, gid);
}

/*
 * The huge page directory of a fabric being destroyed: the registry's when
 * it is intact and the caller's own, else the system's. Only files named as
 * this fabric's segments are removed there.
 */
static void destroy_hugedir(int dfd, char *buf, size_t len)
{
	int fd = openat(dfd, "registry", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	buf[0] = 0;
	if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    (uint64_t)st.st_size == sizeof(struct sio_registry)) {
		const struct sio_registry *r = mmap(NULL, sizeof(*r), PROT_READ, MAP_SHARED, fd, 0);
		if (r != MAP_FAILED) {
			if (!reg_check_header(r, "") && memchr(r->hugedir, 0, sizeof(r->hugedir)) &&
			    r->hugedir[0] == '/')
				snprintf(buf, len, "%s", r->hugedir);
			munmap((void *)r, sizeof(*r));
		}
	}
	if (fd >= 0)
		close(fd);
	if (!buf[0])
		find_hugedir(buf, len);
}

/* Remove every entry of @dfd (not following links); the first error is kept. */
static int empty_dir(const char *dir, int dfd, const char *prefix, int err)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return err ? err : sio__err(errno, "cannot read %s: %s", dir, strerror(errno));
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		if (unlinkat(dfd, e->d_name, 0) && errno != ENOENT && !err)
			err = sio__err(errno, "cannot remove %s/%s: %s", dir, e->d_name, strerror(errno));
	}
	closedir(d);
	return err;
}

int sio_fabric_destroy(const char *name)
{
	char dir[PATH_MAX], hugedir[128], prefix[SIO_NAME_MAX + 16], u[96], me[96];
	struct stat st;
	int ret, dfd, hfd;

	if ((ret = check_name(&name)))
		return ret;
	fabric_dir(name, dir, sizeof(dir));
	/* its owner may remove it, modes or registry broken or not; root too */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		int e = errno;
		if (e == ENOENT)
			return sio__err(ENOENT, "no fabric '%s' (%s does not exist)", name, dir);
		if (!lstat(dir, &st) && S_ISLNK(st.st_mode))
			return sio__err(EPERM, "fabric '%s': %s is a symbolic link, not a fabric directory; not following it",
					name, dir);
		if (e == EACCES && !lstat(dir, &st))
			return sio__err(EACCES, "fabric '%s' belongs to %s; only its owner can destroy it, not you (%s)",
					name, who(st.st_uid, u, sizeof(u)), who(geteuid(), me, sizeof(me)));
		return sio__err(e, "fabric '%s': cannot open %s: %s", name, dir, strerror(e));
	}
	if (fstat(dfd, &st) || (st.st_uid != geteuid() && geteuid() != 0)) {
		close(dfd);
		return sio__err(EACCES, "fabric '%s' belongs to %s; only its owner can destroy it, not you (%s)",
				name, who(st.st_uid, u, sizeof(u)), who(geteuid(), me, sizeof(me)));
	}
	/* huge-page segment files live outside the directory */
	destroy_hugedir(dfd, hugedir, sizeof(hugedir));
	snprintf(prefix, sizeof(prefix), "smartio-%s-seg.", name);
	ret = empty_dir(dir, dfd, "", 0);
	close(dfd);
	if (hugedir[0] && (hfd = open(hugedir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
		ret = empty_dir(hugedir, hfd, prefix, ret);
		close(hfd);
	}
	if (rmdir(dir) && !ret)
		ret = sio__err(errno, "fabric '%s': cannot remove %s: %s", name, dir, strerror(errno));
	return ret;
}

int sio__segment_path(struct sio_fabric *f, int slot, char *buf, size_t len)
{
	const struct reg_seg *s = reg_seg_at(f->reg, slot);

	if (!s)
		return sio__err(EINVAL, "no segment slot %d", slot);
	if (s->huge)
		snprintf(buf, len, "%s/smartio-%s-seg.%d.%llu", f->hugedir, f->name, slot,
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
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || chmod(a.sun_path, f->group ? 0660 : 0600)) {
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
	if (f->reg)
		munmap(f->reg, sizeof(*f->reg));
	if (f->regfd >= 0)
		close(f->regfd);
	free(f);
}

/* The node to join as: @node, or $SMARTIO_NODE for a negative one. */
static int pick_node(int node)
{
	const char *e = getenv("SMARTIO_NODE");
	char *end;
	long n;

	if (node >= 0)
		return node;
	if (!e || !*e)
		return 0;
	n = strtol(e, &end, 10);
	if (*end || n < 0 || n >= SIO_MAX_NODES)
		return sio__err(EINVAL, "SMARTIO_NODE='%s' is not a node id (0..%d)", e, SIO_MAX_NODES - 1);
	return (int)n;
}

/* Map and check the registry, then copy what must not change under us. */
static int map_registry(struct sio_fabric *f)
{
	struct stat dst;
	const char *why;
	struct sio_registry *r;
	bool group = false;
	int dfd, ret;

	dfd = open_dir(f->name, f->dir, &dst, &group);
	if (dfd < 0)
		return dfd;
	f->regfd = openat(dfd, "registry", O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	ret = f->regfd < 0 ? sio__err(errno == ELOOP ? EPERM : errno, "fabric '%s': cannot open its registry: %s",
				      f->name, errno == ELOOP ? "it is a symbolic link" : strerror(errno))
			   : check_regfile(f->name, f->regfd, &dst, group);
	close(dfd);
	if (ret)
		return ret;
	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED, f->regfd, 0);
	if (r == MAP_FAILED)
		return sio__err(errno, "fabric '%s': cannot map its registry: %s", f->name, strerror(errno));
	f->reg = r;
	if ((ret = reg_check_header(r, f->name)))
		return ret;
	if (reg_topo_check(&r->topo, &why))
		return reg_corrupt(f, "its topology has a %s", why);
	if (r->uid != dst.st_uid || !!(r->flags & REG_F_GROUP) != group || (group && r->gid != dst.st_gid))
		return reg_corrupt(f, "it names owner uid %u, group %u%s; its directory says uid %u, group %u%s",
				   r->uid, r->gid, r->flags & REG_F_GROUP ? " (shared)" : "",
				   (unsigned)dst.st_uid, (unsigned)dst.st_gid, group ? " (shared)" : "");
	memcpy(&f->topo, &r->topo, sizeof(f->topo));	/* bytes, so sio__lock can compare */
	memcpy(f->hugedir, r->hugedir, sizeof(f->hugedir));
	f->hugedir[sizeof(f->hugedir) - 1] = 0;
	f->uid = dst.st_uid;
	f->gid = dst.st_gid;
	f->group = group;
	return 0;
}

int sio_fabric_open(const char *name, int node, struct sio_fabric **out)
{
	struct sio_fabric *f;
	int ret, p;

	if (!out)
		return sio__err(EINVAL, "out is NULL");
	if ((ret = check_name(&name)))
		return ret;
	if ((node = pick_node(node)) < 0)
		return node;
	f = calloc(1, sizeof(*f));
	if (!f)
		return sio__err(ENOMEM, "out of memory");
	f->evfd = f->regfd = -1;
	snprintf(f->name, sizeof(f->name), "%s", name);
	fabric_dir(name, f->dir, sizeof(f->dir));
	if ((ret = map_registry(f)))
		goto fail;
	if (node >= f->topo.nodes) {
		ret = sio__err(ENODEV, "fabric '%s' has nodes 0..%d; there is no node %d", name,
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
	if ((ret = reg_validate(f))) {
		sio__unlock(f);
		goto fail;
	}
	reg_reap(f);
	for (p = 0; p < SIO_MAX_PROCS && f->reg->procs[p].used; p++)
		;
	if (p == SIO_MAX_PROCS) {
		sio__unlock(f);
		ret = sio__err(EUSERS, "fabric '%s' has all %d process slots in use", name, SIO_MAX_PROCS);
		goto fail;
	}
	f->reg->procs[p] = (struct reg_proc){ .used = 1, .pid = getpid(), .node = node,
					      .starttime = reg_starttime(getpid()) };
	f->proc = p;
	sio__unlock(f);
	if ((ret = open_evsock(f))) {
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

void sio_fabric_close(struct sio_fabric *f)
{
	char p[PATH_MAX + 32];

	if (!f)
		return;
	/* a registry we cannot lock keeps our slot until a reaper finds us gone */
	if (!sio__lock(f)) {
		reg_proc_release(f, f->proc, false);
		sio__unlock(f);
	}
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
	if ((n = sio__lock(f)))
		return n;
	n = f->topo.nodes;
	for (int i = 0; i < n && i < max; i++) {
		struct sio_node_info *o = &out[i];
		const struct reg_node *rn = &f->reg->nodes[i];

		memset(o, 0, sizeof(*o));
		o->id = i;
		o->adapters = f->topo.adapters;
		o->windows_total = f->topo.windows;
		for (int a = 0; a < o->adapters; a++) {
			o->switch_id[a] = rn->sw[a];
			o->link_up[a] = rn->link_up[a] != 0;
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
	n = reg_reap(f);
	sio__unlock(f);
	return n;
}

static bool want_all(struct sio_fabric *f, int p, const struct sio_event *ev)
{
	(void)f; (void)p; (void)ev;
	return true;
}

int sio_link_get(struct sio_fabric *f, int node, int adapter)
{
	if (!f || node < 0 || node >= f->topo.nodes || adapter < 0 || adapter >= f->topo.adapters)
		return sio__err(EINVAL, "no adapter %d on node %d", adapter, node);
	return atomic_load_explicit(&f->reg->nodes[node].link_up[adapter], memory_order_acquire) != 0;
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
