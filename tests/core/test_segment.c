/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include "common.h"

Test(segment, data_crosses_processes)
{
	struct sio_fabric_config c = { .nodes = 2, .topology = SIO_TOPO_B2B };
	const char *name = test_fabric("seg", &c);
	struct sio_fabric *f = join(name, 0);
	struct sio_segment *s;
	volatile uint64_t *p;
	int pipefd[2];

	cr_assert_eq(sio_segment_create(f, 42, 8192, 0, &s), 0);
	cr_assert_eq(sio_segment_map(s, (void **)&p), 0);
	p[0] = 0;
	cr_assert_eq(pipe(pipefd), 0);
	pid_t pid = fork();
	if (pid == 0) {	/* node 1, another process: connect, map, store */
		struct sio_fabric *g;
		struct sio_segment *r;
		volatile uint64_t *q;
		if (sio_fabric_open(name, 1, &g) || sio_segment_connect(g, 0, 42, &r) ||
		    sio_segment_map(r, (void **)&q))
			_exit(1);
		q[1] = 0xfeedface;
		__atomic_store_n(&q[0], 1, __ATOMIC_RELEASE);
		sio_segment_notify(r, 0);
		char b;
		if (read(pipefd[0], &b, 1) != 1 || q[2] != 0xabad1dea)
			_exit(2);
		sio_segment_close(r);
		sio_fabric_close(g);
		_exit(0);
	}
	for (int i = 0; i < 1000 && !__atomic_load_n(&p[0], __ATOMIC_ACQUIRE); i++)
		sio_segment_wait(s, 0, 0, 10000000);
	cr_assert_eq(p[0], 1, "the other process's store never arrived");
	cr_assert_eq(p[1], 0xfeedface);
	p[2] = 0xabad1dea;
	cr_assert_eq(write(pipefd[1], "x", 1), 1);
	int st;
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child saw wrong data (%d)", WEXITSTATUS(st));
	sio_segment_close(s);
	sio_fabric_close(f);
	sio_fabric_destroy(name);
}

Test(segment, info_and_lookup)
{
	struct sio_fabric_config c = { .nodes = 3, .topology = SIO_TOPO_SWITCH };
	const char *name = test_fabric("info", &c);
	struct sio_fabric *f = join(name, 2);
	struct sio_segment *s, *r;
	struct sio_segment_info in;

	cr_assert_eq(sio_segment_create(f, 0, 100, 0, &s), 0);
	cr_assert_eq(sio_segment_info(s, &in), 0);
	cr_assert_eq(in.node, 2);
	cr_assert_eq(in.size, 4096, "size is rounded to pages");
	cr_assert_eq(in.kind, SIO_SEG_RAM);
	cr_assert_eq(sio_segment_create(f, in.id, 100, 0, &r), -EEXIST, "ids are unique per node");
	cr_assert_eq(sio_segment_connect(f, 2, in.id, &r), 0);
	cr_assert_eq(sio_segment_connect(f, 1, in.id, &r), -ENOENT);
	sio_segment_close(s);
	struct sio_segment *gone;
	cr_assert_eq(sio_segment_connect(f, 2, in.id, &gone), -ENOENT, "removed segments are gone");
	void *v;
	cr_assert_eq(sio_segment_map(r, &v), -ENOENT, "a stale handle cannot map");
	sio_fabric_close(f);
	sio_fabric_destroy(name);
}

