/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <string.h>
#include <poll.h>
#include <sys/wait.h>
#include "common.h"

Test(device, borrow_rules)
{
	struct sio_fabric_config c = { .nodes = 3 };
	const char *name = test_fabric("borrow", &c);
	struct sio_fabric *l = join(name, 0), *a = join(name, 1), *b = join(name, 2);
	struct sio_devreg *reg = make_device(l, false);
	uint32_t id = sio_devreg_id(reg);
	struct sio_device *ea, *sb, *sa, *x;
	struct sio_device_info in;

	cr_assert_eq(sio_device_borrow(a, id, SIO_BORROW_EXCLUSIVE, &ea), 0);
	cr_assert_eq(sio_device_borrow(b, id, SIO_BORROW_SHARED, &x), -EBUSY, "shared while exclusive");
	cr_assert(strstr(sio_errmsg(), "exclusively"), "%s", sio_errmsg());
	cr_assert_eq(sio_device_borrow(b, id, SIO_BORROW_EXCLUSIVE, &x), -EBUSY);
	cr_assert_eq(sio_device_downgrade(ea), 0);
	cr_assert_eq(sio_device_downgrade(ea), -EINVAL, "only an exclusive borrow downgrades");
	cr_assert_eq(sio_device_borrow(b, id, SIO_BORROW_SHARED, &sb), 0);
	cr_assert_eq(sio_device_borrow(a, id, SIO_BORROW_SHARED, &sa), 0);
	cr_assert_eq(sio_device_info(sb, &in), 0);
	cr_assert_eq(in.borrowers, 3);
	cr_assert_eq(in.class_code, 0x010802);
	cr_assert_eq(in.lender, 0);
	cr_assert_not(in.bar_mmio, "a device model's BARs are memory of the fabric");
	cr_assert_eq(sio_device_bar_path_kind(sb, 0), SIO_BAR_PATH_FABRIC_SEGMENT);
	cr_assert_str_eq(sio_device_bar_path(sb, 0), "fabric segment");
	cr_assert_eq(sio_device_bar_path_kind(NULL, 0), SIO_BAR_PATH_MAPPED);
	cr_assert_str_eq(sio_device_bar_path(NULL, 0), "");
	cr_assert_str_eq(sio_bar_path_name(SIO_BAR_PATH_MAPPED), "mapped");
	cr_assert_str_eq(sio_bar_path_name(SIO_BAR_PATH_NTB_WINDOW), "NTB window");
	cr_assert_str_eq(sio_bar_path_name(SIO_BAR_PATH_RELAYED), "relayed");
	cr_assert_str_eq(sio_bar_path_name(SIO_BAR_PATH_NTB_WINDOW_EMULATED),
			 "NTB window (emulated forwarding)");
	cr_assert_str_eq(sio_bar_path_name((enum sio_bar_path)99), "unknown");
	cr_assert_eq(sio_device_borrow(b, id, SIO_BORROW_EXCLUSIVE, &x), -EBUSY, "exclusive while shared");
	cr_assert_eq(sio_device_borrow(b, 999, SIO_BORROW_SHARED, &x), -ENOENT);
	cr_assert_eq(sio_device_borrow(b, id, 0x80, &x), -EINVAL);
	sio_device_close(ea);
	sio_device_close(sb);
	sio_device_close(sa);
	cr_assert_eq(sio_device_borrow(b, id, SIO_BORROW_EXCLUSIVE, &x), 0, "free again: %s", sio_errmsg());
	struct sio_device_info list[4];
	cr_assert_eq(sio_device_list(a, 0x010800, 0xffff00, list, 4), 1);
	cr_assert_eq(sio_device_list(a, 0x030000, 0xff0000, list, 4), 0, "class filter");
	sio_device_close(x);
	sio_devreg_close(reg);
	cr_assert_eq(sio_device_list(a, 0, 0, list, 4), 0);
	sio_fabric_close(a);
	sio_fabric_close(b);
	sio_fabric_close(l);
	sio_fabric_destroy(name);
}

