/* SPDX-License-Identifier: MIT */
/*
 * A registry that defends itself: a fabric's files belong to its creator,
 * a corrupt registry is refused with its reason, what goes bad after
 * joining is survived, and its lock is never held forever.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "common.h"
#include "internal.h"
#include "shm/shm.h"

static char dir[512], path[600];

static const char *fabric_dir(const char *name)
{
	const char *b = getenv("SMARTIO_RUNDIR");

	snprintf(dir, sizeof(dir), "%s/smartio-%s", b && *b ? b : "/dev/shm", name);
	return dir;
}

static const char *file_of(const char *name, const char *file)
{
	snprintf(path, sizeof(path), "%s/%s", fabric_dir(name), file);
	return path;
}

/* The registry as another process of the fabric sees it: mapped, writable. */
static struct sio_registry *raw_map(const char *name)
{
	int fd = open(file_of(name, "registry"), O_RDWR);
	void *p;

	cr_assert_geq(fd, 0);
	p = mmap(NULL, sizeof(struct sio_registry), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(p, MAP_FAILED);
	return p;
}

static void expect_refused(const char *name, int err, const char *why)
{
	struct sio_fabric *f;

	cr_assert_eq(sio_fabric_open(name, 0, &f), -err, "expected -%d (%s), got: %s", err, why,
		     sio_errmsg());
	cr_assert(strstr(sio_errmsg(), why), "'%s' does not say '%s'", sio_errmsg(), why);
	cr_assert(strstr(sio_errmsg(), name), "'%s' does not name the fabric", sio_errmsg());
}

Test(registry, corrupt_tables_are_refused_when_joining)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *name = test_fabric("corrupt", &c);
	struct sio_registry *r = raw_map(name);
	struct sio_registry *save = malloc(sizeof(*r));

	memcpy(save, r, sizeof(*r));
	/* each change in parentheses: its commas are not the macro's */
#define CASE(change, why) do { change; expect_refused(name, EUCLEAN, why); memcpy(r, save, sizeof(*r)); } while (0)
	CASE((r->segs[9] = (struct reg_seg){ .used = 1, .owner = -4, .size = 4096 }),
	     "segment slot 9 names owner process slot -4");
	CASE((r->segs[9] = (struct reg_seg){ .used = 1, .size = 4096, .device = 64, .bar = 0 }),
	     "segment slot 9 names device slot 64");
	CASE((r->devs[1] = (struct reg_dev){ .used = 1, .id = 5, .excl = 1024 }),
	     "exclusive borrow 1024");
	CASE((r->devs[1] = (struct reg_dev){ .used = 1, .id = 5, .excl = -1, .bar_seg = { 4096 } }),
	     "BAR0 of device 5 names segment slot 4096");
	CASE((r->borrows[3] = (struct reg_borrow){ .used = 1, .dev = 0, .proc = 512 }),
	     "borrow 3 names device slot 0, process slot 512");
	CASE((r->pmaps[0] = (struct reg_pmap){ .used = 1, .window = 32 }), "process mapping 0");
	CASE((r->dmamaps[0] = (struct reg_dmamap){ .used = 1, .seg = 0, .group = -1, .window = -1,
						   .link_node = { 2, -1 }, .size = 4096 }),
	     "device mapping 0 crosses node 2");
	CASE((r->windows[1][0][3] = (struct reg_window){ .refs = 1, .seg = -1 }), "window 3 of node 1");
	CASE((r->groups[2] = (struct reg_group){ .used = 1, .size = 4096, .nsubs = 1, .sub_seg = { 9999 } }),
	     "subscriber segment slot 9999");
	CASE((r->groups[40] = (struct reg_group){ .used = 1, .size = 4096 }), "fabric has 16 groups");
	CASE((r->procs[0] = (struct reg_proc){ .used = 2 }), "process slot 0 has used = 2");
	CASE((r->devs[0] = (struct reg_dev){ .used = 1, .id = 1, .excl = -1 },
	      memset(r->devs[0].svc, 'x', sizeof(r->devs[0].svc))), "unterminated");
	CASE(r->next_dev_id = 0, "next device id is 0");
	CASE(r->hugedir[0] = 'x', "not an absolute path");
	CASE(r->topo.windows = 65, "window count out of range");
#undef CASE
	free(save);
	munmap(r, sizeof(*r));
	cr_assert_eq(sio_fabric_destroy(name), 0, "%s", sio_errmsg());
}

