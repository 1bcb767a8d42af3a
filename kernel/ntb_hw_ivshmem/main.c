// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * ntb_hw_ivshmem: an NTB hardware driver over QEMU's ivshmem-doorbell, so that
 * the Linux NTB framework and its clients run between QEMU guests. The PCI
 * side: probe, the layout of BAR2, the port operations, remove.
 */
#include <linux/debugfs.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/pci.h>
#include <linux/random.h>

#include "ntb_hw_ivshmem.h"

static int ports;
module_param(ports, int, 0444);
MODULE_PARM_DESC(ports,
		 "Ports of the NTB (2-8): an empty BAR2 is laid out for them, a laid-out one must have as many (default 0: only adopt a laid-out BAR2, never write one)");

static int ivntb_port_number(struct ntb_dev *ntb)
{
	struct ivntb_dev *iv = to_ivntb(ntb);

	return ivntb_api_port(iv, iv->port);
}

static int ivntb_peer_port_count(struct ntb_dev *ntb)
{
	return ivntb_peer_count(to_ivntb(ntb));
}

static int ivntb_peer_port_number(struct ntb_dev *ntb, int pidx)
{
	struct ivntb_dev *iv = to_ivntb(ntb);

	if (pidx >= 0 && pidx < ivntb_peer_count(iv))
		return ivntb_api_port(iv, ivntb_pidx_port(iv, pidx));
	dev_err_ratelimited(&iv->pdev->dev,
			    "peer_port_number: no peer %d of %d\n", pidx,
			    ivntb_peer_count(iv));
	return -EINVAL;
}

static int ivntb_peer_port_idx(struct ntb_dev *ntb, int port)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	int id = ivntb_api_id(iv, port);

	if (id >= 0 && id != iv->port)
		return ivntb_port_pidx(iv, id);
	dev_err_ratelimited(&iv->pdev->dev,
			    "peer_port_idx: port %d is no peer of port %d (ports 0..%d)\n",
			    port, iv->port, iv->ports - 1);
	return -EINVAL;
}

/* The device whose DMA ops hand out this port's area of BAR2 (mw.c). */
static struct device *ivntb_get_dma_dev(struct ntb_dev *ntb)
{
	return to_ivntb(ntb)->dma_dev;
}

static const struct ntb_dev_ops ivntb_ops = {
	.port_number		= ivntb_port_number,
	.peer_port_count	= ivntb_peer_port_count,
	.peer_port_number	= ivntb_peer_port_number,
	.peer_port_idx		= ivntb_peer_port_idx,
	.link_is_up		= ivntb_link_is_up,
	.link_enable		= ivntb_link_enable,
	.link_disable		= ivntb_link_disable,
	.mw_count		= ivntb_mw_count,
	.mw_get_align		= ivntb_mw_get_align,
	.mw_set_trans		= ivntb_mw_set_trans,
	.mw_clear_trans		= ivntb_mw_clear_trans,
	.peer_mw_count		= ivntb_peer_mw_count,
	.peer_mw_get_addr	= ivntb_peer_mw_get_addr,
	.db_is_unsafe		= ivntb_db_is_unsafe,
	.db_valid_mask		= ivntb_db_valid_mask,
	.db_vector_count	= ivntb_db_vector_count,
	.db_vector_mask		= ivntb_db_vector_mask,
	.db_read		= ivntb_db_read,
	.db_set			= ivntb_db_set,
	.db_clear		= ivntb_db_clear,
	.db_read_mask		= ivntb_db_read_mask,
	.db_set_mask		= ivntb_db_set_mask,
	.db_clear_mask		= ivntb_db_clear_mask,
	.peer_db_set		= ivntb_peer_db_set,
	.spad_is_unsafe		= ivntb_spad_is_unsafe,
	.spad_count		= ivntb_spad_count,
	.spad_read		= ivntb_spad_read,
	.spad_write		= ivntb_spad_write,
	.peer_spad_read		= ivntb_peer_spad_read,
	.peer_spad_write	= ivntb_peer_spad_write,
	.get_dma_dev		= ivntb_get_dma_dev,
};

