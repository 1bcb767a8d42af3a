// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * ntb_hw_ivshmem: hardware profiles. profile= makes the stand-in expose only
 * what one upstream hardware driver (drivers/ntb/hw/) offers, with its
 * limits: its ports, windows per peer and their alignment, scratchpads or
 * message registers, doorbell bits and vectors, inbound or outbound
 * translation, and the errno it gives for a translation outside them. The
 * table, with the functions each value comes from, is in docs/ntb.md.
 *
 * What ivshmem itself cannot do stays refused as without a profile: a
 * translation is a whole number of pages within the port's own area of
 * BAR2 (-EOPNOTSUPP elsewhere). Every guest of one NTB loads the same
 * profile: the descriptor in BAR2 records it.
 */
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/sizes.h>
#include <linux/string.h>

#include "ntb_hw_ivshmem.h"

/* IDT's physical port numbers, in the order of the largest chip (32NT8). */
static const int ivntb_idt_ports[IVNTB_MAX_PORTS] = {
	0, 2, 4, 6, 8, 12, 16, 20
};

static const struct ivntb_profile ivntb_profiles[IVNTB_PROFILES] = {
	[IVNTB_PROF_IVSHMEM] = {
		.name = "ivshmem",
		.spads = -1,
		.db_valid = GENMASK_ULL(IVNTB_DB_BITS - 1, 0),
		.db_vectors = IVNTB_MAX_VECTORS,
		.vector_ops = true,
		.port_ops = true,
		.clear_trans = true,
		.topo = { NTB_TOPO_SWITCH, NTB_TOPO_SWITCH },
	},
	/* gen3 (Skylake): ntb_hw_gen3.c, ntb_hw_gen1.c's mw ops */
	[IVNTB_PROF_INTEL] = {
		.name = "intel",
		.ports = 2,
		.mws = 2,
		.spads = 16,
		.db_valid = GENMASK_ULL(30, 0),
		.db_vectors = IVNTB_MAX_VECTORS,
		.vector_ops = true,
		.addr_align = 0,	/* the window's size */
		.size_align = 1,
		.align_checked = true,
		.topo = { NTB_TOPO_B2B_USD, NTB_TOPO_B2B_DSD },
	},
	/* ntb_hw_amd.c, devices other than 0x145b (two windows) */
	[IVNTB_PROF_AMD] = {
		.name = "amd",
		.ports = 2,
		.mws = 2,
		.spads = 8,
		.db_valid = GENMASK_ULL(14, 0),
		.db_vectors = IVNTB_MAX_VECTORS,
		.vector_ops = true,
		.addr_align = SZ_4K,
		.size_align = 1,
		.db_unchecked = true,
		.topo = { NTB_TOPO_PRI, NTB_TOPO_SEC },
	},
	/* ntb_hw_switchtec.c, direct windows (use_lut_mws=0, its default) */
	[IVNTB_PROF_SWITCHTEC] = {
		.name = "switchtec",
		.ports = 2,
		.mws = 2,
		.spads = 128,
		.db_valid = GENMASK_ULL(27, 0),
		.db_vectors = 1,
		.vector_ops = true,
		.addr_align = SZ_4K,
		.size_align = SZ_4K,
		.db_unchecked = true,
		.switchtec_xlat = true,
		.topo = { NTB_TOPO_SWITCH, NTB_TOPO_SWITCH },
	},
	/* ntb_hw_idt.c, every BAR a direct window */
	[IVNTB_PROF_IDT] = {
		.name = "idt",
		.spads = 0,
		.msgs = IVNTB_MSGS,
		.db_valid = GENMASK_ULL(31, 0),
		.db_vectors = 1,
		.outbound = true,
		.port_ops = true,
		.port_map = ivntb_idt_ports,
		.addr_align = 4,
		.size_align = 1,
		.align_checked = true,
		.topo = { NTB_TOPO_SWITCH, NTB_TOPO_SWITCH },
	},
	/* ntb_hw_epf.c, j721e's map (four windows), 32 MSI-X vectors */
	[IVNTB_PROF_EPF] = {
		.name = "epf",
		.ports = 2,
		.mws = 4,
		.spads = 16,
		.db_valid = GENMASK_ULL(29, 0),
		.db_vectors = 1,
		.addr_align = SZ_4K,
		.size_align = 1,
		.clear_trans = true,
		.db_lowest_only = true,
		.db_mask_noop = true,
		.topo = { NTB_TOPO_NONE, NTB_TOPO_NONE },
	},
};

static char *profile = "ivshmem";
module_param(profile, charp, 0444);
MODULE_PARM_DESC(profile,
		 "Behave as this NTB hardware's driver: ivshmem (default), intel, amd, switchtec, idt, epf (docs/ntb.md)");

const struct ivntb_profile *ivntb_profile_get(enum ivntb_profile_id id)
{
	return id < IVNTB_PROFILES ? &ivntb_profiles[id] : NULL;
}

static enum ivntb_profile_id ivntb_profile_id;

enum ivntb_profile_id ivntb_profile_chosen(void)
{
	return ivntb_profile_id;
}

/*
 * The module's parameters, checked once at load: a profile that does not
 * exist, or settings it cannot have, fail insmod with the parameter named.
 */