/* The fabric backend is picked by name, and a fabric is opened only by its own. */
Test(registry, fabric_backend_is_picked_by_name_and_recorded)
{
	struct sio_fabric_config c = { .nodes = 1 };
	const char *name = test_fabric("backend", &c);
	struct sio_registry *r = raw_map(name);
	struct sio_fabric *f;

	cr_expect_str_eq(r->backend, "shm", "the registry records who made it");
	setenv("SMARTIO_FABRIC_BACKEND", "rdma", 1);	/* none such */
	cr_expect_eq(sio_fabric_open(name, 0, &f), -EINVAL);
	cr_expect(strstr(sio_errmsg(), "'rdma'") && strstr(sio_errmsg(), "shm"), "%s", sio_errmsg());
	cr_expect_eq(sio_fabric_create("t-backend-none", &c), -EINVAL, "%s", sio_errmsg());
	setenv("SMARTIO_FABRIC_BACKEND", "shm", 1);
	snprintf(r->backend, sizeof(r->backend), "shmwin");
	cr_expect_eq(sio_fabric_open(name, 0, &f), -EPROTO);
	cr_expect(strstr(sio_errmsg(), "'shmwin' fabric backend"), "%s", sio_errmsg());
	memset(r->backend, 'x', sizeof(r->backend));
	expect_refused(name, EUCLEAN, "backend's name is not terminated");
	unsetenv("SMARTIO_FABRIC_BACKEND");
	munmap(r, sizeof(*r));
	cr_assert_eq(sio_fabric_destroy(name), 0, "%s", sio_errmsg());
}

Test(registry, damage_after_joining_gives_errors_not_crashes)
{
	struct sio_fabric_config c = { .nodes = 2, .mcast_groups = 4 };
	const char *name = test_fabric("late", &c);
	struct sio_fabric *l = join(name, 0), *h = join(name, 1);
	struct sio_devreg *reg = make_device(l, false);
	struct sio_registry *r = l->reg;
	struct sio_device *dev;
	struct sio_segment *s, *bar;
	uint32_t group;
	uint64_t bus;
	void *v;
	int d = reg->slot;

	cr_assert_eq(sio_device_borrow(h, sio_devreg_id(reg), 0, &dev), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_create(h, 1, 4096, 0, &s), 0);
	cr_assert_eq(sio_device_map(dev, s, &bus), 0);
	cr_assert_eq(sio_mcast_create(l, 4096, &group), 0);

	/* a borrow takes its backend's ops from the device's entry */
	struct sio_device *dev2;
	r->devs[d].backend = 77;
	cr_assert_eq(sio_device_borrow(h, sio_devreg_id(reg), 0, &dev2), -ENOTSUP);
	cr_assert(strstr(sio_errmsg(), "unknown backend"), "%s", sio_errmsg());
	r->devs[d].backend = SIO_BACKEND_SIM;

	int32_t keep = r->devs[d].bar_seg[0];
	r->devs[d].bar_seg[0] = 100000;
	cr_assert_eq(sio_device_bar(dev, 0, &bar), -EUCLEAN, "%s", sio_errmsg());
	cr_assert(strstr(sio_errmsg(), "segment slot 100000"), "%s", sio_errmsg());
	r->devs[d].bar_seg[0] = keep;

	r->segs[keep].device = -7;	/* not a device: the BAR maps as plain memory */
	cr_assert_eq(sio_device_bar(dev, 0, &bar), 0, "%s", sio_errmsg());
	r->segs[keep].device = 5000;
	cr_assert_eq(sio_segment_map(bar, &v), -EUCLEAN, "a BAR of device slot 5000: %s", sio_errmsg());
	r->segs[keep].device = d;
	cr_assert_eq(sio_segment_map(bar, &v), 0, "%s", sio_errmsg());

	r->groups[group].nsubs = -3;
	cr_assert_eq(sio_mcast_subscribers(l, group), -EUCLEAN, "%s", sio_errmsg());
	r->groups[group].nsubs = 0;

	/* releases skip what a corrupt entry names */
	r->pmaps[bar->window].window = 1 << 20;
	cr_assert_eq(sio_segment_unmap(bar), 0, "%s", sio_errmsg());
	r->borrows[dev->borrow].dev = 1 << 20;
	sio_segment_close(bar);
	sio_device_close(dev);	/* the borrow is not this handle's any more */
	r->segs[s->slot].owner = 1 << 24;	/* leaving cannot find it, and does not crash */
	sio_fabric_close(h);
	free(s);
	sio_devreg_close(reg);
	sio_fabric_close(l);
	cr_assert_eq(sio_fabric_destroy(name), 0, "%s", sio_errmsg());
}