/*
 * The layout of a BAR2 of @bar_size bytes for @nports ports: the header
 * (descriptor page, then a slot per port; for each function where several
 * share BAR2, the descriptor of function @rank in page @rank), then a region
 * per inbound window,
 * as large a power of two as fits, aligned to its size so that a region's
 * bus address meets any alignment up to it.
 */
static int ivntb_layout(u64 bar_size, int nports, int rank,
			struct ivntb_desc *d)
{
	enum ivntb_profile_id id = ivntb_profile_chosen();
	const struct ivntb_profile *p = ivntb_profile_get(id);
	int mws = ivntb_profile_mws(p, nports), nshare = ivntb_share_count();
	u64 slot_size = round_up(sizeof(struct ivntb_slot), PAGE_SIZE);
	u64 descs = nshare * PAGE_SIZE;
	u64 hdr = descs + nshare * nports * slot_size;
	u64 nreg = (u64)nports * (nports - 1) * mws;
	unsigned int shift;

	memset(d, 0, sizeof(*d));
	for (shift = ilog2(bar_size); shift >= PAGE_SHIFT; shift--) {
		u64 data = round_up(hdr, 1ULL << shift);

		if (data + (nreg << shift) > bar_size)
			continue;
		d->version = cpu_to_le32(IVNTB_VERSION);
		d->ports = cpu_to_le32(nports);
		d->mws = cpu_to_le32(mws);
		d->spads = cpu_to_le32(ivntb_profile_spads(p, nports));
		d->profile = cpu_to_le32(id);
		d->db_bits = cpu_to_le32(IVNTB_DB_BITS);
		d->region_shift = cpu_to_le32(shift);
		d->bar_size = cpu_to_le64(bar_size);
		d->slot_offset = cpu_to_le64(descs +
					     rank * nports * slot_size);
		d->slot_size = cpu_to_le64(slot_size);
		d->data_offset = cpu_to_le64(data);
		d->shared = cpu_to_le32(nshare > 1 ? nshare : 0);
		d->magic = cpu_to_le64(IVNTB_MAGIC);
		return 0;
	}
	return -ENOSPC;
}

/*
 * Adopt the layout BAR2 holds, or lay out an empty BAR2 when ports= says
 * how; refuse anything else.
 */