/* The device model's view: DMA lands in the right segment across domains. */
Test(device, dma_translation_and_faults)
{
	struct sio_fabric_config c = { .nodes = 2, .topology = SIO_TOPO_SWITCH };
	const char *name = test_fabric("dma", &c);
	struct sio_fabric *l = join(name, 0), *h = join(name, 1);
	struct sio_devreg *reg = make_device(l, false);
	struct sio_device *dev;
	struct sio_segment *rem, *loc, *bar;
	struct sio_dma_stats st;
	uint64_t rbus, lbus, bbus;
	char *rp, *lp, buf[16];

	cr_assert_eq(sio_device_borrow(h, sio_devreg_id(reg), 0, &dev), 0);
	cr_assert_eq(sio_segment_create(h, 1, 4096, 0, &rem), 0);	/* on the borrower */
	cr_assert_eq(sio_segment_create_on(h, 0, 2, 4096, 0, &loc), 0);	/* on the lender */
	cr_assert_eq(sio_segment_map(rem, (void **)&rp), 0);
	cr_assert_eq(sio_segment_map(loc, (void **)&lp), 0);
	cr_assert_eq(sio_device_map(dev, rem, &rbus), 0);
	cr_assert_eq(sio_device_map(dev, loc, &lbus), 0);
	cr_assert_neq(rbus, lbus);
	cr_assert_eq(sio_dma_write(reg, rbus + 100, "remote", 7), 0);
	cr_assert_str_eq(rp + 100, "remote", "write through the window reaches node 1's segment");
	cr_assert_eq(sio_dma_write(reg, lbus + 8, "local", 6), 0);
	cr_assert_str_eq(lp + 8, "local");
	strcpy(rp + 200, "fetched");
	cr_assert_eq(sio_dma_read(reg, rbus + 200, buf, 8), 0);
	cr_assert_str_eq(buf, "fetched");
	/* past the end, straddling the end, and an address nobody mapped */
	cr_assert_eq(sio_dma_read(reg, rbus + 4096, buf, 8), -EFAULT);
	cr_assert_eq(sio_dma_write(reg, rbus + 4090, buf, 8), -EFAULT);
	cr_assert_eq(sio_dma_read(reg, 0x1234000, buf, 8), -EFAULT);
	cr_assert(strstr(sio_errmsg(), "DMA fault"), "%s", sio_errmsg());
	cr_assert_eq(sio_dma_stats(reg, &st), 0);
	cr_assert_eq(st.faults, 3);
	cr_assert_eq(st.last_fault_addr, 0x1234000);
	/* a BAR of the device reaches the device as any segment (the CMB case) */
	cr_assert_eq(sio_device_bar(dev, 0, &bar), 0);
	cr_assert_eq(sio_device_map(dev, bar, &bbus), 0);
	cr_assert_eq(sio_dma_write(reg, bbus, "bar", 4), 0);
	/* unmapped again: the device can no longer reach it */
	cr_assert_eq(sio_device_unmap(dev, rem), 0);
	cr_assert_eq(sio_dma_write(reg, rbus + 100, "late", 5), -EFAULT);
	cr_assert_str_eq(rp + 100, "remote", "nothing written after unmap");
	cr_assert_eq(sio_device_unmap(dev, rem), -ENOENT);
	sio_segment_close(bar);
	sio_device_close(dev);
	cr_assert_eq(sio_dma_read(reg, lbus, buf, 8), -EFAULT, "returning a device drops its mappings");
	sio_segment_close(rem);
	sio_segment_close(loc);
	sio_devreg_close(reg);
	sio_fabric_close(h);
	sio_fabric_close(l);
	sio_fabric_destroy(name);
}

/* A process killed while borrowing: reaped whether its parent has waited
 * for it yet or it is still a zombie (a zombie holds nothing). */