/*
 * A process the fabric took for dead (across kernels: out of reach for
 * longer than its lease) and released, with what it held, while it lived:
 * once back, it must touch nothing, since its kept segment may be another
 * process's now (adopted with its generation: a close would have freed
 * the standby manager's mailbox) and its slot another process's too. It
 * is told so, by sio_fabric_alive() and every call that locks.
 */
Test(registry, a_process_released_while_it_lived_touches_nothing)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *name = test_fabric("ghost", &c);
	struct sio_fabric *a = join(name, 0), *b = join(name, 1), *n;
	struct sio_segment *sa, *sb, *x;
	int slot = a->proc;
	void *v;

	cr_assert_eq(sio_fabric_alive(a), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_create_on(a, 0, 88, 4096, SIO_SEG_F_KEEP, &sa), 0, "%s",
		     sio_errmsg());
	/* a reaper's verdict on a, which lives on */
	cr_assert_eq(sio__lock(b), 0, "%s", sio_errmsg());
	sio__reg_proc_release(b, slot, true);
	sio__unlock(b);
	cr_assert_eq(sio_segment_create_on(b, 0, 88, 4096, SIO_SEG_F_KEEP, &sb), 0,
		     "the kept segment adopted: %s", sio_errmsg());
	n = join(name, 1);	/* the first free slot: a's */
	cr_assert_eq(n->proc, slot);

	cr_assert_eq(sio_fabric_alive(a), -EOWNERDEAD);
	cr_assert(strstr(sio_errmsg(), "was taken for dead") &&
		  strstr(sio_errmsg(), "$SMARTIO_SHMWIN_LEASE_MS"), "%s", sio_errmsg());
	cr_assert_eq(sio_segment_create(a, 0, 4096, 0, &x), -EOWNERDEAD, "%s", sio_errmsg());
	sio_segment_close(sa);
	sio_fabric_close(a);
	cr_assert_eq(sio_fabric_alive(n), 0, "the slot's new holder: %s", sio_errmsg());
	cr_assert_eq(sio_segment_map(sb, &v), 0, "the adopted segment: %s", sio_errmsg());
	sio_segment_close(sb);
	sio_fabric_close(n);
	sio_fabric_close(b);
	cr_assert_eq(sio_fabric_destroy(name), 0, "%s", sio_errmsg());
}

/*
 * A kept segment let go of while the registry could not be read (the
 * state across a link that is down: the lock fails) is let go of at the
 * handle's next lock that reaches it: the process's own next start adopts
 * it (an NVMe manager that stopped across a dead link was refused its own
 * mailbox, "held by a manager still running", for as long as it ran).
 */
Test(registry, a_kept_segment_left_out_of_reach_is_let_go_of_later)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *name = test_fabric("leave", &c);
	struct sio_fabric *f = join(name, 0);
	struct sio_segment *s;
	uint32_t magic;
	int ret;

	cr_assert_eq(sio_segment_create_on(f, 0, 77, 4096, SIO_SEG_F_KEEP, &s), 0, "%s",
		     sio_errmsg());
	magic = f->reg->magic;
	f->reg->magic = 0xffffffffu;
	sio_segment_leave(s);
	f->reg->magic = magic;
	ret = sio_segment_create_on(f, 0, 77, 4096, SIO_SEG_F_KEEP, &s);
	cr_assert_eq(ret, 0, "its own kept segment, once in reach: %s", sio_errmsg());
	sio_segment_close(s);
	sio_fabric_close(f);
	cr_assert_eq(sio_fabric_destroy(name), 0, "%s", sio_errmsg());
}