static int ivntb_setup_layout(struct ivntb_dev *iv)
{
	struct device *dev = &iv->pdev->dev;
	struct ivntb_desc want, *d = iv->desc;
	const struct ivntb_profile *was;
	int n, ret;

	if (ports && (ports < IVNTB_MIN_PORTS || ports > IVNTB_MAX_PORTS)) {
		dev_err(dev,
			"ports=%d: an NTB over ivshmem has %d to %d ports\n",
			ports, IVNTB_MIN_PORTS, IVNTB_MAX_PORTS);
		return -EINVAL;
	}
	if (le64_to_cpu(READ_ONCE(d->magic)) == IVNTB_MAGIC) {
		/*
		 * The port that laid BAR2 out wrote the fields before the
		 * magic (wmb() below): read them after it, or another
		 * guest's stores may be seen out of order (arm64).
		 */
		rmb();
		n = le32_to_cpu(READ_ONCE(d->ports));
		was = ivntb_profile_get(le32_to_cpu(READ_ONCE(d->profile)));
		if (le32_to_cpu(d->version) == IVNTB_VERSION && was &&
		    was != ivntb_profile_get(ivntb_profile_chosen())) {
			dev_err(dev,
				"BAR2 is laid out for profile=%s: load ntb_hw_ivshmem with profile=%s on every guest (or clear the shared memory)\n",
				was->name, was->name);
			return -EINVAL;
		}
		if (le32_to_cpu(d->version) == IVNTB_VERSION && was &&
		    le32_to_cpu(READ_ONCE(d->shared)) !=
		    (ivntb_share_count() > 1 ? ivntb_share_count() : 0)) {
			dev_err(dev,
				"BAR2 is laid out for shared=%u: load ntb_hw_ivshmem with shared=%u on every guest (or clear the shared memory)\n",
				le32_to_cpu(d->shared), le32_to_cpu(d->shared));
			return -EINVAL;
		}
		if (n < IVNTB_MIN_PORTS || n > IVNTB_MAX_PORTS ||
		    ivntb_layout(iv->shm_size, n, iv->rank, &want) ||
		    memcmp(&want, d, sizeof(want))) {
			dev_err(dev,
				"BAR2 holds an ntb_hw_ivshmem layout this driver cannot use (version %u, %d ports, %llu bytes): clear the shared memory\n",
				le32_to_cpu(d->version), n,
				le64_to_cpu(d->bar_size));
			return -EPROTO;
		}
		if (ports && ports != n) {
			dev_err(dev,
				"BAR2 is laid out for %d ports: load ntb_hw_ivshmem with ports=%d (or none) on every guest\n",
				n, n);
			return -EINVAL;
		}
		/* this driver's own computation, not what BAR2 holds now */
		iv->layout = want;
		return 0;
	}
	if (memchr_inv(d, 0, PAGE_SIZE)) {
		dev_err(dev,
			"BAR2 holds data that is not an ntb_hw_ivshmem layout (another user of this ivshmem?): not touching it\n");
		return -EBUSY;
	}
	/*
	 * The alias loads this driver for every ivshmem-doorbell function,
	 * including those meant for shmwin or a vfio/uio lender: an empty
	 * region is laid out only when the user asked for an NTB.
	 */
	if (!ports) {
		dev_info(dev,
			 "BAR2 holds no NTB layout and ports= was not given: left alone (load ntb_hw_ivshmem with ports=N to lay one out)\n");
		return -ENODEV;
	}
	n = ports;
	ret = ivntb_layout(iv->shm_size, n, iv->rank, &want);
	if (ret) {
		dev_err(dev,
			"BAR2 of %pa bytes is too small for %d ports\n",
			&iv->shm_size, n);
		return ret;
	}
	/*
	 * Every port that finds BAR2 empty writes the same bytes: no race to
	 * lose.
	 */
	memcpy((void *)d + sizeof(d->magic), (void *)&want + sizeof(want.magic),
	       sizeof(want) - sizeof(want.magic));
	wmb();	/* the fields before the magic that vouches for them */
	WRITE_ONCE(d->magic, want.magic);
	iv->layout = want;
	return 0;
}

/*
 * Take the layout adopted at probe (iv->layout, a copy in this kernel's
 * memory) into the fields every access to BAR2 is derived from, and check
 * that everything it places lies within BAR2 (overflow-safe): from here on
 * no value in BAR2, which any peer may rewrite, decides where this kernel
 * reads or writes. The layout is this driver's own computation; the checks
 * keep it so should that computation ever change.
 */
