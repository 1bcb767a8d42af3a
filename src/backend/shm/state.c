/* SPDX-License-Identifier: MIT */
/*
 * The shm fabric backend's shared state: the fabric's directory and its
 * registry file, who may use them, and how a process is known to live.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "proc.h"
#include "shm.h"
#include "sio_config.h"
#if SIO_HAVE_HUGETLBFS
#include <hugetlbfs.h>
#endif

static const char *run_base(void)
{
	const char *b = getenv("SMARTIO_RUNDIR");

	return b && *b ? b : "/dev/shm";
}

void sio__shm_dir(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/smartio-%s", run_base(), name);
}

void sio__shm_hugedir(char *buf, size_t len)
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
			return sio__err(EACCES, "fabric '%s' belongs to %s, not to you (%s); its "
					"creator can share it with a group: smartio create %s --group GROUP",
					name, who(st->st_uid, u, sizeof(u)), who(geteuid(), me, sizeof(me)),
					name);
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

/* The registry survives another process shrinking its file (sigbus.c). */
static void guard_registry(struct shm_fabric *s, struct sio_registry *r)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/registry", s->dir);
	sio__shm_guard(r, sizeof(*r), s->regfd, path, 0, false);
}

static struct shm_fabric *state_new(const char *name)
{
	struct shm_fabric *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->regfd = s->evfd = -1;
	sio__shm_dir(name, s->dir, sizeof(s->dir));
	return s;
}

/* Whether fabric directory @dir holds a registry (not following links). */
static bool has_registry(const char *dir)
{
	char path[PATH_MAX + 16];
	struct stat st;

	snprintf(path, sizeof(path), "%s/registry", dir);
	return !lstat(path, &st) || errno != ENOENT;
}

int sio__shm_create(struct sio_fabric *f, bool group, gid_t gid)
{
	struct shm_fabric *s = state_new(f->name);
	struct sio_registry *r;
	struct stat st;
	char u[96];
	int dfd = -1, ret;

	if (!s)
		return sio__err(ENOMEM, "out of memory");
	if (mkdir(s->dir, 0700)) {
		if (errno != EEXIST)
			ret = sio__err(errno, "cannot create %s: %s", s->dir, strerror(errno));
		else if (!lstat(s->dir, &st) && (st.st_uid != geteuid() || !S_ISDIR(st.st_mode)))
			ret = sio__err(EEXIST, "fabric '%s' already exists (%s, a %s of %s)", f->name, s->dir,
				       S_ISDIR(st.st_mode) ? "directory" : "file", who(st.st_uid, u, sizeof(u)));
		else if (!has_registry(s->dir))
			ret = sio__err(EEXIST, "fabric '%s' is half there: %s has no registry (a "
				       "create or destroy cut short, or one under way); 'smartio "
				       "destroy %s' removes what is left, then create it again",
				       f->name, s->dir, f->name);
		else
			ret = sio__err(EEXIST, "fabric '%s' already exists (%s)", f->name, s->dir);
		free(s);
		return ret;
	}
	/* modes exact, whatever the umask; the group after the owner is set */
	dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || (group ? fchown(dfd, (uid_t)-1, gid) || fchmod(dfd, 02770) : fchmod(dfd, 0700))) {
		ret = sio__err(errno, "cannot set up %s%s: %s", s->dir, group ? " for its group" : "",
			       strerror(errno));
		goto fail;
	}
	s->regfd = openat(dfd, "registry", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (s->regfd < 0 || (group && (fchown(s->regfd, (uid_t)-1, gid) || fchmod(s->regfd, 0660))) ||
	    (!group && fchmod(s->regfd, 0600)) || ftruncate(s->regfd, sizeof(*r))) {
		ret = sio__err(errno, "cannot create %s/registry: %s", s->dir, strerror(errno));
		goto fail;
	}
	/* its pages now: a full tmpfs is this error, not a SIGBUS in a later user */
	if (fallocate(s->regfd, 0, 0, sizeof(*r)) && errno != EOPNOTSUPP) {
		ret = sio__err(errno, "cannot create %s/registry: %s (%zu KiB); point "
			       "$SMARTIO_RUNDIR at a tmpfs with room", s->dir, strerror(errno),
			       sizeof(*r) >> 10);
		goto fail;
	}
	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED, s->regfd, 0);
	if (r == MAP_FAILED) {
		ret = sio__err(errno, "cannot map %s/registry: %s", s->dir, strerror(errno));
		goto fail;
	}
	guard_registry(s, r);
	r->uid = (uint32_t)geteuid();
	r->gid = group ? (uint32_t)gid : (uint32_t)getegid();
	r->flags = group ? REG_F_GROUP : 0;
	sio__shm_hugedir(r->hugedir, sizeof(r->hugedir));
	close(dfd);
	f->reg = r;
	f->be = s;
	return 0;