/* A segment file shorter than the registry says is refused, not a SIGBUS later. */
Test(registry, segment_files_are_checked_before_mapping)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *name = test_fabric("segfile", &c);
	struct sio_fabric *a = join(name, 0);
	struct sio_segment *s, *t;
	char segpath[700];
	void *v;

	cr_assert_eq(sio_segment_create(a, 7, 8192, SIO_SEG_F_NOHUGE, &s), 0);
	cr_assert_eq(sio_segment_connect(a, 0, 7, &t), 0);
	sio__segment_path(a, s->slot, segpath, sizeof(segpath));
	cr_assert_eq(truncate(segpath, 4096), 0);
	cr_assert_eq(sio_segment_map(t, &v), -EUCLEAN, "%s", sio_errmsg());
	cr_assert(strstr(sio_errmsg(), "4096 bytes"), "%s", sio_errmsg());
	cr_assert_eq(unlink(segpath), 0);
	cr_assert_eq(symlink("/etc/passwd", segpath), 0);
	cr_assert_eq(sio_segment_map(t, &v), -EPERM, "%s", sio_errmsg());
	cr_assert(strstr(sio_errmsg(), "symbolic link"), "%s", sio_errmsg());
	cr_assert_eq(unlink(segpath), 0);
	cr_assert_eq(close(open(segpath, O_CREAT | O_EXCL | O_WRONLY, 0644)), 0);
	cr_assert_eq(truncate(segpath, 8192), 0);
	cr_assert_eq(chmod(segpath, 0644), 0);
	cr_assert_eq(sio_segment_map(t, &v), -EPERM, "a file others can read: %s", sio_errmsg());
	sio_segment_close(t);
	sio_segment_close(s);
	sio_fabric_close(a);
	sio_fabric_destroy(name);
}

static pid_t child_pausing(const char *name, int node)
{
	int ready[2];
	char b;
	pid_t pid;

	cr_assert_eq(pipe(ready), 0);
	pid = fork();
	if (pid == 0) {
		struct sio_fabric *f;
		if (node >= 0 && sio_fabric_open(name, node, &f))
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	cr_assert_eq(read(ready[0], &b, 1), 1, "the child did not get ready");
	close(ready[0]);
	close(ready[1]);
	return pid;
}

/* A process of no fabric: it does not map the registry. */
static pid_t stranger_sleeping(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		execlp("sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	cr_assert_gt(pid, 0);
	for (int i = 0; i < 200; i++) {	/* until it is sleep, not our copy */
		char proc[64], comm[32] = "";
		FILE *fp;

		snprintf(proc, sizeof(proc), "/proc/%d/comm", (int)pid);
		if ((fp = fopen(proc, "r"))) {
			if (!fgets(comm, sizeof(comm), fp))
				comm[0] = 0;
			fclose(fp);
		}
		if (!strncmp(comm, "sleep", 5))
			break;
		usleep(5000);
	}
	return pid;
}

Test(registry, forged_lock_word_is_taken_over_or_waited_for_a_bounded_time_and_named)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *name = test_fabric("lock", &c);
	struct sio_fabric *f = join(name, 0);
	struct sio_node_info ni[2];
	char want[64];
	pid_t stranger, child, member;

	setenv("SMARTIO_LOCK_TIMEOUT_MS", "200", 1);
	/* a live process of no fabric (it does not even map the registry):
	 * a forged word, taken over, not waited for by every command */
	stranger = stranger_sleeping();
	atomic_store(&f->reg->lock.word, (uint32_t)stranger);
	cr_assert_eq(sio_link_set(f, 1, 0, false), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_link_get(f, 1, 0), 0, "done, under the lock taken over");
	cr_assert_eq(atomic_load(&f->reg->lock.word), 0, "and the lock is free again");
	kill(stranger, SIGKILL);
	waitpid(stranger, NULL, 0);

	/* one that maps it but is not registered (joining or leaving): waited
	 * for a bounded time, and named */
	child = child_pausing(name, -1);
	atomic_store(&f->reg->lock.word, (uint32_t)child);
	cr_assert_eq(sio_link_set(f, 1, 0, true), -ETIMEDOUT);
	snprintf(want, sizeof(want), "by pid %d (", (int)child);
	cr_assert(strstr(sio_errmsg(), want), "%s", sio_errmsg());
	cr_assert(strstr(sio_errmsg(), "joining or leaving this fabric"), "%s", sio_errmsg());
	cr_assert(strstr(sio_errmsg(), name), "%s", sio_errmsg());
	cr_assert_eq(sio_link_get(f, 1, 0), 0, "nothing was done unlocked");
	sio_fabric_close(f);	/* cannot release its slot, must not hang */
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);

	/* a dead holder, left a zombie: taken over, and its slot reaped */
	f = join(name, 0);
	member = child_pausing(name, 1);
	atomic_store(&f->reg->lock.word, (uint32_t)member);
	cr_assert_eq(sio_link_set(f, 1, 0, false), -ETIMEDOUT);
	cr_assert(strstr(sio_errmsg(), "a process of this fabric"), "%s", sio_errmsg());
	kill(member, SIGKILL);
	siginfo_t si;
	waitid(P_PID, member, &si, WEXITED | WNOWAIT);	/* dead, not yet reaped */
	cr_assert_eq(sio_fabric_nodes(f, ni, 2), 2, "the dead holder's lock is taken over: %s",
		     sio_errmsg());
	cr_assert_eq(ni[1].procs, 0, "the dead holder is reaped");
	waitpid(member, NULL, 0);
	cr_assert_eq(atomic_load(&f->reg->lock.word), 0, "and the lock is free again");
	unsetenv("SMARTIO_LOCK_TIMEOUT_MS");
	sio_fabric_close(f);
	sio_fabric_destroy(name);
}