Test(segment, window_exhaustion_and_release)
{
	struct sio_fabric_config c = { .nodes = 2, .topology = SIO_TOPO_SWITCH, .windows = 4 };
	const char *name = test_fabric("win", &c);
	struct sio_fabric *home = join(name, 1), *f = join(name, 0);
	struct sio_segment *own[5], *con[5];
	struct sio_node_info ni[2];
	void *v;

	for (int i = 0; i < 5; i++) {
		cr_assert_eq(sio_segment_create(home, 100 + i, 4096, 0, &own[i]), 0);
		cr_assert_eq(sio_segment_connect(f, 1, 100 + i, &con[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		cr_assert_eq(sio_segment_map(con[i], &v), 0, "map %d: %s", i, sio_errmsg());
	cr_assert_eq(sio_fabric_nodes(f, ni, 2), 2);
	cr_assert_eq(ni[0].windows_used[0], 4);
	cr_assert_eq(sio_segment_map(con[4], &v), -ENOSPC);
	cr_assert(strstr(sio_errmsg(), "windows per adapter"), "error names the limit: %s", sio_errmsg());
	cr_assert_eq(sio_segment_unmap(con[0]), 0);
	sio_fabric_nodes(f, ni, 2);
	cr_assert_eq(ni[0].windows_used[0], 3, "unmapping returns the window");
	cr_assert_eq(sio_segment_map(con[4], &v), 0, "a freed window is reusable: %s", sio_errmsg());
	for (int i = 0; i < 5; i++) {
		sio_segment_close(con[i]);
		sio_segment_close(own[i]);
	}
	sio_fabric_nodes(f, ni, 2);
	cr_assert_eq(ni[0].windows_used[0], 0);
	sio_fabric_close(f);
	sio_fabric_close(home);
	sio_fabric_destroy(name);
}

Test(segment, bad_arguments)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *name = test_fabric("bad", &c);
	struct sio_fabric *f = join(name, 0), *g;
	struct sio_segment *s;

	cr_assert_eq(sio_segment_create(f, 0, 0, 0, &s), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "size"), "%s", sio_errmsg());
	cr_assert_eq(sio_segment_create(NULL, 0, 4096, 0, &s), -EINVAL);
	cr_assert_eq(sio_segment_create(f, 0, 4096, 0, NULL), -EINVAL);
	cr_assert_eq(sio_segment_create_on(f, 7, 0, 4096, 0, &s), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "node 7"), "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(NULL, NULL), -EINVAL);
	cr_assert_eq(sio_fabric_open(name, 5, &g), -ENODEV);
	cr_assert(strstr(sio_errmsg(), "no node 5"), "%s", sio_errmsg());
	cr_assert_eq(sio_fabric_open("no-such-fabric-xyz", 0, &g), -ENOENT);
	cr_assert_eq(sio_fabric_open("bad/name", 0, &g), -EINVAL);
	struct sio_fabric_config bad = { .nodes = 3, .topology = SIO_TOPO_B2B };
	cr_assert_eq(sio_fabric_create("t-bad-b2b", &bad), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "back-to-back"), "%s", sio_errmsg());
	cr_assert_eq(sio_link_set(f, 9, 0, false), -EINVAL);
	sio_fabric_close(f);
	sio_fabric_destroy(name);
}

Test(segment, range_mapping_confines_a_process)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *name = test_fabric("range", &c);
	struct sio_fabric *home = join(name, 0), *f = join(name, 1);
	struct sio_segment *own, *ro, *rw;
	volatile uint32_t *p, *r, *w;

	cr_assert_eq(sio_segment_create(home, 3, 4 * 4096, 0, &own), 0);
	cr_assert_eq(sio_segment_map(own, (void **)&p), 0);
	p[0] = 0x1234;
	p[2 * 1024] = 0;
	cr_assert_eq(sio_segment_connect(f, 0, 3, &ro), 0);
	cr_assert_eq(sio_segment_connect(f, 0, 3, &rw), 0);
	cr_assert_eq(sio_segment_map_range(ro, -1, 0, 4096, SIO_MAP_RDONLY, (void **)&r), 0);
	cr_assert_eq(r[0], 0x1234, "a read-only mapping reads");
	cr_assert_eq(sio_segment_map_range(rw, -1, 2 * 4096, 4096, 0, (void **)&w), 0);
	w[0] = 0xbeef;
	cr_assert_eq(p[2 * 1024], 0xbeef, "the range starts at its offset");
	cr_assert_eq(sio_segment_map_range(rw, -1, 100, 4096, 0, (void **)&w), -EINVAL);
	struct sio_segment *x;
	cr_assert_eq(sio_segment_connect(f, 0, 3, &x), 0);
	cr_assert_eq(sio_segment_map_range(x, -1, 3 * 4096, 2 * 4096, 0, (void **)&w), -EINVAL,
		     "a range past the end is refused");
	cr_assert_eq(sio_segment_map_range(x, -1, 0, 4096, 0x10, (void **)&w), -EINVAL);
	sio_segment_close(x);
	/* a store through the read-only mapping faults, in a child */
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);	/* the default action, even under a sanitizer */
		r[0] = 1;
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "a store to a read-only mapping must fault");
	cr_assert_eq(p[0], 0x1234);
	sio_segment_close(ro);
	sio_segment_close(rw);
	sio_segment_close(own);
	sio_fabric_close(f);
	sio_fabric_close(home);
	sio_fabric_destroy(name);
}
