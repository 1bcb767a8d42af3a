/* SPDX-License-Identifier: MIT */
#include "common.h"

static struct sio_path route(struct sio_fabric *f, int a, int b)
{
	struct sio_endpoint from = { .kind = SIO_EP_NODE, .node = a };
	struct sio_endpoint to = { .kind = SIO_EP_NODE, .node = b };
	struct sio_path p;

	cr_assert_eq(sio_path_resolve(f, &from, &to, -1, &p), 0, "%s", sio_errmsg());
	return p;
}

Test(path, hop_counts_per_topology)
{
	struct sio_fabric_config b2b = { .nodes = 2, .topology = SIO_TOPO_B2B };
	struct sio_fabric_config sw = { .nodes = 4, .topology = SIO_TOPO_SWITCH };
	struct sio_fabric_config cas = { .nodes = 60, .topology = SIO_TOPO_CASCADE, .nodes_per_switch = 10 };
	const char *n;
	struct sio_fabric *f;
	struct sio_path p;

	n = test_fabric("p-b2b", &b2b);
	f = join(n, 0);
	p = route(f, 0, 1);
	cr_assert_eq(p.nhops, 2, "back to back: two adapters");
	cr_assert_eq(p.hops[0].kind, SIO_HOP_ADAPTER);
	cr_assert_eq(p.one_way_ns, 264);
	cr_assert_eq(p.round_trip_ns, 528);
	cr_assert_eq(route(f, 1, 1).nhops, 0, "a node to itself");
	sio_fabric_close(f);
	sio_fabric_destroy(n);

	n = test_fabric("p-sw", &sw);
	f = join(n, 0);
	p = route(f, 0, 3);
	cr_assert_eq(p.nhops, 3);
	cr_assert_eq(p.hops[1].kind, SIO_HOP_SWITCH);
	cr_assert_eq(p.one_way_ns, 132 + 170 + 132);
	sio_fabric_close(f);
	sio_fabric_destroy(n);

	n = test_fabric("p-cas", &cas);
	f = join(n, 0);
	cr_assert_eq(route(f, 0, 9).nhops, 3, "same sub-switch");
	p = route(f, 0, 59);
	cr_assert_eq(p.nhops, 5, "sub-switch, top switch, sub-switch");
	cr_assert_eq(p.hops[2].kind, SIO_HOP_SWITCH);
	cr_assert_eq(p.hops[2].id, 0, "switch 0 is the top switch");
	struct sio_topology t;
	sio_fabric_topology(f, &t);
	cr_assert_eq(t.switches, 7, "the paper's cascade: one top switch and six sub-switches");
	sio_fabric_close(f);
	sio_fabric_destroy(n);
}

Test(path, device_in_chassis_and_segments)
{
	struct sio_fabric_config c = { .nodes = 2, .topology = SIO_TOPO_SWITCH };
	const char *n = test_fabric("p-dev", &c);
	struct sio_fabric *l = join(n, 0), *b = join(n, 1);
	struct sio_devreg *reg = make_device(l, true);
	struct sio_segment *s;
	struct sio_path p;

	cr_assert_eq(sio_segment_create(b, 7, 4096, 0, &s), 0);
	struct sio_endpoint dev = { .kind = SIO_EP_DEVICE, .id = sio_devreg_id(reg) };
	struct sio_endpoint seg = { .kind = SIO_EP_SEGMENT, .node = 1, .id = 7 };
	struct sio_endpoint lender = { .kind = SIO_EP_NODE, .node = 0 };
	cr_assert_eq(sio_path_resolve(b, &dev, &seg, -1, &p), 0);
	cr_assert_eq(p.nhops, 4, "chassis, adapter, switch, adapter");
	cr_assert_eq(p.hops[0].kind, SIO_HOP_CHASSIS);
	cr_assert_eq(sio_path_resolve(b, &dev, &lender, -1, &p), 0);
	cr_assert_eq(p.nhops, 1, "device to its lender's RAM: the chassis switch");
	struct sio_endpoint nodev = { .kind = SIO_EP_DEVICE, .id = 4242 };
	cr_assert_eq(sio_path_resolve(b, &nodev, &lender, -1, &p), -ENOENT);
	sio_segment_close(s);
	sio_devreg_close(reg);
	sio_fabric_close(b);
	sio_fabric_close(l);
	sio_fabric_destroy(n);
}