static int ivntb_read_layout(struct ivntb_dev *iv)
{
	const struct ivntb_desc *d = &iv->layout;
	u64 ports = le32_to_cpu(d->ports), mws = le32_to_cpu(d->mws);
	u64 spads = le32_to_cpu(d->spads), shift = le32_to_cpu(d->region_shift);
	u64 slot_off = le64_to_cpu(d->slot_offset);
	u64 slot_size = le64_to_cpu(d->slot_size);
	u64 data_off = le64_to_cpu(d->data_offset);
	u64 slots_end, nreg, data_end;

	if (ports < IVNTB_MIN_PORTS || ports > IVNTB_MAX_PORTS ||
	    !mws || mws > IVNTB_MAX_MWS || spads > IVNTB_MAX_SPADS ||
	    le32_to_cpu(d->db_bits) != IVNTB_DB_BITS ||
	    le64_to_cpu(d->bar_size) != iv->shm_size ||
	    shift < PAGE_SHIFT || shift >= 63 ||
	    slot_off < sizeof(struct ivntb_desc) ||
	    slot_size < sizeof(struct ivntb_slot) ||
	    check_mul_overflow(ports, slot_size, &slots_end) ||
	    check_add_overflow(slots_end, slot_off, &slots_end) ||
	    slots_end > data_off ||
	    !IS_ALIGNED(slot_off, sizeof(u64)) ||
	    !IS_ALIGNED(slot_size, sizeof(u64)) ||
	    !IS_ALIGNED(data_off, PAGE_SIZE))
		goto bad;
	nreg = ports * (ports - 1) * mws;
	if (nreg > (U64_MAX >> shift) ||
	    check_add_overflow(data_off, nreg << shift, &data_end) ||
	    data_end > iv->shm_size)
		goto bad;
	iv->ports = ports;
	iv->mws = mws;
	iv->spads = spads;
	iv->region_shift = shift;
	iv->slot_off = slot_off;
	iv->slot_size = slot_size;
	iv->data_off = data_off;
	return 0;
bad:
	dev_err(&iv->pdev->dev,
		"the layout of BAR2 does not fit its %pa bytes (%llu ports, slots at %llu of %llu bytes, data at %llu): not used\n",
		&iv->shm_size, ports, slot_off, slot_size, data_off);
	return -EPROTO;
}

/*
 * Take this port's slot: a slot left by an earlier life of this port (a
 * guest killed, rebooted) is reset; doorbell rings it never cleared are
 * dropped by acknowledging them. The counters this port keeps in the other
 * slots are its own, and go on from where they are.
 */
static void ivntb_slot_init(struct ivntb_dev *iv)
{
	struct ivntb_slot *s = iv->slot;
	int p, b, w;

	if (le64_to_cpu(READ_ONCE(s->magic)) == IVNTB_SLOT_MAGIC)
		dev_info(&iv->pdev->dev,
			 "port %d restarted: its slot still holds the life before (not unloaded: a crash or reset); the peers see the link go down, then up\n",
			 iv->port);
	WRITE_ONCE(s->magic, 0);
	WRITE_ONCE(s->enabled, 0);
	wmb();	/* peers stop trusting the slot before it changes */
	for (b = 0; b < IVNTB_MAX_SPADS; b++)
		WRITE_ONCE(s->spad[b], 0);
	WRITE_ONCE(s->bus, cpu_to_le64(iv->shm_bus));
	for (p = 0; p < IVNTB_MAX_PORTS; p++) {
		WRITE_ONCE(s->seen[p], 0);
		for (w = 0; w < IVNTB_MAX_MWS; w++) {
			WRITE_ONCE(s->xlat[p][w].page, 0);
			WRITE_ONCE(s->xlat[p][w].pages, 0);
		}
		for (b = 0; b < IVNTB_DB_BITS; b++)
			WRITE_ONCE(s->db_ack[p][b], READ_ONCE(s->db_set[p][b]));
		/* messages of before are dropped as doorbells are */
		for (b = 0; b < IVNTB_MSGS; b++)
			WRITE_ONCE(s->msg_ack[p][b],
				   READ_ONCE(s->msg[p][b].seq));
	}
	/* an intent to send an earlier life left in the peers' slots */
	for (p = 0; p < iv->ports; p++) {
		struct ivntb_slot *peer = ivntb_slot_of(iv, p);

		for (b = 0; b < IVNTB_MSGS; b++)
			WRITE_ONCE(peer->msg_intent[iv->port][b], 0);
	}
	iv->session = get_random_u64() | 1;
	WRITE_ONCE(s->session, cpu_to_le64(iv->session));
	wmb();	/* the slot reset and its session before the magic */
	WRITE_ONCE(s->magic, cpu_to_le64(IVNTB_SLOT_MAGIC));
}