/* The lock word excludes threads and processes alike: no increment is lost. */
#define ROUNDS 20000
static void *hammer(void *arg)
{
	struct sio_fabric *f = arg;

	for (int i = 0; i < ROUNDS; i++) {
		if (sio__lock(f))
			return (void *)1;
		f->reg->rsvd++;	/* a plain read-modify-write: only the lock makes it safe */
		sio__unlock(f);
	}
	return NULL;
}

static int hammer_threads(struct sio_fabric *f)
{
	pthread_t t[2];
	void *r0, *r1;

	pthread_create(&t[0], NULL, hammer, f);
	pthread_create(&t[1], NULL, hammer, f);
	pthread_join(t[0], &r0);
	pthread_join(t[1], &r1);
	return r0 || r1;
}

Test(registry, lock_excludes_threads_and_processes)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *name = test_fabric("excl", &c);
	struct sio_fabric *f = join(name, 0);
	pid_t pid;
	int st;

	f->reg->rsvd = 0;
	pid = fork();
	if (pid == 0) {
		struct sio_fabric *g;
		_exit(sio_fabric_open(name, 1, &g) || hammer_threads(g));
	}
	cr_assert_eq(hammer_threads(f), 0, "%s", sio_errmsg());
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the other process could not lock");
	cr_assert_eq(f->reg->rsvd, 4 * ROUNDS, "%u of %d increments", f->reg->rsvd, 4 * ROUNDS);
	cr_assert_eq(atomic_load(&f->reg->lock.word), 0);
	sio_fabric_close(f);
	sio_fabric_destroy(name);
}

Test(registry, negative_node_never_indexes_the_registry)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *name = test_fabric("node", &c);
	struct sio_fabric *f;

	setenv("SMARTIO_NODE", "-1", 1);
	cr_assert_eq(sio_fabric_open(name, -1, &f), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "SMARTIO_NODE='-1'"), "%s", sio_errmsg());
	setenv("SMARTIO_NODE", "1x", 1);
	cr_assert_eq(sio_fabric_open(name, -1, &f), -EINVAL);
	setenv("SMARTIO_NODE", "1", 1);
	cr_assert_eq(sio_fabric_open(name, -1, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_fabric_node_id(f), 1);
	unsetenv("SMARTIO_NODE");
	sio_fabric_close(f);
	sio_fabric_destroy(name);
}

Test(registry, files_belong_to_the_fabric_creator)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *name = test_fabric("owner", &c);
	char reg[600], target[600];

	snprintf(reg, sizeof(reg), "%s", file_of(name, "registry"));

	cr_assert_eq(chmod(fabric_dir(name), 0755), 0);
	expect_refused(name, EPERM, "has mode 0755");
	cr_assert_eq(chmod(fabric_dir(name), 0700), 0);
	cr_assert_eq(chmod(reg, 0644), 0);
	expect_refused(name, EPERM, "registry has mode 0644");
	cr_assert_eq(chmod(reg, 0600), 0);
	cr_assert_eq(link(reg, file_of(name, "second-link")), 0);
	expect_refused(name, EPERM, "one link");
	cr_assert_eq(unlink(file_of(name, "second-link")), 0);
	if (geteuid() == 0) {	/* only root can give a file away */
		cr_assert_eq(chown(file_of(name, "registry"), 65534, (gid_t)-1), 0);
		expect_refused(name, EPERM, "registry belongs to uid 65534");
		cr_assert_eq(chown(file_of(name, "registry"), 0, (gid_t)-1), 0);
		cr_assert_eq(chown(fabric_dir(name), 65534, (gid_t)-1), 0);
		expect_refused(name, EACCES, "belongs to uid 65534");
		cr_assert_eq(chown(fabric_dir(name), 0, (gid_t)-1), 0);
	}
	struct sio_fabric *f = join(name, 0);
	sio_fabric_close(f);
	cr_assert_eq(sio_fabric_destroy(name), 0, "%s", sio_errmsg());

	/* a fabric name that is a symlink to a real fabric: refused, never followed */
	const char *real = test_fabric("owner-real", &c);
	snprintf(target, sizeof(target), "%s", fabric_dir(real));
	char linkname[64];
	snprintf(linkname, sizeof(linkname), "t-owner-link-%d", (int)getpid());
	cr_assert_eq(symlink(target, fabric_dir(linkname)), 0);
	expect_refused(linkname, EPERM, "symbolic link");
	cr_assert_eq(sio_fabric_destroy(linkname), -EPERM);
	struct stat st;
	cr_assert_eq(stat(file_of(real, "registry"), &st), 0, "destroy left the link's target alone");
	unlink(fabric_dir(linkname));
	sio_fabric_destroy(real);
}