int ivntb_profile_select(int ports, bool page_xlat)
{
	const struct ivntb_profile *p = NULL;
	int i;

	for (i = 0; i < IVNTB_PROFILES; i++)
		if (sysfs_streq(profile, ivntb_profiles[i].name))
			p = &ivntb_profiles[i];
	if (!p) {
		pr_err("%s: profile=%s: no such profile (ivshmem, intel, amd, switchtec, idt, epf)\n",
		       IVNTB_NAME, profile);
		return -EINVAL;
	}
	if (ports && p->ports && ports != p->ports) {
		pr_err("%s: ports=%d: profile=%s has exactly %d ports\n",
		       IVNTB_NAME, ports, p->name, p->ports);
		return -EINVAL;
	}
	if (page_xlat && (p->outbound || (p->align_checked &&
					  !p->addr_align))) {
		pr_err("%s: page_xlat=1: profile=%s translates %s\n",
		       IVNTB_NAME, p->name,
		       p->outbound ? "outbound only (peer_mw_set_trans)" :
		       "whole windows only (addr_align is the window's size)");
		return -EINVAL;
	}
	ivntb_profile_id = p - ivntb_profiles;
	return 0;
}

/* Windows per peer in a layout for @nports ports. */
int ivntb_profile_mws(const struct ivntb_profile *p, int nports)
{
	return p->mws ? p->mws : nports;
}

/* Scratchpads in a layout for @nports ports (the slot has room for all). */
int ivntb_profile_spads(const struct ivntb_profile *p, int nports)
{
	if (p->spads >= 0)
		return p->spads;
	/*
	 * ntb_perf needs 3 per port; ntb_transport fits its windows in
	 * 2 * mws + 4
	 */
	return max(3 * nports, 2 * nports + 4);
}

/* The port number the NTB API shows for ivshmem peer id @id. */
int ivntb_api_port(struct ivntb_dev *iv, int id)
{
	return iv->prof->port_map ? iv->prof->port_map[id] : id;
}

/* The ivshmem peer id of the API's port number @port, or -1. */
int ivntb_api_id(struct ivntb_dev *iv, int port)
{
	int id;

	for (id = 0; id < iv->ports; id++)
		if (ivntb_api_port(iv, id) == port)
			return id;
	return -1;
}

/*
 * The ops the profile has: what the hardware driver leaves NULL is NULL
 * here too, so the core's wrappers answer as they do for that driver
 * (ntb_mw_set_trans() returns 0 on IDT, ntb_spad_count() 0, and so on).
 */
void ivntb_profile_ops(struct ivntb_dev *iv, struct ntb_dev_ops *ops)
{
	const struct ivntb_profile *p = iv->prof;

	if (!p->port_ops) {
		ops->port_number = NULL;
		ops->peer_port_count = NULL;
		ops->peer_port_number = NULL;
		ops->peer_port_idx = NULL;
	}
	if (!p->vector_ops) {
		ops->db_vector_count = NULL;
		ops->db_vector_mask = NULL;
	}
	if (!p->spads) {
		ops->spad_is_unsafe = NULL;
		ops->spad_count = NULL;
		ops->spad_read = NULL;
		ops->spad_write = NULL;
		ops->peer_spad_read = NULL;
		ops->peer_spad_write = NULL;
	}
	if (!p->clear_trans)
		ops->mw_clear_trans = NULL;
	if (p->outbound) {
		ops->mw_set_trans = NULL;
		ops->mw_clear_trans = NULL;
		ops->peer_mw_set_trans = ivntb_peer_mw_set_trans;
		ops->peer_mw_clear_trans = ivntb_peer_mw_clear_trans;
	}
	if (p->msgs) {
		ops->msg_count = ivntb_msg_count;
		ops->msg_inbits = ivntb_msg_inbits;
		ops->msg_outbits = ivntb_msg_outbits;
		ops->msg_read_sts = ivntb_msg_read_sts;
		ops->msg_clear_sts = ivntb_msg_clear_sts;
		ops->msg_set_mask = ivntb_msg_set_mask;
		ops->msg_clear_mask = ivntb_msg_clear_mask;
		ops->msg_read = ivntb_msg_read;
		ops->peer_msg_write = ivntb_peer_msg_write;
	}
}

/* The topology the NTB core is told: by side, on two-port hardware. */
enum ntb_topo ivntb_profile_topo(struct ivntb_dev *iv)
{
	return iv->prof->topo[iv->port ? 1 : 0];
}

/* mw_get_align's address alignment. */
u64 ivntb_profile_addr_align(struct ivntb_dev *iv, bool page_xlat)
{
	if (iv->prof->addr_align)
		return iv->prof->addr_align;
	return page_xlat ? PAGE_SIZE : ivntb_region_size(iv);
}

/* mw_get_align's size alignment (ivshmem's own: a page). */
u64 ivntb_profile_size_align(struct ivntb_dev *iv)
{
	return iv->prof->size_align ? iv->prof->size_align : PAGE_SIZE;
}

/*
 * A translation of @size bytes at @addr against the hardware's own limits:
 * 0, or the errno its driver gives (an inbound translation, or IDT's
 * outbound one). Switchtec checks no size in software: its hardware refuses
 * an oversize window, and the driver returns -EIO.
 */
int ivntb_profile_xlat_check(struct ivntb_dev *iv, u64 addr, u64 size,
			     bool page_xlat)
{
	const struct ivntb_profile *p = iv->prof;
	u64 align = ivntb_profile_addr_align(iv, page_xlat);

	if (p->switchtec_xlat) {
		if (size < SZ_4K || !IS_ALIGNED(addr, 1ULL << ilog2(size)))
			return -EINVAL;
		return size > ivntb_region_size(iv) ? -EIO : 0;
	}
	if (size > ivntb_region_size(iv) ||
	    !IS_ALIGNED(size, ivntb_profile_size_align(iv)))
		return -EINVAL;
	if (p->align_checked && !IS_ALIGNED(addr, align))
		return -EINVAL;
	return 0;
}
