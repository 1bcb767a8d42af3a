/* SPDX-License-Identifier: MIT */
/*
 * The shmwin backend where it differs from shm: processes that play separate
 * kernels ($SMARTIO_SHMWIN_KERNEL), so no pid of theirs is trusted; a lock
 * whose holder died is taken over when its lease runs out; a dead node's
 * segments and borrows are reclaimed once its heartbeat stops; events cross
 * through the window. Run through with-window.sh (a file is the window).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "internal.h"
#include "fixture.h"
#include "shmwin/shmwin.h"

static void setup(void)
{
	setenv("SMARTIO_SHMWIN_LEASE_MS", "300", 1);
	shmwin_fabric_setup(3, "w");
}

/* A child on "kernel-N" that joins as node @node, does @what, and reports on @fd. */
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
			pause();	/* until killed */
	}
	return pid;
}

static void hold_segment(struct sio_fabric *g)
{
	struct sio_segment *s;
	volatile uint32_t *p;

	if (sio_segment_create(g, 9, 8192, 0, &s) || sio_segment_map(s, (void **)&p))
		_exit(3);
	p[0] = 0x5eed;
}

static void hold_lock(struct sio_fabric *g)
{
	if (sio__lock(g))
		_exit(4);
}

Test(shmwin, a_dead_kernels_segment_is_reclaimed_after_its_heartbeat_stops,
     .init = setup, .fini = teardown)
{
	struct sio_fabric *f;
	struct sio_segment *s = NULL;
	volatile uint32_t *p;
	int pfd[2], i;
	char b;

	cr_assert_eq(pipe(pfd), 0);
	pid_t pid = other_kernel(1, hold_segment, pfd[1]);
	cr_assert_eq(read(pfd[0], &b, 1), 1, "the child could not make its segment");
	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_connect(f, 1, 9, &s), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(s, (void **)&p), 0, "%s", sio_errmsg());
	cr_assert_eq(p[0], 0x5eed, "the store of the other kernel is in the window");
	sio_segment_close(s);
	/* alive: its heartbeat moves, so reaping keeps it, pid or no pid */
	for (i = 0; i < 5; i++) {
		nap_ms(100);
		cr_assert_eq(sio_fabric_reap(f), 0, "a live node was reaped");
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* its pid is gone, but this "kernel" cannot know: only the heartbeat tells */
	for (i = 0; i < 100 && sio_segment_connect(f, 1, 9, &s) == 0; i++) {
		sio_segment_close(s);
		nap_ms(50);
		sio_fabric_reap(f);
	}
	cr_assert_eq(sio_segment_connect(f, 1, 9, &s), -ENOENT, "the dead node's segment stayed");
	sio_fabric_close(f);
}