static void ivntb_slot_fini(struct ivntb_dev *iv)
{
	WRITE_ONCE(iv->slot->enabled, 0);
	WRITE_ONCE(iv->slot->magic, 0);
	wmb();	/* the peers see the port gone before it unmaps */
}

/*
 * BAR0 (registers) and BAR2 (shared memory) claimed and mapped, managed:
 * they go when the driver is unbound, after ivntb_remove().
 */
static int ivntb_map(struct ivntb_dev *iv)
{
	struct pci_dev *pdev = iv->pdev;
	struct device *dev = &pdev->dev;
	void *shm;
	u32 pos;
	int ret;

	ret = pcim_iomap_regions(pdev, BIT(IVSHMEM_BAR_REGS), IVNTB_NAME);
	if (ret) {
		dev_err(dev,
			"cannot claim and map BAR0, ivshmem's registers: %d\n",
			ret);
		return ret;
	}
	iv->regs = pcim_iomap_table(pdev)[IVSHMEM_BAR_REGS];
	pos = readl(iv->regs + IVSHMEM_IVPOSITION);
	if ((s32)pos < 0) {
		dev_err(dev,
			"no IVPosition: the ivshmem device has no server (an ivshmem-doorbell with chardev= is needed)\n");
		return -ENODEV;
	}
	iv->port = pos;
	iv->shm_phys = pci_resource_start(pdev, IVSHMEM_BAR_SHM);
	iv->shm_size = pci_resource_len(pdev, IVSHMEM_BAR_SHM);
	iv->shm_bus = pci_bus_address(pdev, IVSHMEM_BAR_SHM);
	if (iv->shm_size < SZ_1M) {
		dev_err(dev,
			"BAR2 is %pa bytes: too small for an NTB (1 MiB at least)\n",
			&iv->shm_size);
		return -ENOSPC;
	}
	/* managed too, as the device was enabled with pcim_enable_device() */
	ret = pci_request_region(pdev, IVSHMEM_BAR_SHM, IVNTB_NAME);
	if (ret) {
		dev_err(dev, "BAR2 is taken by another driver: %d\n", ret);
		return ret;
	}
	iv->rank = ivntb_share_rank(iv);
	if (iv->rank < 0)
		return iv->rank;
	/*
	 * The descriptor's page alone, until the layout says where the slots
	 * and this port's area are (ivntb_map_shm()). Shared memory, not
	 * registers: write-back, as the peers' kernels map it too.
	 */
	shm = devm_memremap(dev, iv->shm_phys + iv->rank * PAGE_SIZE,
			    PAGE_SIZE, MEMREMAP_WB);
	if (IS_ERR(shm)) {
		dev_err(dev, "cannot map BAR2's first page at %pa: %ld\n",
			&iv->shm_phys, PTR_ERR(shm));
		return PTR_ERR(shm);
	}
	iv->desc = shm;
	return 0;
}

/*
 * Map what this port itself reads and writes, once the layout is known:
 * the header (the descriptor and every slot) and its own area. The peers'
 * areas stay unmapped in this kernel (see struct ivntb_dev).
 */
static int ivntb_map_shm(struct ivntb_dev *iv)
{
	struct device *dev = &iv->pdev->dev;
	u64 area = ivntb_area_off(iv, iv->port);
	void *first = iv->desc;
	void *p;

	p = devm_memremap(dev, iv->shm_phys, iv->data_off, MEMREMAP_WB);
	if (IS_ERR(p))
		goto err;
	iv->hdr = p;
	p = devm_memremap(dev, iv->shm_phys + area, ivntb_area_size(iv),
			  MEMREMAP_WB);
	if (IS_ERR(p))
		goto err;
	iv->area = p;
	iv->desc = iv->hdr + iv->rank * PAGE_SIZE;
	devm_memunmap(dev, first);
	return 0;
err:
	dev_err(dev, "cannot map BAR2's header and port %d's area: %ld\n",
		iv->port, PTR_ERR(p));
	return PTR_ERR(p);
}