Test(registry, group_fabric_is_shared_with_its_group_only)
{
	struct sio_fabric_config c = { .nodes = 2 };
	char name[64];
	struct sio_fabric *f;
	struct sio_segment *s;
	struct stat st;
	char segpath[700];
	gid_t g = getegid();	/* a group this process is in, so it may give files to it */

	snprintf(name, sizeof(name), "t-group-%d", (int)getpid());
	sio_fabric_destroy(name);
	cr_assert_eq(sio_fabric_create_group(name, &c, g), 0, "%s", sio_errmsg());
	cr_assert_eq(stat(fabric_dir(name), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 02770, "mode %o", st.st_mode & 07777);
	cr_assert_eq(st.st_gid, g);
	cr_assert_eq(stat(file_of(name, "registry"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0660);
	f = join(name, 0);
	cr_assert_eq(sio_segment_create(f, 3, 4096, SIO_SEG_F_NOHUGE, &s), 0, "%s", sio_errmsg());
	sio__segment_path(f, s->slot, segpath, sizeof(segpath));
	cr_assert_eq(stat(segpath, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0660, "group members map segments too");
	cr_assert_eq(st.st_gid, g);
	sio_segment_close(s);
	sio_fabric_close(f);
	/* a 0770 directory without the registry's group flag is not a group fabric */
	cr_assert_eq(chmod(fabric_dir(name), 0770), 0);
	expect_refused(name, EPERM, "has mode 0770");
	cr_assert_eq(sio_fabric_destroy(name), 0, "%s", sio_errmsg());
}

/* 64 processes join and leave at once, ten times each, with a lock timeout
 * of 0.5 s: the lock's waiters queue in turn, and none gives up while the
 * lock changes hands (42 of 64 did, each blaming an honest holder, joiners
 * as "a forged or stale lock word"). */
Test(registry, lock_waiters_queue_fairly_under_contention)
{
	enum { P = 64, R = 10 };
	struct sio_fabric_config c = { .nodes = 4 };
	const char *name = test_fabric("storm", &c);
	int go[2], failed = 0;

	setenv("SMARTIO_LOCK_TIMEOUT_MS", "500", 1);
	cr_assert_eq(pipe(go), 0);
	for (int p = 0; p < P; p++) {
		pid_t pid = fork();

		cr_assert_geq(pid, 0);
		if (pid)
			continue;
		char ch;
		int bad = 0;

		close(go[1]);
		if (read(go[0], &ch, 1) != 0)
			_exit(3);
		for (int r = 0; r < R; r++) {
			struct sio_fabric *f;
			struct sio_segment *s;

			if (sio_fabric_open(name, p % 4, &f)) {
				if (!bad++)
					fprintf(stderr, "process %d: %s\n", p, sio_errmsg());
				continue;
			}
			if (!sio_segment_create(f, 0, 4096, 0, &s))
				sio_segment_close(s);
			sio_fabric_close(f);
		}
		_exit(bad ? 1 : 0);
	}
	close(go[0]);
	close(go[1]);	/* all at once */
	for (int p = 0; p < P; p++) {
		int st;

		cr_assert_gt(wait(&st), 0);
		failed += !WIFEXITED(st) || WEXITSTATUS(st);
	}
	cr_expect_eq(failed, 0, "%d of %d processes gave up waiting for the lock", failed, P);
	unsetenv("SMARTIO_LOCK_TIMEOUT_MS");
	sio_fabric_destroy(name);
}