Test(hint, sq_near_device_cq_near_cpu)
{
	struct sio_fabric_config c = { .nodes = 3, .topology = SIO_TOPO_SWITCH };
	const char *n = test_fabric("hint", &c);
	struct sio_fabric *l = join(n, 0), *b = join(n, 2);
	struct sio_devreg *reg = make_device(l, false);
	struct sio_device *dev, *ldev;
	struct sio_segment *sq, *cq;
	struct sio_segment_info in;
	enum sio_placement pl;

	cr_assert_eq(sio_device_borrow(b, sio_devreg_id(reg), 0, &dev), 0);
	cr_assert_eq(sio_segment_create_hinted(dev, 4096, SIO_HINT_DEVICE_READ | SIO_HINT_HOST_WRITE, &sq, &pl), 0);
	cr_assert_eq(pl, SIO_PLACE_LENDER, "an SQ goes next to the device");
	sio_segment_info(sq, &in);
	cr_assert_eq(in.node, 0);
	cr_assert_eq(sio_segment_create_hinted(dev, 4096, SIO_HINT_DEVICE_WRITE | SIO_HINT_HOST_READ, &cq, &pl), 0);
	cr_assert_eq(pl, SIO_PLACE_LOCAL, "a CQ goes next to the polling CPU");
	sio_segment_info(cq, &in);
	cr_assert_eq(in.node, 2);
	cr_assert_eq(sio_hint_place(dev, SIO_HINT_MULTI_READ | SIO_HINT_DEVICE_WRITE), SIO_PLACE_LENDER);
	cr_assert_eq(sio_hint_place(dev, 0), -EINVAL);
	cr_assert_eq(sio_hint_place(dev, 0x400), -EINVAL);
	/* on the lender itself, "lender" is local */
	cr_assert_eq(sio_device_borrow(l, sio_devreg_id(reg), 0, &ldev), 0);
	struct sio_segment *lsq;
	cr_assert_eq(sio_segment_create_hinted(ldev, 4096, SIO_HINT_DEVICE_READ | SIO_HINT_HOST_WRITE, &lsq, &pl), 0);
	cr_assert_eq(pl, SIO_PLACE_LOCAL);
	cr_assert_str_eq(sio_placement_name(SIO_PLACE_LENDER), "lender");
	sio_segment_close(lsq);
	sio_segment_close(sq);
	sio_segment_close(cq);
	sio_device_close(ldev);
	sio_device_close(dev);
	sio_devreg_close(reg);
	sio_fabric_close(b);
	sio_fabric_close(l);
	sio_fabric_destroy(n);
}

Test(multicast, one_write_reaches_every_subscriber)
{
	struct sio_fabric_config c = { .nodes = 5, .topology = SIO_TOPO_SWITCH, .mcast_groups = 2 };
	const char *n = test_fabric("mc", &c);
	struct sio_fabric *f[5];
	struct sio_segment *s[5];
	char *p[5];
	uint32_t g, g2, g3;
	uint64_t bus;
	struct sio_device *dev;

	for (int i = 0; i < 5; i++)
		f[i] = join(n, i);
	struct sio_devreg *reg = make_device(f[0], false);
	cr_assert_eq(sio_mcast_create(f[1], 4096, &g), 0);
	cr_assert_eq(sio_mcast_create(f[1], 4096, &g2), 0);
	cr_assert_eq(sio_mcast_create(f[1], 4096, &g3), -ENOSPC, "switches support a finite number of groups");
	for (int i = 1; i < 5; i++) {
		cr_assert_eq(sio_segment_create(f[i], 50, 4096, 0, &s[i]), 0);
		cr_assert_eq(sio_segment_map(s[i], (void **)&p[i]), 0);
		if (i < 4)
			cr_assert_eq(sio_mcast_subscribe(f[i], g, s[i]), 0, "%s", sio_errmsg());
	}
	cr_assert_eq(sio_mcast_subscribe(f[1], g, s[2]), -EINVAL, "only local segments subscribe");
	cr_assert_eq(sio_mcast_subscribers(f[1], g), 3);
	cr_assert_eq(sio_device_borrow(f[1], sio_devreg_id(reg), 0, &dev), 0);
	cr_assert_eq(sio_device_map_mcast(dev, g, &bus), 0);
	cr_assert_eq(sio_dma_write(reg, bus + 16, "identify", 9), 0);
	for (int i = 1; i < 4; i++)
		cr_assert_str_eq(p[i] + 16, "identify", "subscriber %d", i);
	cr_assert_eq(p[4][16], 0, "a node that did not subscribe gets nothing");
	char buf[4];
	cr_assert_eq(sio_dma_read(reg, bus, buf, 4), -EFAULT, "reads from a group fault");
	cr_assert_eq(sio_mcast_unsubscribe(f[2], g, s[2]), 0);
	cr_assert_eq(sio_dma_write(reg, bus + 100, "x", 2), 0);
	cr_assert_eq(p[2][100], 0);
	cr_assert_eq(p[3][100], 'x');
	sio_device_close(dev);
	sio_devreg_close(reg);
	for (int i = 1; i < 5; i++)
		sio_segment_close(s[i]);
	for (int i = 0; i < 5; i++)
		sio_fabric_close(f[i]);
	sio_fabric_destroy(n);
}

Test(path, device_to_its_own_bar_crosses_nothing)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *n = test_fabric("p-own", &c);
	struct sio_fabric *l = join(n, 0);
	struct sio_devreg *reg = make_device(l, true);
	struct sio_segment *bar;
	struct sio_segment_info in;
	struct sio_path p;

	cr_assert_eq(sio_devreg_bar(reg, 0, &bar), 0);
	cr_assert_eq(sio_segment_info(bar, &in), 0);
	struct sio_endpoint dev = { .kind = SIO_EP_DEVICE, .id = sio_devreg_id(reg) };
	struct sio_endpoint own = { .kind = SIO_EP_SEGMENT, .node = 0, .id = in.id };
	cr_assert_eq(sio_path_resolve(l, &dev, &own, -1, &p), 0);
	cr_assert_eq(p.nhops, 0, "a controller reads its own CMB without crossing a switch");
	cr_assert_eq(p.round_trip_ns, 0);
	sio_devreg_close(reg);
	sio_fabric_close(l);
	sio_fabric_destroy(n);
}