static int ivntb_setup(struct ivntb_dev *iv)
{
	struct device *dev = &iv->pdev->dev;
	int ret;

	ret = ivntb_setup_layout(iv);
	if (ret)
		return ret;
	ret = ivntb_read_layout(iv);
	if (ret)
		return ret;
	if (iv->port >= iv->ports) {
		dev_err(dev,
			"this guest is ivshmem peer %d, beyond the %d ports BAR2 is laid out for%s: use ports=N with N above the highest peer id\n",
			iv->port, iv->ports,
			iv->prof->ports ? " (the profile's own count)" : "");
		return -ERANGE;
	}
	ret = ivntb_map_shm(iv);
	if (ret)
		return ret;
	iv->slot = ivntb_slot_of(iv, iv->port);
	ivntb_slot_init(iv);
	ret = ivntb_share_add(iv);
	if (ret) {
		ivntb_slot_fini(iv);
		return ret;
	}
	ivntb_mw_init(iv);
	ivntb_db_init(iv);
	ivntb_msg_init(iv);
	ivntb_link_init(iv);
	return 0;
}

/* What the device is to the NTB core, before any resource is taken. */
static void ivntb_init_struct(struct ivntb_dev *iv, struct pci_dev *pdev)
{
	iv->pdev = pdev;
	iv->ntb.pdev = pdev;
	iv->prof = ivntb_profile_get(ivntb_profile_chosen());
	iv->ops = ivntb_ops;
	ivntb_profile_ops(iv, &iv->ops);
	iv->ntb.ops = &iv->ops;
}

/* The PCI function: enabled, its BARs claimed and mapped, bus master. */
static int ivntb_init_pci(struct ivntb_dev *iv)
{
	struct pci_dev *pdev = iv->pdev;
	struct device *dev = &pdev->dev;
	int ret;

	/* managed: disabled, its regions released, when the driver unbinds */
	ret = pcim_enable_device(pdev);
	if (ret) {
		dev_err(dev, "cannot enable the device: %d\n", ret);
		return ret;
	}
	ret = ivntb_map(iv);
	if (ret)
		return ret;
	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (ret) {
		dev_err(dev, "cannot set a 64-bit DMA mask: %d\n", ret);
		return ret;
	}
	/*
	 * MSI-X messages are memory writes of the function: without bus
	 * mastering they go nowhere.
	 */
	pci_set_master(pdev);
	return 0;
}

static void ivntb_deinit_pci(struct ivntb_dev *iv)
{
	pci_clear_master(iv->pdev);
}

/*
 * This function's debugfs directory: its emulated forwarding (fwd.c) and
 * its emulated cable (link.c). Nothing fails on a debugfs that is not
 * there.
 */
static void ivntb_debugfs_init(struct ivntb_dev *iv)
{
	char name[64];

	snprintf(name, sizeof(name), "%s:%s", IVNTB_NAME, pci_name(iv->pdev));
	iv->dbg = debugfs_create_dir(name, NULL);
	ivntb_link_debugfs(iv);
}

/*
 * The NTB over BAR2: its layout adopted (or laid out), this port's slot
 * taken, the interrupts, and the DMA device that hands out BAR2.
 */
static int ivntb_init_dev(struct ivntb_dev *iv)
{
	int ret;

	ret = ivntb_setup(iv);
	if (ret)
		return ret;
	ret = ivntb_irq_init(iv);
	if (ret)
		goto err_slot;
	pci_set_drvdata(iv->pdev, iv);	/* the DMA ops find iv there */
	ret = ivntb_dma_init(iv);
	if (ret)
		goto err_irq;
	ivntb_debugfs_init(iv);
	ret = ivntb_fwd_init(iv);
	if (ret)
		goto err_dma;
	return 0;

err_dma:
	debugfs_remove_recursive(iv->dbg);
	ivntb_dma_fini(iv);
err_irq:
	ivntb_irq_fini(iv);
	ivntb_msg_fini(iv);
err_slot:
	ivntb_share_del(iv);
	ivntb_slot_fini(iv);
	return ret;
}