Test(shmwin, a_lock_whose_holder_died_is_taken_over_when_its_lease_runs_out,
     .init = setup, .fini = teardown)
{
	struct sio_fabric *f;
	struct sio_segment *s;
	int pfd[2];
	char b;

	cr_assert_eq(pipe(pfd), 0);
	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	pid_t pid = other_kernel(2, hold_lock, pfd[1]);
	cr_assert_eq(read(pfd[0], &b, 1), 1, "the child could not take the lock");
	/* held and renewed: a short wait fails and names the holder's node */
	setenv("SMARTIO_LOCK_TIMEOUT_MS", "700", 1);
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

/*
 * The lock passed from holder to holder: @holders live holders (their
 * leases move) on node 2, @hold_ms each, with no gap between them; then
 * free. No holder is a process: the word is written as a holder would.
 */
struct relay {
	struct wf_lock *l;
	int holders, hold_ms;
	_Atomic bool done;
};

static void *relay_run(void *arg)
{
	struct relay *r = arg;

	r->l->node = 2;
	for (int h = 0; h < r->holders; h++) {
		atomic_store(&r->l->owner, 0x7e1a0000ull + (uint64_t)h + 1);
		for (int t = 0; t < r->hold_ms; t += 10) {
			atomic_fetch_add(&r->l->lease, 1);
			nap_ms(10);
		}
	}
	atomic_store(&r->done, true);
	atomic_store(&r->l->owner, 0);
	return NULL;
}

/* A segment created while the lock is relayed (@holders x 100 ms, timeout 500 ms). */
static int create_while_relayed(int holders, bool *relay_done)
{
	struct sio_fabric *f;
	struct sio_segment *s;
	struct relay r = { .holders = holders, .hold_ms = 100 };
	pthread_t t;
	int ret;

	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	r.l = &((struct wf_fabric *)f->be)->hdr->lock;
	setenv("SMARTIO_LOCK_TIMEOUT_MS", "500", 1);
	cr_assert_eq(pthread_create(&t, NULL, relay_run, &r), 0);
	nap_ms(20);	/* the first holder has it */
	ret = sio_segment_create(f, 1, 4096, 0, &s);
	*relay_done = atomic_load(&r.done);
	pthread_join(t, NULL);
	if (!ret)
		sio_segment_close(s);
	sio_fabric_close(f);
	return ret;
}

/* Eight holders in turn, 0.8 s in all: each under the timeout, so wait on. */
Test(shmwin, a_lock_passed_among_holders_is_waited_for_past_the_timeout,
     .init = setup, .fini = teardown)
{
	bool done;
	int ret = create_while_relayed(8, &done);

	cr_assert_eq(ret, 0, "gave up on a lock that kept moving: %s", sio_errmsg());
	cr_assert(done, "took the lock while the relay held it");
}

/* 24 in turn, 2.4 s: past four timeouts of a moving lock, contention is said. */
Test(shmwin, a_lock_that_never_comes_free_is_given_up_as_contention,
     .init = setup, .fini = teardown)
{
	bool done;

	cr_assert_eq(create_while_relayed(24, &done), -ETIMEDOUT);
	cr_assert(strstr(sio_errmsg(), "contention"), "%s", sio_errmsg());
	cr_assert(!done, "waited for the whole relay");
}

/*
 * A child on "kernel-1" that joins as node 1 @lives times in a row, says so
 * on @up each time, and leaves cleanly at a byte on @go (after the last
 * life: when killed).
 */
static pid_t joiner(int up, int go, int lives)
{
	pid_t pid = fork();
	struct sio_fabric *g;
	char b;

	cr_assert_neq(pid, -1);
	if (pid)
		return pid;
	setenv("SMARTIO_SHMWIN_KERNEL", "kernel-1", 1);
	for (int l = 0; l < lives; l++) {
		if (sio_fabric_open(name, 1, &g))
			_exit(1);
		if (write(up, "r", 1) != 1 || read(go, &b, 1) != 1)
			_exit(2);
		sio_fabric_close(g);
	}
	_exit(0);
}

static int proc_slot(struct sio_fabric *f, pid_t pid)
{
	for (int p = 0; p < SIO_MAX_PROCS; p++)
		if (f->reg->procs[p].used && f->reg->procs[p].pid == pid)
			return p;
	return -1;
}

/*
 * A life of a registry slot on another kernel is seen, then ends; the next
 * life of that slot (@same: the same process, joining again; else a new
 * one) shows the very count last seen of the first (both young), and that
 * look is past the lease by now: the new life is alive all the same.
 */
static void stale_look(bool same)
{
	struct sio_fabric *f;
	struct wf_fabric *w;
	int up[2], go[2], i, alive;
	pid_t a, b;
	char c;

	cr_assert_eq(pipe(up), 0);
	cr_assert_eq(pipe(go), 0);
	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	w = (struct wf_fabric *)f->be;
	a = joiner(up[1], go[0], same ? 2 : 1);
	cr_assert_eq(read(up[0], &c, 1), 1, "the child could not join");
	cr_assert_eq(sio_fabric_proc_alive(f, 1, a), 1, "%s", sio_errmsg());
	i = proc_slot(f, a);
	cr_assert_geq(i, 0);
	nap_ms(400);	/* past the 300 ms lease */
	cr_assert_eq(write(go[1], "g", 1), 1);
	if (!same) {
		waitpid(a, NULL, 0);
		a = joiner(up[1], go[0], 1);
	}
	cr_assert_eq(read(up[0], &c, 1), 1, "the next life could not join");
	b = a;
	if (proc_slot(f, b) != i)
		kill(b, SIGKILL);
	cr_assert_eq(proc_slot(f, b), i, "the next life took another slot: nothing to check");
	kill(b, SIGSTOP);	/* its count stands still at the last one seen */
	atomic_store(&w->hdr->procs[i].beat, w->seen_beat[i]);
	alive = sio_fabric_proc_alive(f, 1, b);
	kill(b, SIGKILL);
	waitpid(b, NULL, 0);
	cr_assert_eq(alive, 1, "a young life judged by its slot's last one");
	sio_fabric_close(f);
}

Test(shmwin, a_new_process_in_a_freed_slot_is_not_judged_by_the_old_ones_heartbeat,
     .init = setup, .fini = teardown)
{
	stale_look(false);
}

Test(shmwin, a_process_joining_again_is_not_judged_by_its_last_lifes_heartbeat,
     .init = setup, .fini = teardown)
{
	stale_look(true);
}

Test(shmwin, events_reach_a_process_of_another_kernel, .init = setup, .fini = teardown)
{
	struct sio_fabric *f, *g;
	struct sio_event ev[4];
	int n = 0;

	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	setenv("SMARTIO_SHMWIN_KERNEL", "kernel-1", 1);
	cr_assert_eq(sio_fabric_open(name, 1, &g), 0, "%s", sio_errmsg());
	setenv("SMARTIO_SHMWIN_KERNEL", "kernel-0", 1);
	cr_assert_eq(sio_link_set(f, 2, 0, false), 0, "%s", sio_errmsg());
	for (int i = 0; i < 100 && n <= 0; i++) {
		nap_ms(20);
		n = sio_event_read(g, ev, 4);
	}
	cr_assert_eq(n, 1, "one event, not %d", n);
	cr_assert_eq(ev[0].type, SIO_EV_LINK_DOWN);
	cr_assert_eq(ev[0].node, 2);
	sio_fabric_close(g);
	sio_fabric_close(f);
}

/* A destroyed fabric leaves none of this host's files behind (its wake page). */
Test(shmwin, a_destroyed_fabric_leaves_no_host_files, .init = setup, .fini = teardown)
{
	const char *rd = getenv("SMARTIO_RUNDIR");
	struct sio_fabric *f;
	char dir[512];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/smartio-shmwin-%s", rd && *rd ? rd : "/dev/shm", name);
	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(stat(dir, &st), 0, "%s: this host's files, made on joining", dir);
	sio_fabric_close(f);
	cr_assert_eq(sio_fabric_destroy(name), 0, "%s", sio_errmsg());
	cr_assert_neq(stat(dir, &st), 0, "%s outlived its fabric", dir);
}

Test(shmwin, the_window_has_limits_and_one_fabric, .init = setup, .fini = teardown)
{
	struct sio_fabric_config c = { .nodes = 2 };
	struct sio_fabric *f;
	struct sio_segment *s;

	cr_assert_eq(sio_fabric_create("another", &c), -EEXIST);
	cr_assert(strstr(sio_errmsg(), name), "names the fabric it holds: %s", sio_errmsg());
	cr_assert_eq(sio_fabric_open("another", 0, &f), -ENOENT);
	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_create(f, 1, 1ull << 30, 0, &s), -ENOSPC);
	cr_assert(strstr(sio_errmsg(), "window"), "%s", sio_errmsg());
	cr_assert_eq(sio_segment_create(f, 1, 4096, SIO_SEG_F_HUGE, &s), -EOPNOTSUPP);
	sio_fabric_close(f);
}

/* The window is input too: a segment record pointing outside it is refused, not mapped. */
Test(shmwin, a_corrupt_window_record_is_refused, .init = setup, .fini = teardown)
{
	struct sio_fabric *f;
	struct sio_segment *s, *r;
	struct wf_fabric *w;
	void *v;

	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_create(f, 5, 8192, 0, &s), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_connect(f, 0, 5, &r), 0, "%s", sio_errmsg());
	w = (struct wf_fabric *)f->be;
	w->hdr->segs[s->slot].off = w->hdr->pools[0].size;	/* past the data area */
	cr_assert_eq(sio_segment_map(r, &v), -EUCLEAN);
	cr_assert(strstr(sio_errmsg(), "outside"), "%s", sio_errmsg());
	sio_segment_close(r);
	sio_segment_close(s);
	sio_fabric_close(f);
}