fail:
	if (s->regfd >= 0)
		close(s->regfd);
	if (dfd >= 0) {
		unlinkat(dfd, "registry", 0);
		close(dfd);
	}
	rmdir(s->dir);
	free(s);
	return ret;
}

int sio__shm_attach(struct sio_fabric *f)
{
	struct shm_fabric *s = state_new(f->name);
	struct sio_registry *r = MAP_FAILED;
	struct stat dst;
	bool group = false;
	int dfd, ret;

	if (!s)
		return sio__err(ENOMEM, "out of memory");
	dfd = open_dir(f->name, s->dir, &dst, &group);
	if (dfd < 0) {
		ret = dfd;
		goto fail;
	}
	s->regfd = openat(dfd, "registry", O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (s->regfd < 0 && errno == ENOENT)	/* the name is taken: create refuses it */
		ret = sio__err(EUCLEAN, "fabric '%s' is half there: %s has no registry (a "
			       "create or destroy cut short, or one under way); 'smartio destroy "
			       "%s' removes what is left", f->name, s->dir, f->name);
	else if (s->regfd < 0)
		ret = sio__err(errno == ELOOP ? EPERM : errno, "fabric '%s': cannot open its registry: %s",
			       f->name, errno == ELOOP ? "it is a symbolic link" : strerror(errno));
	else
		ret = check_regfile(f->name, s->regfd, &dst, group);
	close(dfd);
	if (ret)
		goto fail;
	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED, s->regfd, 0);
	if (r == MAP_FAILED) {
		ret = sio__err(errno, "fabric '%s': cannot map its registry: %s", f->name, strerror(errno));
		goto fail;
	}
	f->reg = r;	/* for sio__reg_corrupt()'s messages */
	guard_registry(s, r);
	if ((ret = sio__reg_check_header(r, f->name)))
		goto fail;
	if (r->uid != dst.st_uid || !!(r->flags & REG_F_GROUP) != group || (group && r->gid != dst.st_gid)) {
		ret = sio__reg_corrupt(f, "it names owner uid %u, group %u%s; its directory says uid %u, group %u%s",
				  r->uid, r->gid, r->flags & REG_F_GROUP ? " (shared)" : "",
				  (unsigned)dst.st_uid, (unsigned)dst.st_gid, group ? " (shared)" : "");
		goto fail;
	}
	memcpy(s->hugedir, r->hugedir, sizeof(s->hugedir));
	s->hugedir[sizeof(s->hugedir) - 1] = 0;
	s->uid = dst.st_uid;
	s->gid = dst.st_gid;
	s->group = group;
	f->be = s;
	return 0;
fail:
	if (r != MAP_FAILED) {
		sio__shm_unguard(r);
		munmap(r, sizeof(*r));
	}
	f->reg = NULL;
	if (s->regfd >= 0)
		close(s->regfd);
	free(s);
	return ret;
}

void sio__shm_detach(struct sio_fabric *f)
{
	struct shm_fabric *s = shm_of(f);

	if (f->reg) {
		sio__shm_unguard(f->reg);
		munmap(f->reg, sizeof(*f->reg));
	}
	f->reg = NULL;
	if (!s)
		return;
	if (s->evfd >= 0)
		close(s->evfd);
	if (s->regfd >= 0)
		close(s->regfd);
	free(s);
	f->be = NULL;
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
			if (!sio__reg_check_header(r, "") && memchr(r->hugedir, 0, sizeof(r->hugedir)) &&
			    r->hugedir[0] == '/')
				snprintf(buf, len, "%s", r->hugedir);
			munmap((void *)r, sizeof(*r));
		}
	}
	if (fd >= 0)
		close(fd);
	if (!buf[0])
		sio__shm_hugedir(buf, len);
}

/* Remove every entry of @dfd (not following links) whose name starts with
 * @prefix; the first error is kept. */
static int remove_subdir(const char *dir, int dfd, const char *name, int depth);

static int empty_dir(const char *dir, int dfd, const char *prefix, int err, int depth)
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
		if (!unlinkat(dfd, e->d_name, 0) || errno == ENOENT)
			continue;
		/* a directory where a file belongs (a registry that is one): in
		 * the fabric's own directory, what is below goes too */
		if (errno == EISDIR && !*prefix && depth < 8 && !remove_subdir(dir, dfd, e->d_name,
									   depth))
			continue;
		if (!err)
			err = sio__err(errno, "cannot remove %s/%s: %s", dir, e->d_name, strerror(errno));
	}
	closedir(d);
	return err;
}