static void ivntb_deinit_dev(struct ivntb_dev *iv)
{
	ivntb_fwd_fini(iv);
	debugfs_remove_recursive(iv->dbg);
	ivntb_dma_fini(iv);
	ivntb_mw_fini(iv);
	ivntb_irq_fini(iv);
	ivntb_msg_fini(iv);
	ivntb_share_del(iv);
	ivntb_slot_fini(iv);
}

static int ivntb_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	struct ivntb_dev *iv;
	int ret;

	if (!pdev->msix_cap) {
		dev_info(dev,
			 "no MSI-X: an ivshmem-plain (no doorbells), not an NTB; left alone\n");
		return -ENODEV;
	}
	/* freed after remove: the NTB core waits for its device's release */
	iv = devm_kzalloc(dev, sizeof(*iv), GFP_KERNEL);
	if (!iv)
		return -ENOMEM;
	ivntb_init_struct(iv, pdev);
	ret = ivntb_init_pci(iv);
	if (ret)
		return ret;
	ret = ivntb_init_dev(iv);
	if (ret)
		goto err_deinit_pci;
	/* by side, on two-port hardware: known once the port is */
	iv->ntb.topo = ivntb_profile_topo(iv);
	ivntb_link_start(iv);
	ret = ntb_register_device(&iv->ntb);
	if (ret) {
		dev_err(dev, "the NTB core refused the device: %d\n", ret);
		goto err_link;
	}
	dev_info(dev,
		 "NTB port %d of %d (profile=%s), %d windows of %lu KiB per peer, %d scratchpads, %d message registers, %d doorbell bits on %d vector(s)\n",
		 iv->port, iv->ports, iv->prof->name, iv->mws,
		 (unsigned long)(ivntb_region_size(iv) >> 10),
		 iv->spads, iv->prof->msgs, (int)hweight64(iv->db_valid),
		 iv->nvec);
	return 0;

err_link:
	ivntb_link_stop(iv);
	ivntb_deinit_dev(iv);
err_deinit_pci:
	ivntb_deinit_pci(iv);
	return ret;
}

/*
 * Clients bound to the NTB device are removed first (the core calls their
 * remove), and free their buffers through our DMA ops; then the link, the
 * DMA device and the interrupts go; the mappings, the regions and the device
 * itself are released after this returns (managed).
 */
static void ivntb_remove(struct pci_dev *pdev)
{
	struct ivntb_dev *iv = pci_get_drvdata(pdev);

	ntb_unregister_device(&iv->ntb);
	ivntb_link_stop(iv);
	ivntb_deinit_dev(iv);
	ivntb_deinit_pci(iv);
}

static const struct pci_device_id ivntb_pci_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1110) },	/* ivshmem */
	{ }
};
MODULE_DEVICE_TABLE(pci, ivntb_pci_ids);

static struct pci_driver ivntb_driver = {
	.name		= IVNTB_NAME,
	.id_table	= ivntb_pci_ids,
	.probe		= ivntb_probe,
	.remove		= ivntb_remove,
};

/* The parameters are checked before any function is probed. */
static int __init ivntb_init(void)
{
	int ret = ivntb_profile_select(ports, ivntb_page_xlat());

	if (!ret)
		ret = ivntb_share_check_param();
	return ret ? ret : pci_register_driver(&ivntb_driver);
}
module_init(ivntb_init);

static void __exit ivntb_exit(void)
{
	pci_unregister_driver(&ivntb_driver);
}
module_exit(ivntb_exit);

MODULE_AUTHOR("smartio developers");
MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("NTB hardware driver over QEMU's ivshmem-doorbell");