static void kill_releases(const char *tag, bool zombie)
{
	struct sio_fabric_config c = { .nodes = 2, .topology = SIO_TOPO_SWITCH };
	const char *name = test_fabric(tag, &c);
	struct sio_fabric *l = join(name, 0);
	struct sio_devreg *reg = make_device(l, false);
	uint32_t id = sio_devreg_id(reg);
	int ready[2];
	struct sio_node_info ni[2];

	cr_assert_eq(pipe(ready), 0);
	pid_t pid = fork();
	if (pid == 0) {
		struct sio_fabric *h;
		struct sio_device *d;
		struct sio_segment *s;
		uint64_t bus;
		void *v;
		if (sio_fabric_open(name, 1, &h) || sio_device_borrow(h, id, SIO_BORROW_EXCLUSIVE, &d) ||
		    sio_segment_create(h, 5, 4096, 0, &s) || sio_device_map(d, s, &bus))
			_exit(1);
		struct sio_segment *bar;
		if (sio_device_bar(d, 0, &bar) || sio_segment_map(bar, &v))	/* a window on node 1 */
			_exit(2);
		if (write(ready[1], "r", 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	char b;
	cr_assert_eq(read(ready[0], &b, 1), 1, "child did not get ready");
	sio_fabric_nodes(l, ni, 2);
	cr_assert_eq(ni[0].windows_used[0], 1, "the lender maps node 1's segment for the device");
	cr_assert_eq(ni[1].windows_used[0], 1, "node 1 maps the BAR");
	struct sio_device *x;
	cr_assert_eq(sio_device_borrow(l, id, 0, &x), -EBUSY);
	kill(pid, SIGKILL);
	if (zombie) {	/* dead, not yet waited for */
		siginfo_t si;
		cr_assert_eq(waitid(P_PID, pid, &si, WEXITED | WNOWAIT), 0);
	} else {
		waitpid(pid, NULL, 0);
	}
	cr_assert_eq(sio_fabric_reap(l), 1, "one dead process reaped");
	if (zombie)
		waitpid(pid, NULL, 0);
	sio_fabric_nodes(l, ni, 2);
	cr_assert_eq(ni[0].windows_used[0], 0);
	cr_assert_eq(ni[1].windows_used[0], 0);
	cr_assert_eq(sio_device_borrow(l, id, SIO_BORROW_EXCLUSIVE, &x), 0, "%s", sio_errmsg());
	struct sio_segment *gone;
	cr_assert_eq(sio_segment_connect(l, 1, 5, &gone), -ENOENT, "the dead process's segment is freed");
	sio_device_close(x);
	sio_devreg_close(reg);
	sio_fabric_close(l);
	sio_fabric_destroy(name);
}

Test(device, kill_releases_borrows_and_windows)
{
	kill_releases("kill", false);
}

Test(device, killed_zombie_releases_borrows_and_windows)
{
	kill_releases("zombie", true);
}

Test(device, link_down_and_up)
{
	struct sio_fabric_config c = { .nodes = 2, .topology = SIO_TOPO_SWITCH };
	const char *name = test_fabric("link", &c);
	struct sio_fabric *l = join(name, 0), *h = join(name, 1);
	struct sio_devreg *reg = make_device(l, false);
	struct sio_device *dev;
	struct sio_segment *s;
	struct sio_event ev[8];
	uint64_t bus;
	char *p, buf[8];

	cr_assert_eq(sio_device_borrow(h, sio_devreg_id(reg), 0, &dev), 0);
	cr_assert_eq(sio_segment_create(h, 1, 4096, 0, &s), 0);
	cr_assert_eq(sio_segment_map(s, (void **)&p), 0);
	cr_assert_eq(sio_device_map(dev, s, &bus), 0);
	strcpy(p, "before");
	cr_assert_eq(sio_link_get(l, 1, 0), 1);
	cr_assert_eq(sio_link_set(l, 1, 0, false), 0);
	cr_assert_eq(sio_link_get(h, 1, 0), 0, "every handle sees the link state");
	cr_assert_eq(sio_link_get(h, 1, 1), -EINVAL, "one adapter per node here");
	struct pollfd pf = { .fd = sio_event_fd(h), .events = POLLIN };
	cr_assert_eq(poll(&pf, 1, 1000), 1, "the event fd polls readable");
	int n = sio_event_read(h, ev, 8);
	cr_assert_geq(n, 1);
	cr_assert_eq(ev[0].type, SIO_EV_LINK_DOWN);
	cr_assert_eq(ev[0].node, 1);
	cr_assert_eq(sio_dma_write(reg, bus, "after", 6), -ENOLINK, "posted write is dropped");
	cr_assert_str_eq(p, "before");
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(sio_dma_read(reg, bus, buf, 8), -ENOLINK);
	for (int i = 0; i < 8; i++)
		cr_assert_eq((unsigned char)buf[i], 0xff, "reads on a dead link return all ones");
	cr_assert_eq(sio_link_set(l, 1, 0, true), 0);
	n = sio_event_read(h, ev, 8);
	cr_assert_eq(n, 1);
	cr_assert_eq(ev[0].type, SIO_EV_LINK_UP);
	cr_assert_eq(sio_dma_write(reg, bus, "after", 6), 0);
	cr_assert_str_eq(p, "after");
	sio_device_close(dev);
	sio_segment_close(s);
	sio_devreg_close(reg);
	sio_fabric_close(h);
	sio_fabric_close(l);
	sio_fabric_destroy(name);
}

Test(device, segment_lost_event_when_owner_dies)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *name = test_fabric("lost", &c);
	struct sio_fabric *f = join(name, 0);
	struct sio_segment *s;
	struct sio_event ev[4];
	int ready[2];
	void *v;

	cr_assert_eq(pipe(ready), 0);
	pid_t pid = fork();
	if (pid == 0) {
		struct sio_fabric *g;
		struct sio_segment *o;
		if (sio_fabric_open(name, 1, &g) || sio_segment_create(g, 9, 4096, 0, &o))
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char b;
	cr_assert_eq(read(ready[0], &b, 1), 1);
	cr_assert_eq(sio_segment_connect(f, 1, 9, &s), 0);
	cr_assert_eq(sio_segment_map(s, &v), 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	sio_fabric_reap(f);
	cr_assert_eq(sio_event_read(f, ev, 4), 1);
	cr_assert_eq(ev[0].type, SIO_EV_SEGMENT_LOST);
	cr_assert_eq(ev[0].segment, 9);
	cr_assert_eq(ev[0].node, 1);
	sio_segment_close(s);
	sio_fabric_close(f);
	sio_fabric_destroy(name);
}

Test(device, two_paths_share_no_link)
{
	struct sio_fabric_config c = { .nodes = 2, .topology = SIO_TOPO_SWITCH, .adapters = 2 };
	const char *name = test_fabric("mpath", &c);
	struct sio_fabric *l = join(name, 0), *h = join(name, 1);
	struct sio_devreg *reg = make_device(l, false);
	struct sio_device *p0, *p1;
	struct sio_segment *q0, *q1;
	struct sio_node_info ni[2];
	uint64_t b0, b1;
	char *v0, *v1;

	cr_assert_eq(sio_device_borrow(h, sio_devreg_id(reg), 0, &p0), 0);
	cr_assert_eq(sio_device_borrow(h, sio_devreg_id(reg), 0, &p1), 0);
	cr_assert_eq(sio_device_use_adapter(p1, 1), 0);
	cr_assert_eq(sio_device_use_adapter(p1, 2), -EINVAL);
	cr_assert_eq(sio_segment_create(h, 1, 4096, 0, &q0), 0);
	cr_assert_eq(sio_segment_create(h, 2, 4096, 0, &q1), 0);
	cr_assert_eq(sio_segment_map(q0, (void **)&v0), 0);
	cr_assert_eq(sio_segment_map(q1, (void **)&v1), 0);
	cr_assert_eq(sio_device_map(p0, q0, &b0), 0);
	cr_assert_eq(sio_device_map(p1, q1, &b1), 0);
	sio_fabric_nodes(h, ni, 2);
	cr_assert_eq(ni[0].windows_used[0], 1);
	cr_assert_eq(ni[0].windows_used[1], 1, "the backup path uses the lender's second adapter");
	cr_assert_neq(ni[0].switch_id[0], ni[0].switch_id[1], "adapters sit on separate switches");
	cr_assert_eq(sio_link_set(l, 1, 0, false), 0);	/* the primary path breaks */
	cr_assert_eq(sio_dma_write(reg, b0, "p", 2), -ENOLINK);
	cr_assert_eq(sio_dma_write(reg, b1, "b", 2), 0, "the backup path still works");
	cr_assert_str_eq(v1, "b");
	sio_device_close(p0);
	sio_device_close(p1);
	sio_segment_close(q0);
	sio_segment_close(q1);
	sio_devreg_close(reg);
	sio_fabric_close(h);
	sio_fabric_close(l);
	sio_fabric_destroy(name);
}

Test(device, restricted_bar_grants_ranges_per_process)
{
	struct sio_fabric_config c = { .nodes = 3 };
	const char *name = test_fabric("restrict", &c);
	struct sio_fabric *l = join(name, 0), *m = join(name, 1);
	struct sio_device_desc d = { .class_code = 0x010802, .nbars = 1, .bar_size = { 4 * 4096 } };
	struct sio_devreg *reg;
	struct sio_device *owner;
	int ready[2], verdict[2];

	cr_assert_eq(sio_device_register(l, &d, &reg), 0);
	cr_assert_eq(sio_device_borrow(m, sio_devreg_id(reg), SIO_BORROW_EXCLUSIVE, &owner), 0);
	cr_assert_eq(sio_device_restrict(owner, 0, 4096), 0);
	cr_assert_eq(sio_device_restrict(owner, 3, 4096), -ENOENT);
	cr_assert_eq(sio_device_restrict(owner, 0, 100), -EINVAL);
	cr_assert_eq(sio_device_downgrade(owner), 0);
	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(verdict), 0);
	pid_t pid = fork();
	if (pid == 0) {	/* another process on node 2 */
		struct sio_fabric *g;
		struct sio_device *dev;
		struct sio_segment *s[5];
		void *v;
		char b, res[5];
		if (sio_fabric_open(name, 2, &g) || sio_device_borrow(g, sio_devreg_id(reg), 0, &dev))
			_exit(1);
		for (int i = 0; i < 5; i++)
			if (sio_device_bar(dev, 0, &s[i]))
				_exit(2);
		res[0] = sio_segment_map(s[0], &v) == -EACCES;			/* whole BAR */
		res[1] = sio_segment_map_range(s[1], -1, 0, 4096, SIO_MAP_RDONLY, &v) == 0;
		res[2] = sio_segment_map_range(s[2], -1, 0, 4096, 0, &v) == -EACCES;	/* writable regs */
		if (write(ready[1], "r", 1) != 1 || read(verdict[0], &b, 1) != 1)	/* parent grants */
			_exit(3);
		res[3] = sio_segment_map_range(s[3], -1, 2 * 4096, 4096, 0, &v) == 0;
		res[4] = sio_segment_map_range(s[4], -1, 3 * 4096, 4096, 0, &v) == -EACCES;
		_exit(res[0] && res[1] && res[2] && res[3] && res[4] ? 0 : 10 + (res[0] | res[1] << 1 |
		      res[2] << 2 | res[3] << 3 | res[4] << 4));
	}
	char b;
	cr_assert_eq(read(ready[0], &b, 1), 1);
	cr_assert_eq(sio_device_grant(owner, pid, 0, 2 * 4096, 4096), 0);
	cr_assert_eq(sio_device_grant(owner, pid, 0, 3 * 4096, 8192), -EINVAL, "past the BAR's end");
	cr_assert_eq(write(verdict[1], "g", 1), 1);
	int st;
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child verdict %d", WEXITSTATUS(st));
	cr_assert_eq(sio_device_revoke(owner, pid, 0, 2 * 4096), 0);
	cr_assert_eq(sio_device_revoke(owner, pid, 0, 2 * 4096), -ENOENT);
	/* the owner's own mappings are unrestricted; returning it lifts the restriction */
	struct sio_segment *bar;
	void *v;
	cr_assert_eq(sio_device_bar(owner, 0, &bar), 0);
	cr_assert_eq(sio_segment_map(bar, &v), 0);
	sio_segment_close(bar);
	sio_device_close(owner);
	struct sio_device *other;
	cr_assert_eq(sio_device_borrow(l, sio_devreg_id(reg), 0, &other), 0);
	cr_assert_eq(sio_device_grant(other, 1234, 0, 0, 4096), -EPERM, "only the restricting borrow grants");
	sio_device_close(other);
	sio_devreg_close(reg);
	sio_fabric_close(m);
	sio_fabric_close(l);
	sio_fabric_destroy(name);
}

/* The status a tool prints: one consistent look, with what the dead held gone. */
Test(device, fabric_status_shows_what_the_living_hold)
{
	struct sio_fabric_config c = { .nodes = 2, .windows = 4 };
	const char *name = test_fabric("status", &c);
	struct sio_fabric *l = join(name, 0), *h = join(name, 1);
	struct sio_devreg *reg = make_device(l, false);
	struct sio_fabric_status *st;
	struct sio_segment *seg;
	struct sio_device *dev;
	uint64_t bus;
	pid_t child;
	int wst;

	cr_assert_eq(sio_device_borrow(h, sio_devreg_id(reg), SIO_BORROW_EXCLUSIVE, &dev), 0);
	cr_assert_eq(sio_segment_create(h, 42, 8192, SIO_SEG_F_NOHUGE, &seg), 0);
	cr_assert_eq(sio_segment_set_name(seg, "queue"), 0);
	cr_assert_eq(sio_device_map(dev, seg, &bus), 0, "%s", sio_errmsg());	/* a window on node 0 */
	child = fork();
	if (child == 0) {	/* a process that dies holding a segment */
		struct sio_fabric *c2;
		struct sio_segment *s2;
		if (sio_fabric_open(name, 1, &c2) || sio_segment_create(c2, 77, 4096, 0, &s2))
			_exit(1);
		_exit(0);
	}
	cr_assert_eq(waitpid(child, &wst, 0), child);
	cr_assert(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);

	cr_assert_eq(sio_fabric_status_get(l, &st), 0, "%s", sio_errmsg());
	cr_expect_str_eq(st->name, name);
	const char *be = getenv("SMARTIO_FABRIC_BACKEND");
	cr_expect_str_eq(st->backend, be && *be ? be : "shm");
	cr_expect_eq(st->topo.nodes, 2);
	cr_expect_eq(st->procs, 2, "the dead child is reaped first");
	cr_assert_eq(st->nnodes, 2);
	cr_expect_eq(st->nodes[0].windows_used[0], 1, "the device's window to node 1");
	cr_expect_eq(st->nodes[0].windows_total, 4);
	cr_expect_eq(st->nodes[1].procs, 1);
	cr_assert_eq(st->nsegments, 2, "the BAR and the queue; not the dead child's");
	cr_expect_eq(st->segments[0].info.kind, SIO_SEG_BAR);
	cr_expect_eq(st->segments[0].info.device, (int)sio_devreg_id(reg));
	cr_expect_eq(st->segments[0].owner_pid, getpid());
	cr_expect_eq(st->segments[1].info.id, 42);
	cr_expect_eq(st->segments[1].info.node, 1);
	cr_expect_eq(st->segments[1].info.size, 8192);
	cr_expect_str_eq(st->segments[1].info.name, "queue");
	cr_assert_eq(st->ndevices, 1);
	cr_expect_eq(st->devices[0].borrowers, 1);
	cr_expect(st->devices[0].exclusive);
	cr_assert_eq(st->nborrows, 1);
	cr_expect_eq(st->borrows[0].device, sio_devreg_id(reg));
	cr_expect_eq(st->borrows[0].node, 1);
	cr_expect(st->borrows[0].exclusive);
	sio_fabric_status_close(st);
	sio_fabric_status_close(NULL);
	cr_expect_eq(sio_fabric_status_get(NULL, &st), -EINVAL);

	sio_segment_close(seg);
	sio_device_close(dev);
	sio_devreg_close(reg);
	sio_fabric_close(h);
	sio_fabric_close(l);
	sio_fabric_destroy(name);
}

/*
 * A pid names a process of one kernel only: a grant names the node too, so
 * pid P of node 2 gets nothing granted to pid P of node 1.
 */
Test(device, grants_name_the_node_as_well_as_the_pid)
{
	struct sio_fabric_config c = { .nodes = 3 };
	const char *name = test_fabric("grantnode", &c);
	struct sio_fabric *l = join(name, 0), *m = join(name, 1), *g = join(name, 2);
	struct sio_device_desc d = { .class_code = 0x010802, .nbars = 1, .bar_size = { 4 * 4096 } };
	struct sio_devreg *reg;
	struct sio_device *owner, *dev;
	struct sio_segment *s;
	void *v;

	cr_assert_eq(sio_device_register(l, &d, &reg), 0);
	cr_assert_eq(sio_device_borrow(m, sio_devreg_id(reg), SIO_BORROW_EXCLUSIVE, &owner), 0);
	cr_assert_eq(sio_device_restrict(owner, 0, 4096), 0);
	cr_assert_eq(sio_device_downgrade(owner), 0);
	cr_assert_eq(sio_device_borrow(g, sio_devreg_id(reg), 0, &dev), 0);
	/* this process is joined as nodes 0, 1 and 2: its pid alone is ambiguous */
	cr_assert_eq(sio_device_grant(owner, getpid(), 0, 4096, 4096), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "node"), "%s", sio_errmsg());
	cr_assert_eq(sio_device_grant_node(owner, 0, getpid(), 0, 4096, 4096), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_device_bar(dev, 0, &s), 0);
	cr_assert_eq(sio_segment_map_range(s, -1, 4096, 4096, 0, &v), -EACCES,
		     "granted to node 0's pid, mapped from node 2");
	cr_assert_eq(sio_device_grant_node(owner, 2, getpid(), 0, 4096, 4096), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map_range(s, -1, 4096, 4096, 0, &v), 0, "%s", sio_errmsg());
	sio_segment_close(s);
	cr_assert_eq(sio_device_revoke_node(owner, 2, getpid(), 0, 4096), 0);
	cr_assert_eq(sio_device_revoke_node(owner, 2, getpid(), 0, 4096), -ENOENT);
	cr_assert_eq(sio_device_revoke_node(owner, 0, getpid(), 0, 4096), 0);
	sio_device_close(dev);
	sio_device_close(owner);
	sio_devreg_close(reg);
	sio_fabric_close(g);
	sio_fabric_close(m);
	sio_fabric_close(l);
	sio_fabric_destroy(name);
}