/* Directory @name of @dfd, emptied (not following links) and removed. */
static int remove_subdir(const char *dir, int dfd, const char *name, int depth)
{
	char sub[PATH_MAX];
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), ret;

	if (fd < 0)
		return -1;
	snprintf(sub, sizeof(sub), "%s/%s", dir, name);
	ret = empty_dir(sub, fd, "", 0, depth + 1);
	close(fd);
	if (ret || unlinkat(dfd, name, AT_REMOVEDIR))
		return -1;
	return 0;
}

/* Times a destroy empties the fabric's directory again, when a file came
 * back before it could remove it. */
#define DESTROY_ROUNDS	8

int sio__shm_destroy(const char *name)
{
	char dir[PATH_MAX], hugedir[128], prefix[SIO_NAME_MAX + 16], u[96], me[96];
	struct stat st;
	int ret, dfd, hfd;

	sio__shm_dir(name, dir, sizeof(dir));
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
	ret = empty_dir(dir, dfd, "", 0, 0);
	if (hugedir[0] && (hfd = open(hugedir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
		ret = empty_dir(hugedir, hfd, prefix, ret, 0);
		close(hfd);
	}
	/* A process that opened the fabric meanwhile (a destroy at the same
	 * time, looking for users) bound its event socket here after the
	 * emptying: empty it again, a few rounds at most. */
	for (int round = 0, e, r = 0; rmdir(dir); round++) {
		e = errno;
		if (e == ENOTEMPTY && round < DESTROY_ROUNDS && !(r = empty_dir(dir, dfd, "", 0, 0)))
			continue;
		if (!ret)
			ret = r ? r : sio__err(e, "fabric '%s': cannot remove %s: %s", name, dir,
					       strerror(e));
		break;
	}
	close(dfd);
	return ret;
}

/* Destroyed under us: the registry we map was unlinked (or replaced by a new one). */
bool sio__shm_removed(struct sio_fabric *f)
{
	struct shm_fabric *s = shm_of(f);
	struct stat st;

	return s && s->regfd >= 0 && !fstat(s->regfd, &st) && st.st_nlink == 0;
}

/* Every directory smartio-NAME in the run directory is a fabric. */
int sio__shm_list(char (*names)[SIO_NAME_MAX], int max)
{
	DIR *d = opendir(run_base());
	struct dirent *e;
	int n = 0;

	if (!d)
		return sio__err(errno, "cannot list %s: %s", run_base(), strerror(errno));
	while ((e = readdir(d))) {
		const char *name = e->d_name + 8;

		if (strncmp(e->d_name, "smartio-", 8) || e->d_type != DT_DIR || !*name ||
		    strlen(name) >= SIO_NAME_MAX)
			continue;
		if (names && n < max)
			snprintf(names[n], SIO_NAME_MAX, "%s", name);
		n++;
	}
	closedir(d);
	return n;
}

int sio__shm_host_path(struct sio_fabric *f, const char *leaf, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/%s", shm_of(f)->dir, leaf) >= len)
		return sio__err(ENAMETOOLONG, "fabric '%s': %s/%s is too long a path", f->name,
				shm_of(f)->dir, leaf);
	return 0;
}

void sio__shm_proc_init(struct sio_fabric *f, struct reg_proc *p)
{
	p->starttime = sio__proc_start(p->pid);
}

bool sio__shm_proc_alive(struct sio_fabric *f, const struct reg_proc *p)
{
	return sio__proc_alive(p->pid, p->starttime);
}

const struct sio_fabric_ops sio__shm_fabric_ops = {
	.name = "shm",
	.create = sio__shm_create,
	.attach = sio__shm_attach,
	.detach = sio__shm_detach,
	.destroy = sio__shm_destroy,
	.removed = sio__shm_removed,
	.list = sio__shm_list,
	.host_path = sio__shm_host_path,
	.lock = sio__shm_lock,
	.unlock = sio__shm_unlock,
	.proc_init = sio__shm_proc_init,
	.proc_alive = sio__shm_proc_alive,
	.proc_gone = sio__shm_proc_gone,
	.seg_create = sio__shm_seg_create,
	.seg_reserve = sio__shm_seg_reserve,
	.seg_remove = sio__shm_seg_remove,
	.seg_map = sio__shm_seg_map,
	.seg_unmap = sio__shm_seg_unmap,
	.ev_open = sio__shm_ev_open,
	.ev_close = sio__shm_ev_close,
	.ev_send = sio__shm_ev_send,
	.ev_fd = sio__shm_ev_fd,
	.ev_read = sio__shm_ev_read,
	.notify = sio__shm_notify,
	.wait = sio__shm_wait,
};
