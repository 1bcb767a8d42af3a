/* SPDX-License-Identifier: MIT */
/*
 * The NVMe client: connection to the manager, queue placement, the I/O
 * calls on top of queue.h, and multipath failover between two queue pairs
 * reached through different adapters.
 */

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <smartio/nvme/client.h>
#include "mailbox.h"
#include "priv.h"

#define NS_CACHE	64
#define MBOX_TIMEOUT_MS	10000u

struct sio_nvme_client {
	struct sio_fabric *f;
	struct sio_device *dev;
	struct sio_device_info dinfo;
	struct sio_segment *mseg;
	struct sio_nvme_mbox *mb;
	int slot;
	int mgr_node;
	int32_t mgr_pid;
	pthread_mutex_t lock;		/* one mailbox request at a time */
	struct sio_segment *bar0;
	volatile uint8_t *regs;
	struct sio_segment *scratch;	/* admin data lands here */
	void *scratch_va;
	struct sio_nvme_ctrl_info ci;
	uint32_t timeout_ms;
	struct sio_nvme_ns ns[NS_CACHE + 1];
	struct sio_nvme_ioq *queues;	/* list, for close */
	/* multipath: a second borrow through adapter 1, made on first use */
	struct sio_device *dev2;
	struct sio_segment *bar0_2;
	volatile uint8_t *regs2;
	uint32_t link_gen;		/* bumped when a link event is read */
};

struct ioreq {
	sio_nvme_io_cb cb;
	void *arg;
	uint32_t remaining;
	int err;
	uint16_t status;
};

/* What a command was, so it can be sent again on another queue pair. */
struct cmdrec {
	uint8_t opc;
	uint8_t retries;
	uint16_t ridx;
	uint32_t nsid;
	uint32_t nlb;
	uint32_t len;			/* bytes of data */
	uint64_t slba;
	struct sio_nvme_buf *buf;
	uint64_t off;
};

/* One queue pair in the controller, reached through one path. */
struct qpair {
	struct sio_nvme_queue q;
	uint16_t *cids;
	uint64_t *cookies;
	uint8_t *busy;
	struct cmdrec *rec;		/* per cid, multipath only */
	struct sio_device *dev;		/* the borrow its memory is mapped for */
	int path;
	bool live;			/* exists in the controller */
	struct sio_segment *sq_seg, *cq_seg;	/* sq_seg NULL: in cq_seg or CMB */
	uint64_t sq_seg_bus, cq_seg_bus;
	bool sq_cmb;
	uint64_t cmb_off;
	uint8_t *sq_va, *cq_va;
	uint64_t sq_bus, cq_bus, cq_bytes;
	uint64_t *prp_va;
	uint64_t prp_bus;
	int sq_place, cq_place;
	uint64_t retry_ns;		/* timed out: not before then again */
};

struct sio_nvme_ioq {
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq *next;
	struct qpair *act;		/* where new commands go; NULL: nowhere now */
	struct qpair qp[2];		/* primary, and the backup of a multipath queue */
	bool mp;
	uint16_t prio;
	struct ioreq *reqs;
	uint16_t *req_stack;
	uint32_t nreq_free;
	uint32_t prp_stride;		/* bytes of PRP list per cid */
	uint32_t page;
	uint32_t max_xfer;
	uint32_t depth;
	int failed;
	uint32_t empty_polls;
	uint64_t stall_since;
	/* multipath */
	struct cmdrec *pend;		/* to be sent again, oldest first */
	uint32_t npend, pend_cap;
	uint32_t polls;
	uint32_t seen_gen;
	uint32_t tmo_failovers;		/* in a row, without a completion */
	uint64_t down_since;		/* no path since then */
	uint64_t next_check;
	uint32_t failovers, restores;
	uint64_t resubmitted, stale;
};

static uint32_t slot_state_off(int s)
{
	return (uint32_t)(offsetof(struct sio_nvme_mbox, slots) +
			  (size_t)s * sizeof(struct sio_nvme_mbox_slot));
}

/* One request to the manager; bounded wait, detects a vanished manager. */
static int mbox_call(struct sio_nvme_client *cl, const struct sio_nvme_mbox_req *req,
		     struct sio_nvme_mbox_resp *resp)
{
	struct sio_nvme_mbox_slot *sl = &cl->mb->slots[cl->slot];
	uint64_t deadline = sio_nvme_now_ns() + MBOX_TIMEOUT_MS * 1000000ull;
	uint32_t st;
	int ret;

	pthread_mutex_lock(&cl->lock);
	memcpy((void *)&sl->req, req, sizeof(*req));
	sl->seq++;
	__atomic_store_n(&sl->state, SIO_MBOX_REQ, __ATOMIC_RELEASE);
	__atomic_fetch_add(&cl->mb->h.doorbell, 1, __ATOMIC_ACQ_REL);
	sio_segment_notify(cl->mseg, offsetof(struct sio_nvme_mbox_hdr, doorbell));
	for (;;) {
		st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		if (st == SIO_MBOX_RESP)
			break;
		if (!__atomic_load_n(&cl->mb->h.serving, __ATOMIC_ACQUIRE)) {
			ret = sio_nvme_err(ENOTCONN, "the NVMe manager has stopped");
			goto out;
		}
		if (cl->mgr_pid > 0 && kill(cl->mgr_pid, 0) < 0 && errno == ESRCH) {
			ret = sio_nvme_err(ENOTCONN, "the NVMe manager (pid %d) has died",
					   (int)cl->mgr_pid);
			goto out;
		}
		if (sio_nvme_now_ns() > deadline) {
			ret = sio_nvme_err(ETIMEDOUT, "the NVMe manager did not answer "
					   "within %u ms", MBOX_TIMEOUT_MS);
			goto out;
		}
		sio_segment_wait(cl->mseg, slot_state_off(cl->slot), st, 100000000ull);
	}
	memcpy(resp, (const void *)&sl->resp, sizeof(*resp));
	__atomic_store_n(&sl->state, SIO_MBOX_IDLE, __ATOMIC_RELEASE);
	ret = resp->err;
	if (ret) {
		resp->msg[sizeof(resp->msg) - 1] = 0;
		sio_nvme_err(-ret, "manager: %s", resp->msg);
	}
out:
	pthread_mutex_unlock(&cl->lock);
	return ret;
}

static int find_mailbox(struct sio_nvme_client *cl)
{
	struct sio_segment *seg;
	struct sio_nvme_mbox *mb;
	void *va;
	int nodes, order[SIO_MAX_NODES + 1], n = 0, i, ret;

	nodes = sio_fabric_nodes(cl->f, NULL, 0);
	if (nodes < 0)
		return sio_nvme_err_lib(nodes, "cannot list nodes");
	/* The manager normally runs on the lender: look there first. */
	order[n++] = cl->dinfo.lender;
	for (i = 0; i < nodes && i < SIO_MAX_NODES; i++)
		if (i != cl->dinfo.lender)
			order[n++] = i;
	for (i = 0; i < n; i++) {
		ret = sio_segment_connect(cl->f, order[i], SIO_NVME_MBOX_SEGID(cl->dinfo.id),
					  &seg);
		if (ret)
			continue;
		ret = sio_segment_map(seg, &va);
		if (ret) {
			sio_segment_remove(seg);
			return sio_nvme_err_lib(ret, "cannot map the manager's mailbox on "
						"node %d", order[i]);
		}
		mb = va;
		if (__atomic_load_n(&mb->h.magic, __ATOMIC_ACQUIRE) != SIO_NVME_MBOX_MAGIC ||
		    mb->h.version != SIO_NVME_MBOX_VERSION || mb->h.device != cl->dinfo.id ||
		    !mb->h.serving) {
			sio_segment_remove(seg);
			return sio_nvme_err(EAGAIN, "the manager of device %u on node %d "
					    "is not serving yet", cl->dinfo.id, order[i]);
		}
		cl->mseg = seg;
		cl->mb = mb;
		cl->mgr_node = order[i];
		cl->mgr_pid = mb->h.mgr_pid;
		return 0;
	}
	return sio_nvme_err(ENOENT, "no NVMe manager serves device %u on fabric '%s' "
			    "(start nvme-manager)", cl->dinfo.id, sio_fabric_name(cl->f));
}

static void load_info(struct sio_nvme_client *cl)
{
	const struct sio_nvme_mbox_hdr *h = &cl->mb->h;
	struct sio_nvme_ctrl_info *ci = &cl->ci;

	ci->cap = h->cap;
	ci->vs = h->vs;
	ci->mqes = h->mqes;
	ci->dstrd = h->dstrd;
	ci->timeout_ms = h->timeout_ms;
	ci->page_size = h->page_size;
	ci->max_xfer = h->max_xfer;
	ci->io_queues = h->io_queues;
	ci->nn = h->nn;
	ci->vwc = h->vwc;
	ci->oncs = (uint16_t)h->oncs;
	ci->cmb.bar = h->cmb_bar;
	ci->cmb.offset = h->cmb_offset;
	ci->cmb.size = h->cmb_size;
	ci->cmb.bus = h->cmb_bus;
	ci->cmb.sqs = h->cmb_flags & 1;
	ci->cmb.cqs = h->cmb_flags & 2;
	ci->cmb.data = h->cmb_flags & 4;
	memcpy(ci->mn, h->mn, sizeof(ci->mn));
	memcpy(ci->sn, h->sn, sizeof(ci->sn));
	memcpy(ci->fr, h->fr, sizeof(ci->fr));
	ci->mn[40] = ci->sn[20] = ci->fr[8] = 0;
}

static int claim_slot(struct sio_nvme_client *cl)
{
	int32_t me = getpid(), zero;
	int s;

	for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++) {
		struct sio_nvme_mbox_slot *sl = &cl->mb->slots[s];

		zero = 0;
		if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != SIO_MBOX_FREE)
			continue;
		if (!__atomic_compare_exchange_n(&sl->pid, &zero, me, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		sl->node = sio_fabric_node_id(cl->f);
		__atomic_store_n(&sl->state, SIO_MBOX_IDLE, __ATOMIC_RELEASE);
		cl->slot = s;
		return 0;
	}
	return sio_nvme_err(ENOSPC, "the manager's mailbox is full (%d clients)",
			    SIO_NVME_MBOX_SLOTS);
}

int sio_nvme_client_open(struct sio_fabric *f, int64_t device, struct sio_nvme_client **out)
{
	struct sio_nvme_client *cl;
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;
	struct sio_nvme_backoff b;
	uint64_t deadline;
	void *va;
	int ret;

	if (!f || !out)
		return sio_nvme_err(EINVAL, "sio_nvme_client_open: NULL argument");
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return sio_nvme_err(ENOMEM, "out of memory");
	cl->f = f;
	cl->slot = -1;
	pthread_mutex_init(&cl->lock, NULL);
	ret = sio_nvme_find_device(f, device, &cl->dinfo);
	if (ret)
		goto fail;

	/* A manager that is starting holds the device exclusively, briefly. */
	deadline = sio_nvme_now_ns() + 3000000000ull;
	sio_nvme_backoff_init(&b, 20000000);
	for (;;) {
		ret = sio_device_borrow(f, cl->dinfo.id, SIO_BORROW_SHARED, &cl->dev);
		if (!ret) {
			ret = find_mailbox(cl);
			if (ret != -EAGAIN)
				break;
			sio_device_return(cl->dev);
			cl->dev = NULL;
		} else if (ret != -EBUSY) {
			ret = sio_nvme_err_lib(ret, "cannot borrow device %u", cl->dinfo.id);
			goto fail;
		}
		if (sio_nvme_now_ns() > deadline) {
			if (ret == -EBUSY)
				ret = sio_nvme_err(EBUSY, "device %u is borrowed exclusively "
						   "by another process (a manager starting, "
						   "or nvme-identify without a manager)",
						   cl->dinfo.id);
			goto fail;
		}
		sio_nvme_backoff_wait(&b);
	}
	if (ret)
		goto fail;
	load_info(cl);
	cl->timeout_ms = 0;
	sio_nvme_client_set_timeout(cl, 0);
	ret = claim_slot(cl);
	if (ret)
		goto fail;
	memset(&req, 0, sizeof(req));
	req.op = SIO_MBOX_OP_HELLO;
	ret = mbox_call(cl, &req, &resp);
	if (ret)
		goto fail;

	ret = sio_device_bar(cl->dev, 0, &cl->bar0);
	if (!ret)
		ret = sio_segment_map(cl->bar0, &va);
	if (ret) {
		ret = sio_nvme_err_lib(ret, "cannot map the doorbells (BAR0) of device %u",
				       cl->dinfo.id);
		goto fail;
	}
	cl->regs = va;
	ret = sio_segment_create(f, 0, 8192, 0, &cl->scratch);
	if (!ret)
		ret = sio_segment_map(cl->scratch, &cl->scratch_va);
	if (ret) {
		ret = sio_nvme_err_lib(ret, "cannot create the client's admin buffer");
		goto fail;
	}
	sio_segment_set_name(cl->scratch, "nvme-client-admin");
	*out = cl;
	return 0;
fail:
	{
		char msg[512];

		snprintf(msg, sizeof(msg), "%s", sio_nvme_errmsg());
		sio_nvme_client_close(cl);
		sio_nvme_err(-ret, "%s", msg);
	}
	return ret;
}

void sio_nvme_client_close(struct sio_nvme_client *cl)
{
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;

	if (!cl)
		return;
	while (cl->queues)
		sio_nvme_ioq_destroy(cl->queues);
	if (cl->mb && cl->slot >= 0) {
		memset(&req, 0, sizeof(req));
		req.op = SIO_MBOX_OP_BYE;
		mbox_call(cl, &req, &resp);
		/* Hand the slot back: state first, then the owner. */
		__atomic_store_n(&cl->mb->slots[cl->slot].state, SIO_MBOX_FREE,
				 __ATOMIC_RELEASE);
		__atomic_store_n(&cl->mb->slots[cl->slot].pid, 0, __ATOMIC_RELEASE);
	}
	if (cl->scratch)
		sio_segment_remove(cl->scratch);
	if (cl->bar0)
		sio_segment_unmap(cl->bar0);
	if (cl->bar0_2)
		sio_segment_remove(cl->bar0_2);
	sio_device_return(cl->dev2);
	if (cl->mseg)
		sio_segment_remove(cl->mseg);
	sio_device_return(cl->dev);
	pthread_mutex_destroy(&cl->lock);
	free(cl);
}

void sio_nvme_client_info(const struct sio_nvme_client *cl, struct sio_nvme_ctrl_info *out)
{
	*out = cl->ci;
}

struct sio_device *sio_nvme_client_device(const struct sio_nvme_client *cl)
{
	return cl->dev;
}

int sio_nvme_client_manager_node(const struct sio_nvme_client *cl)
{
	return cl->mgr_node;
}

void sio_nvme_client_set_timeout(struct sio_nvme_client *cl, uint32_t ms)
{
	if (!ms) {
		ms = cl->ci.timeout_ms;
		if (ms < 2000)
			ms = 2000;
	}
	cl->timeout_ms = ms;
}

/* Whether the links of path @a (adapter @a at both ends) are up. */
static bool path_links_up(struct sio_nvme_client *cl, int a)
{
	struct sio_node_info ni[SIO_MAX_NODES];
	int me = sio_fabric_node_id(cl->f), n;

	if (me == cl->dinfo.lender)
		return true;
	n = sio_fabric_nodes(cl->f, ni, SIO_MAX_NODES);
	if (n <= me || n <= cl->dinfo.lender || a >= ni[me].adapters)
		return false;
	return ni[me].link_up[a] && ni[cl->dinfo.lender].link_up[a];
}

/* Admin data: map the scratch buffer for the device only while in use, so a
 * client holds no window on the lender's adapter for it between calls. */
static int admin_data_call(struct sio_nvme_client *cl, struct sio_nvme_mbox_req *req,
			   void *out, uint32_t len)
{
	struct sio_nvme_mbox_resp resp;
	struct sio_device *dev = cl->dev;
	uint64_t bus;
	int ret;

	/* A multipath client takes the second path while the first is down. */
	if (cl->dev2 && !path_links_up(cl, 0) && path_links_up(cl, 1))
		dev = cl->dev2;
	ret = sio_device_map(dev, cl->scratch, &bus);
	if (ret)
		return sio_nvme_err_lib(ret, "cannot map the admin buffer for the device");
	memset(cl->scratch_va, 0, len);
	req->bus1 = bus;
	ret = mbox_call(cl, req, &resp);
	if (!ret)
		memcpy(out, cl->scratch_va, len);
	sio_device_unmap(dev, cl->scratch);
	return ret;
}

int sio_nvme_client_identify(struct sio_nvme_client *cl, uint8_t cns, uint32_t nsid,
			     void *out)
{
	struct sio_nvme_mbox_req req;

	memset(&req, 0, sizeof(req));
	req.op = SIO_MBOX_OP_IDENTIFY;
	req.cdw10 = cns;
	req.nsid = nsid;
	req.len = 4096;
	return admin_data_call(cl, &req, out, 4096);
}

int sio_nvme_client_get_log(struct sio_nvme_client *cl, uint8_t lid, uint32_t nsid,
			    void *out, uint32_t len)
{
	struct sio_nvme_mbox_req req;

	if (!len || len > 8192 || (len & 3))
		return sio_nvme_err(EINVAL, "log page length %u invalid (a multiple of 4, "
				    "at most 8192)", len);
	memset(&req, 0, sizeof(req));
	req.op = SIO_MBOX_OP_GET_LOG;
	req.cdw10 = lid;
	req.nsid = nsid;
	req.len = len;
	return admin_data_call(cl, &req, out, len);
}

int sio_nvme_client_get_features(struct sio_nvme_client *cl, uint8_t fid, uint32_t cdw11,
				 uint32_t *result)
{
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;
	int ret;

	memset(&req, 0, sizeof(req));
	req.op = SIO_MBOX_OP_GET_FEAT;
	req.cdw10 = fid;
	req.cdw11 = cdw11;
	ret = mbox_call(cl, &req, &resp);
	if (!ret && result)
		*result = resp.result;
	return ret;
}

int sio_nvme_client_ns(struct sio_nvme_client *cl, uint32_t nsid, struct sio_nvme_ns *out)
{
	struct nvme_id_ns *id;
	uint8_t ds;
	int ret;

	if (nsid >= 1 && nsid <= NS_CACHE && cl->ns[nsid].active) {
		*out = cl->ns[nsid];
		return 0;
	}
	if (nsid == 0 || nsid > cl->ci.nn)
		return sio_nvme_err(ENOENT, "namespace %u does not exist (the controller "
				    "has %u)", nsid, cl->ci.nn);
	id = malloc(4096);
	if (!id)
		return sio_nvme_err(ENOMEM, "out of memory");
	ret = sio_nvme_client_identify(cl, SIO_NVME_CNS_NS, nsid, id);
	if (ret)
		goto out;
	ds = id->lbaf[id->flbas & 0xf].ds;
	if (!id->nsze) {
		ret = sio_nvme_err(ENOENT, "namespace %u is not active", nsid);
		goto out;
	}
	if (ds < 9 || ds > 16) {
		ret = sio_nvme_err(EIO, "namespace %u reports an LBA size of 2^%u", nsid, ds);
		goto out;
	}
	out->nsid = nsid;
	out->nsze = id->nsze;
	out->lba_size = 1u << ds;
	out->active = true;
	if (nsid <= NS_CACHE)
		cl->ns[nsid] = *out;
out:
	free(id);
	return ret;
}

int sio_nvme_buf_alloc(struct sio_nvme_client *cl, uint64_t size, struct sio_nvme_buf **out)
{
	struct sio_nvme_buf *b;
	int ret;

	if (!size)
		return sio_nvme_err(EINVAL, "buffer size 0");
	b = calloc(1, sizeof(*b));
	if (!b)
		return sio_nvme_err(ENOMEM, "out of memory");
	ret = sio_segment_create(cl->f, 0, size, 0, &b->seg);
	if (ret) {
		free(b);
		return sio_nvme_err_lib(ret, "cannot create a %llu-byte data buffer",
					(unsigned long long)size);
	}
	sio_segment_set_name(b->seg, "nvme-data");
	ret = sio_segment_map(b->seg, &b->va);
	if (!ret)
		ret = sio_device_map(cl->dev, b->seg, &b->bus);
	if (!ret && cl->dev2)
		ret = sio_device_map(cl->dev2, b->seg, &b->bus2);
	if (ret) {
		ret = sio_nvme_err_lib(ret, "cannot map a data buffer for the device");
		if (cl->dev2)
			sio_device_unmap(cl->dev, b->seg);
		sio_segment_remove(b->seg);
		free(b);
		return ret;
	}
	b->size = size;
	*out = b;
	return 0;
}

void sio_nvme_buf_free(struct sio_nvme_client *cl, struct sio_nvme_buf *b)
{
	if (!b)
		return;
	sio_device_unmap(cl->dev, b->seg);
	if (b->bus2 && cl->dev2)
		sio_device_unmap(cl->dev2, b->seg);
	sio_segment_remove(b->seg);
	free(b);
}

/* ---- queue spec ---- */

static int parse_loc(const char *v, bool sq, int *out)
{
	if (!strcasecmp(v, "local"))
		*out = SIO_PLACE_LOCAL;
	else if (!strcasecmp(v, "lender") || !strcasecmp(v, "remote"))
		*out = SIO_PLACE_LENDER;
	else if (sq && (!strcasecmp(v, "device") || !strcasecmp(v, "cmb")))
		*out = SIO_PLACE_DEVICE;
	else if (!strcasecmp(v, "hint") || !strcasecmp(v, "auto"))
		*out = SIO_NVME_QLOC_HINT;
	else
		return -1;
	return 0;
}

int sio_nvme_qspec_parse(const char *s, struct sio_nvme_qspec *out)
{
	char buf[256], *tok, *save = NULL, *eq, *end;
	unsigned long v;

	out->sq_loc = SIO_NVME_QLOC_HINT;
	out->cq_loc = SIO_NVME_QLOC_HINT;
	out->depth = 0;
	out->prio = 0;
	out->multipath = false;
	if (!s || !*s)
		return 0;
	if (strlen(s) >= sizeof(buf))
		return sio_nvme_err(EINVAL, "queue spec too long");
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		eq = strchr(tok, '=');
		if (!eq && !strcmp(tok, "multipath")) {
			out->multipath = true;
			continue;
		}
		if (!eq) {
			/* a bare word is a location: "--queue lender" */
			if (parse_loc(tok, true, &out->sq_loc))
				return sio_nvme_err(EINVAL, "queue spec: '%s' is not "
						    "key=value nor a location", tok);
			continue;
		}
		*eq++ = 0;
		if (!strcmp(tok, "location") || !strcmp(tok, "sq")) {
			if (parse_loc(eq, true, &out->sq_loc))
				return sio_nvme_err(EINVAL, "queue spec: location '%s' is "
						    "not local, lender, device or hint", eq);
		} else if (!strcmp(tok, "cq")) {
			if (parse_loc(eq, false, &out->cq_loc))
				return sio_nvme_err(EINVAL, "queue spec: cq '%s' is not "
						    "local, lender or hint", eq);
		} else if (!strcmp(tok, "depth") || !strcmp(tok, "qd")) {
			v = strtoul(eq, &end, 0);
			if (*end || !*eq || v < 2 || v > 65535)
				return sio_nvme_err(EINVAL, "queue spec: depth '%s' out of "
						    "range 2..65535", eq);
			out->depth = (uint32_t)v;
		} else if (!strcmp(tok, "prio")) {
			v = strtoul(eq, &end, 0);
			if (*end || !*eq || v > 3)
				return sio_nvme_err(EINVAL, "queue spec: prio '%s' out of "
						    "range 0..3", eq);
			out->prio = (uint32_t)v;
		} else if (!strcmp(tok, "multipath")) {
			if (strcmp(eq, "0") && strcmp(eq, "1"))
				return sio_nvme_err(EINVAL, "queue spec: multipath '%s' is "
						    "not 0 or 1", eq);
			out->multipath = *eq == '1';
		} else {
			return sio_nvme_err(EINVAL, "queue spec: unknown key '%s' (location, "
					    "cq, depth, prio, multipath)", tok);
		}
	}
	return 0;
}


/* ---- queue pairs ---- */

/* A RAM segment for queue memory: by hints, here, or on the lender. */
static int queue_segment(struct sio_nvme_client *cl, struct sio_device *dev, int loc,
			 unsigned int hints, uint64_t size, struct sio_segment **seg, int *placed)
{
	enum sio_placement p;
	int ret;

	if (loc == SIO_NVME_QLOC_HINT) {
		ret = sio_segment_create_hinted(dev, size, hints, seg, &p);
		if (ret)
			return sio_nvme_err_lib(ret, "cannot place queue memory by hints");
		*placed = p;
		return 0;
	}
	if (loc == SIO_PLACE_LENDER && cl->dinfo.lender != sio_fabric_node_id(cl->f))
		ret = sio_segment_create_on(cl->f, cl->dinfo.lender, 0, size, 0, seg);
	else
		ret = sio_segment_create(cl->f, 0, size, 0, seg);
	if (ret)
		return sio_nvme_err_lib(ret, "cannot create queue memory on the %s",
					loc == SIO_PLACE_LENDER ? "lender" : "local node");
	*placed = loc;
	return 0;
}

/* Map queue memory here (through the path's own adapter when it is remote)
 * and for the device (through the path's borrow). */
static int map_both(struct qpair *p, struct sio_segment *seg, void **va, uint64_t *bus)
{
	int ret = p->path ? sio_segment_map_adapter(seg, p->path, va) : sio_segment_map(seg, va);

	if (ret)
		return sio_nvme_err_lib(ret, "cannot map queue memory");
	ret = sio_device_map(p->dev, seg, bus);
	if (ret)
		return sio_nvme_err_lib(ret, "cannot map queue memory for the device");
	return 0;
}

static uint64_t align_page(uint64_t v)
{
	return (v + 4095) & ~4095ull;
}

static void qpair_free(struct sio_nvme_client *cl, struct qpair *p)
{
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;

	if (p->sq_seg) {
		sio_device_unmap(p->dev, p->sq_seg);
		sio_segment_remove(p->sq_seg);
	}
	if (p->cq_seg) {
		sio_device_unmap(p->dev, p->cq_seg);
		sio_segment_remove(p->cq_seg);
	}
	if (p->sq_cmb) {
		memset(&req, 0, sizeof(req));
		req.op = SIO_MBOX_OP_CMB_FREE;
		req.value = p->cmb_off;
		mbox_call(cl, &req, &resp);
	}
	free(p->cids);
	free(p->cookies);
	free(p->busy);
	free(p->rec);
	memset(p, 0, sizeof(*p));
}

static void ioq_free(struct sio_nvme_ioq *q)
{
	qpair_free(q->cl, &q->qp[0]);
	qpair_free(q->cl, &q->qp[1]);
	free(q->reqs);
	free(q->req_stack);
	free(q->pend);
	free(q);
}

/* Point the host's view of @p at its queues in the controller, as new. */
static void qpair_init(struct sio_nvme_ioq *q, struct qpair *p, uint16_t qid)
{
	volatile uint8_t *regs = p->path ? q->cl->regs2 : q->cl->regs;
	uint32_t dstrd = q->cl->ci.dstrd;

	sio_nvme_queue_init(&p->q, qid, q->depth, p->sq_va, p->cq_va,
			    (volatile uint32_t *)(regs + sio_nvme_doorbell_offset(qid, 0, dstrd)),
			    (volatile uint32_t *)(regs + sio_nvme_doorbell_offset(qid, 1, dstrd)),
			    p->cids, p->cookies, p->busy);
}

/* Place and map one queue pair's memory for @p->dev, and create it. */
static int qpair_setup(struct sio_nvme_ioq *q, struct qpair *p, const struct sio_nvme_qspec *spec)
{
	struct sio_nvme_client *cl = q->cl;
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;
	uint64_t sq_bytes, cq_bytes, prp_bytes, cq_seg_bytes;
	uint32_t nslots = q->depth - 1;
	bool prp_with_sq, sq_in_cq;
	uint16_t qid;
	int ret;

	p->cids = calloc(nslots, sizeof(*p->cids));
	p->cookies = calloc(nslots, sizeof(*p->cookies));
	p->busy = calloc(nslots, 1);
	p->rec = q->mp ? calloc(nslots, sizeof(*p->rec)) : NULL;
	if (!p->cids || !p->cookies || !p->busy || (q->mp && !p->rec))
		return sio_nvme_err(ENOMEM, "out of memory");
	sq_bytes = align_page((uint64_t)q->depth * 64);
	cq_bytes = align_page((uint64_t)q->depth * 16);
	prp_bytes = align_page((uint64_t)nslots * q->prp_stride);
	p->cq_bytes = cq_bytes;
	/* PRP lists are written by the host and read by the device, like the
	 * SQ: they go with it unless it sits in the CMB. */
	prp_with_sq = spec->sq_loc != SIO_PLACE_DEVICE;
	sq_in_cq = spec->sq_loc == spec->cq_loc && spec->sq_loc != SIO_NVME_QLOC_HINT;

	cq_seg_bytes = cq_bytes + (sq_in_cq ? sq_bytes : 0) +
		       (!prp_with_sq || sq_in_cq ? prp_bytes : 0);
	ret = queue_segment(cl, p->dev, spec->cq_loc, SIO_HINT_DEVICE_WRITE | SIO_HINT_HOST_READ,
			    cq_seg_bytes, &p->cq_seg, &p->cq_place);
	if (ret)
		return ret;
	sio_segment_set_name(p->cq_seg, p->path ? "nvme-cq-backup" : "nvme-cq");
	ret = map_both(p, p->cq_seg, (void **)&p->cq_va, &p->cq_bus);
	if (ret)
		return ret;
	p->cq_seg_bus = p->cq_bus;
	memset(p->cq_va, 0, cq_bytes);
	if (sq_in_cq) {
		p->sq_va = p->cq_va + cq_bytes;
		p->sq_bus = p->cq_bus + cq_bytes;
		p->sq_place = p->cq_place;
		p->prp_va = (uint64_t *)(p->sq_va + sq_bytes);
		p->prp_bus = p->sq_bus + sq_bytes;
	} else if (spec->sq_loc == SIO_PLACE_DEVICE) {
		struct sio_segment *bar;
		void *bva;

		if (!cl->ci.cmb.sqs)
			return sio_nvme_err(ENOTSUP, "device %u's CMB does not take SQs",
					    cl->dinfo.id);
		memset(&req, 0, sizeof(req));
		req.op = SIO_MBOX_OP_CMB_ALLOC;
		req.value = sq_bytes;
		ret = mbox_call(cl, &req, &resp);
		if (ret)
			return ret;
		p->sq_cmb = true;
		p->cmb_off = resp.value;
		ret = sio_device_bar(p->dev, cl->ci.cmb.bar, &bar);
		if (!ret)
			ret = p->path ? sio_segment_map_adapter(bar, p->path, &bva)
				      : sio_segment_map(bar, &bva);
		if (ret)
			return sio_nvme_err_lib(ret, "cannot map the CMB (BAR%d)", cl->ci.cmb.bar);
		p->sq_va = (uint8_t *)bva + cl->ci.cmb.offset + p->cmb_off;
		p->sq_bus = cl->ci.cmb.bus + p->cmb_off;
		p->sq_place = SIO_PLACE_DEVICE;
		p->prp_va = (uint64_t *)(p->cq_va + cq_bytes);
		p->prp_bus = p->cq_bus + cq_bytes;
	} else {
		ret = queue_segment(cl, p->dev, spec->sq_loc,
				    SIO_HINT_DEVICE_READ | SIO_HINT_HOST_WRITE,
				    sq_bytes + prp_bytes, &p->sq_seg, &p->sq_place);
		if (ret)
			return ret;
		sio_segment_set_name(p->sq_seg, p->path ? "nvme-sq-backup" : "nvme-sq");
		ret = map_both(p, p->sq_seg, (void **)&p->sq_va, &p->sq_bus);
		if (ret)
			return ret;
		p->sq_seg_bus = p->sq_bus;
		p->prp_va = (uint64_t *)(p->sq_va + sq_bytes);
		p->prp_bus = p->sq_bus + sq_bytes;
	}
	ret = sio_nvme_ioq_create_at(cl, p->sq_bus, p->cq_bus, q->depth, q->prio, &qid);
	if (ret)
		return ret;
	qpair_init(q, p, qid);
	p->live = true;
	return 0;
}

/* The second path of a multipath client: a borrow through adapter 1 and the
 * doorbells mapped through this node's adapter 1. */
static int client_second_path(struct sio_nvme_client *cl)
{
	struct sio_topology t;
	void *va;
	int ret;

	if (cl->dev2)
		return 0;
	ret = sio_fabric_topology(cl->f, &t);
	if (ret)
		return sio_nvme_err_lib(ret, "cannot read the fabric's topology");
	if (t.adapters < 2)
		return sio_nvme_err(EINVAL, "multipath needs two adapters per node, and "
				    "fabric '%s' has %d", sio_fabric_name(cl->f), t.adapters);
	ret = sio_device_borrow(cl->f, cl->dinfo.id, SIO_BORROW_SHARED, &cl->dev2);
	if (ret)
		return sio_nvme_err_lib(ret, "cannot borrow device %u a second time",
					cl->dinfo.id);
	ret = sio_device_use_adapter(cl->dev2, 1);
	if (!ret)
		ret = sio_device_use_adapter(cl->dev, 0);
	if (!ret)
		ret = sio_device_bar(cl->dev2, 0, &cl->bar0_2);
	if (!ret)
		ret = sio_segment_map_adapter(cl->bar0_2, 1, &va);
	if (ret) {
		ret = sio_nvme_err_lib(ret, "cannot set up the second path to device %u",
				       cl->dinfo.id);
		sio_segment_remove(cl->bar0_2);
		cl->bar0_2 = NULL;
		sio_device_return(cl->dev2);
		cl->dev2 = NULL;
		return ret;
	}
	cl->regs2 = va;
	return 0;
}

int sio_nvme_ioq_create(struct sio_nvme_client *cl, const struct sio_nvme_qspec *spec,
			struct sio_nvme_ioq **out)
{
	struct sio_nvme_qspec def;
	struct sio_nvme_ioq *q;
	uint32_t depth, i, nreqs;
	int ret;

	if (!cl || !out)
		return sio_nvme_err(EINVAL, "sio_nvme_ioq_create: NULL argument");
	if (!spec) {
		sio_nvme_qspec_parse(NULL, &def);
		spec = &def;
	}
	depth = spec->depth ? spec->depth : 256;
	if (depth > cl->ci.mqes)
		depth = cl->ci.mqes;
	if (depth < 2)
		return sio_nvme_err(EINVAL, "queue depth %u below 2", depth);
	if (spec->prio > 3)
		return sio_nvme_err(EINVAL, "SQ priority %u out of range 0..3", spec->prio);
	if (spec->sq_loc == SIO_PLACE_DEVICE && !cl->ci.cmb.size)
		return sio_nvme_err(ENODEV, "location=device needs a controller memory "
				    "buffer, and device %u has none", cl->dinfo.id);
	if (spec->cq_loc == SIO_PLACE_DEVICE)
		return sio_nvme_err(EINVAL, "the CQ cannot be placed in the device");
	if (spec->multipath) {
		ret = client_second_path(cl);
		if (ret)
			return ret;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return sio_nvme_err(ENOMEM, "out of memory");
	q->cl = cl;
	q->mp = spec->multipath;
	q->prio = (uint16_t)spec->prio;
	q->depth = depth;
	q->page = cl->ci.page_size;
	q->max_xfer = cl->ci.max_xfer;
	/* A multipath queue can hold a full queue on each path at once (one
	 * draining while the other fills), or one full and one to resend. */
	nreqs = (depth - 1) * (q->mp ? 2 : 1);
	q->reqs = calloc(nreqs, sizeof(*q->reqs));
	q->req_stack = calloc(nreqs, sizeof(*q->req_stack));
	if (q->mp) {
		q->pend_cap = nreqs;
		q->pend = calloc(nreqs, sizeof(*q->pend));
	}
	if (!q->reqs || !q->req_stack || (q->mp && !q->pend)) {
		free(q->reqs);
		free(q->req_stack);
		free(q->pend);
		free(q);
		return sio_nvme_err(ENOMEM, "out of memory");
	}
	for (i = 0; i < nreqs; i++)
		q->req_stack[i] = (uint16_t)(nreqs - 1 - i);
	q->nreq_free = nreqs;
	/* Per-cid PRP list: max_xfer/page entries, a power of two dividing the
	 * page, so no list crosses a page boundary. */
	q->prp_stride = q->max_xfer / q->page * 8;
	if (q->prp_stride < 64)
		q->prp_stride = 64;

	q->qp[0].dev = cl->dev;
	q->qp[0].path = 0;
	ret = qpair_setup(q, &q->qp[0], spec);
	if (!ret && q->mp) {
		q->qp[1].dev = cl->dev2;
		q->qp[1].path = 1;
		ret = qpair_setup(q, &q->qp[1], spec);
	}
	if (ret)
		goto fail;
	q->act = &q->qp[0];
	q->seen_gen = __atomic_load_n(&cl->link_gen, __ATOMIC_ACQUIRE);
	q->next = cl->queues;
	cl->queues = q;
	*out = q;
	return 0;
fail:
	{
		char msg[512];
		int p;

		snprintf(msg, sizeof(msg), "%s", sio_nvme_errmsg());
		for (p = 0; p < 2; p++)
			if (q->qp[p].live)
				sio_nvme_ioq_delete_at(cl, q->qp[p].q.qid);
		ioq_free(q);
		sio_nvme_err(-ret, "%s", msg);
	}
	return ret;
}

int sio_nvme_ioq_create_at(struct sio_nvme_client *cl, uint64_t sq_bus, uint64_t cq_bus,
			   uint32_t depth, uint32_t prio, uint16_t *qid)
{
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;
	uint64_t page;
	int ret;

	if (!cl || !qid)
		return sio_nvme_err(EINVAL, "sio_nvme_ioq_create_at: NULL argument");
	page = cl->ci.page_size;
	if (depth < 2 || depth > cl->ci.mqes)
		return sio_nvme_err(EINVAL, "queue depth %u out of range 2..%u (CAP.MQES)",
				    depth, cl->ci.mqes);
	if (prio > 3)
		return sio_nvme_err(EINVAL, "SQ priority %u out of range 0..3", prio);
	if (!sq_bus || !cq_bus || ((sq_bus | cq_bus) & (page - 1)))
		return sio_nvme_err(EINVAL, "queue addresses 0x%llx (SQ) and 0x%llx (CQ) "
				    "must be non-zero and %llu-byte aligned",
				    (unsigned long long)sq_bus, (unsigned long long)cq_bus,
				    (unsigned long long)page);
	memset(&req, 0, sizeof(req));
	req.op = SIO_MBOX_OP_CREATE_QP;
	req.qsize = depth;
	req.bus1 = sq_bus;
	req.bus2 = cq_bus;
	req.cdw10 = prio;
	ret = mbox_call(cl, &req, &resp);
	if (ret)
		return ret;
	*qid = resp.qid;
	return 0;
}

int sio_nvme_ioq_delete_at(struct sio_nvme_client *cl, uint16_t qid)
{
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;

	if (!cl)
		return sio_nvme_err(EINVAL, "sio_nvme_ioq_delete_at: NULL client");
	if (!qid || qid > cl->ci.io_queues)
		return sio_nvme_err(EINVAL, "queue id %u out of range 1..%u", qid,
				    cl->ci.io_queues);
	memset(&req, 0, sizeof(req));
	req.op = SIO_MBOX_OP_DELETE_QP;
	req.qid = qid;
	return mbox_call(cl, &req, &resp);
}

int sio_nvme_ioq_destroy(struct sio_nvme_ioq *q)
{
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq **pp;
	int ret = 0, r, p;

	if (!q)
		return 0;
	cl = q->cl;
	for (pp = &cl->queues; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	for (p = 0; p < 2; p++) {
		if (!q->qp[p].live)
			continue;
		r = sio_nvme_ioq_delete_at(cl, q->qp[p].q.qid);
		if (r && !ret)
			ret = r;
	}
	ioq_free(q);
	return ret;
}

void sio_nvme_ioq_info(const struct sio_nvme_ioq *q, struct sio_nvme_ioq_info *out)
{
	memset(out, 0, sizeof(*out));
	out->qid = q->qp[0].q.qid;
	out->depth = q->depth;
	out->max_inflight = q->depth - 1;
	out->sq_place = q->qp[0].sq_place;
	out->cq_place = q->qp[0].cq_place;
	out->multipath = q->mp;
	out->path = q->act ? q->act->path : -1;
	out->backup_qid = q->mp && q->qp[1].live ? q->qp[1].q.qid : 0;
	out->failovers = q->failovers;
	out->restores = q->restores;
	out->resubmitted = q->resubmitted;
	out->stale = q->stale + q->qp[0].q.spurious + q->qp[1].q.spurious;
}

uint32_t sio_nvme_ioq_inflight(const struct sio_nvme_ioq *q)
{
	uint32_t n = sio_nvme_queue_inflight(&q->qp[0].q);

	if (q->mp)
		n += sio_nvme_queue_inflight(&q->qp[1].q) + q->npend;
	return n;
}

/* ---- I/O ---- */

static inline int ns_get(struct sio_nvme_ioq *q, uint32_t nsid, struct sio_nvme_ns *ns)
{
	if (nsid >= 1 && nsid <= NS_CACHE && q->cl->ns[nsid].active) {
		*ns = q->cl->ns[nsid];
		return 0;
	}
	return sio_nvme_client_ns(q->cl, nsid, ns);
}

/* Blocks in the first command of a transfer starting at @bus. */
static inline uint32_t chunk_blocks(const struct sio_nvme_ioq *q, uint64_t bus,
				    uint32_t lba_size, uint32_t left)
{
	uint32_t bytes = q->max_xfer - (uint32_t)(bus & (q->page - 1));
	uint32_t n = bytes / lba_size;

	if (n > 65536)
		n = 65536;
	if (n == 0)
		n = 1;
	return n < left ? n : left;
}

/* Put one command in @p's SQ (not rung); a multipath queue remembers it. */
static inline void put_cmd(struct sio_nvme_ioq *q, struct qpair *p, const struct cmdrec *r)
{
	struct sio_nvme_cmd cmd;
	uint64_t prp1, prp2, bus;
	uint64_t *list;
	int cid = sio_nvme_sq_next_cid(&p->q);

	if (r->opc == SIO_NVME_CMD_READ || r->opc == SIO_NVME_CMD_WRITE) {
		/* Data buffers have an address per path; their page offsets agree. */
		bus = (p->path ? r->buf->bus2 : r->buf->bus) + r->off;
		list = (uint64_t *)((uint8_t *)p->prp_va + (size_t)cid * q->prp_stride);
		sio_nvme_prp_fill(bus, r->len, q->page, list,
				  p->prp_bus + (uint64_t)cid * q->prp_stride, &prp1, &prp2);
		sio_nvme_cmd_rw(&cmd, r->opc, r->nsid, r->slba, r->nlb, prp1, prp2);
	} else if (r->opc == SIO_NVME_CMD_WRITE_ZEROES) {
		sio_nvme_cmd_rw(&cmd, r->opc, r->nsid, r->slba, r->nlb, 0, 0);
	} else {
		memset(&cmd, 0, sizeof(cmd));
		cmd.opcode = r->opc;
		cmd.nsid = r->nsid;
	}
	sio_nvme_sq_submit(&p->q, &cmd, r->ridx);
	if (q->mp)
		p->rec[cid] = *r;
}

static bool flush_pending(struct sio_nvme_ioq *q);

/* Room for @chunks commands and a request, on the path new commands take. */
static inline int room(struct sio_nvme_ioq *q, uint32_t chunks)
{
	if (q->failed)
		return q->failed;
	if (q->mp && q->npend && !flush_pending(q))
		return -EAGAIN;
	if (!q->act || chunks > sio_nvme_queue_free_slots(&q->act->q) || !q->nreq_free)
		return -EAGAIN;
	return 0;
}

static inline uint32_t req_get(struct sio_nvme_ioq *q, sio_nvme_io_cb cb, void *arg,
			       uint32_t chunks)
{
	uint32_t ridx = q->req_stack[--q->nreq_free];
	struct ioreq *r = &q->reqs[ridx];

	r->cb = cb;
	r->arg = arg;
	r->remaining = chunks;
	r->err = 0;
	r->status = 0;
	return ridx;
}

/* A buffer allocated before the client had its second path gets its
 * address on that path at first use. */
static int buf_second_path(struct sio_nvme_ioq *q, struct sio_nvme_buf *buf)
{
	int ret;

	if (!buf->seg)
		return sio_nvme_err(EINVAL, "a multipath queue needs buffers from "
				    "sio_nvme_buf_alloc()");
	ret = sio_device_map(q->cl->dev2, buf->seg, &buf->bus2);
	if (ret)
		return sio_nvme_err_lib(ret, "cannot map a data buffer for the second path");
	return 0;
}

static int submit_rw(struct sio_nvme_ioq *q, uint8_t opc, uint32_t nsid, uint64_t slba,
		     uint32_t nlb, struct sio_nvme_buf *buf, uint64_t off,
		     sio_nvme_io_cb cb, void *arg)
{
	struct sio_nvme_ns ns;
	struct cmdrec rec;
	uint64_t bus, bytes, b;
	uint32_t chunks, left, n;
	int ret;

	if (q->failed)
		return q->failed;
	ret = ns_get(q, nsid, &ns);
	if (ret)
		return ret;
	if (!nlb || slba >= ns.nsze || nlb > ns.nsze - slba)
		return sio_nvme_err(EINVAL, "blocks %llu+%u outside namespace %u (%llu "
				    "blocks)", (unsigned long long)slba, nlb, nsid,
				    (unsigned long long)ns.nsze);
	bytes = (uint64_t)nlb * ns.lba_size;
	if (!buf || (off & 3) || off > buf->size || bytes > buf->size - off)
		return sio_nvme_err(EINVAL, "%llu bytes at offset %llu do not fit the "
				    "buffer (%llu bytes, offset a multiple of 4)",
				    (unsigned long long)bytes, (unsigned long long)off,
				    buf ? (unsigned long long)buf->size : 0ull);
	if (q->mp && !buf->bus2) {
		ret = buf_second_path(q, buf);
		if (ret)
			return ret;
	}
	bus = buf->bus + off;
	/* Count the commands first so a request goes in whole or not at all. */
	n = chunk_blocks(q, bus, ns.lba_size, nlb);
	if (n == nlb) {
		chunks = 1;
	} else {
		chunks = 0;
		for (left = nlb, b = bus; left; left -= n, b += (uint64_t)n * ns.lba_size) {
			n = chunk_blocks(q, b, ns.lba_size, left);
			chunks++;
		}
		if (chunks > q->depth - 1)
			return sio_nvme_err(EINVAL, "a request of %u blocks needs %u commands "
					    "but the queue holds %u", nlb, chunks, q->depth - 1);
	}
	ret = room(q, chunks);
	if (ret)
		return ret;
	rec.opc = opc;
	rec.retries = 0;
	rec.nsid = nsid;
	rec.buf = buf;
	rec.ridx = (uint16_t)req_get(q, cb, arg, chunks);
	for (left = nlb; left; left -= n) {
		n = chunk_blocks(q, bus, ns.lba_size, left);
		rec.slba = slba;
		rec.nlb = n;
		rec.len = n * ns.lba_size;
		rec.off = off;
		put_cmd(q, q->act, &rec);
		slba += n;
		off += rec.len;
		bus += rec.len;
	}
	sio_nvme_sq_ring(&q->act->q);
	return 0;
}

int sio_nvme_ioq_read(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
		      struct sio_nvme_buf *buf, uint64_t off, sio_nvme_io_cb cb, void *arg)
{
	return submit_rw(q, SIO_NVME_CMD_READ, nsid, slba, nlb, buf, off, cb, arg);
}

int sio_nvme_ioq_write(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
		       struct sio_nvme_buf *buf, uint64_t off, sio_nvme_io_cb cb, void *arg)
{
	return submit_rw(q, SIO_NVME_CMD_WRITE, nsid, slba, nlb, buf, off, cb, arg);
}

static int submit_simple(struct sio_nvme_ioq *q, struct cmdrec *rec, sio_nvme_io_cb cb,
			 void *arg)
{
	int ret = room(q, 1);

	if (ret)
		return ret;
	rec->retries = 0;
	rec->buf = NULL;
	rec->off = 0;
	rec->len = 0;
	rec->ridx = (uint16_t)req_get(q, cb, arg, 1);
	put_cmd(q, q->act, rec);
	sio_nvme_sq_ring(&q->act->q);
	return 0;
}

int sio_nvme_ioq_write_zeroes(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba,
			      uint32_t nlb, sio_nvme_io_cb cb, void *arg)
{
	struct sio_nvme_ns ns;
	struct cmdrec rec;
	int ret;

	if (!(q->cl->ci.oncs & (1u << 3)))
		return sio_nvme_err(ENOTSUP, "the controller does not support Write Zeroes "
				    "(ONCS bit 3)");
	ret = ns_get(q, nsid, &ns);
	if (ret)
		return ret;
	if (!nlb || nlb > 65536 || slba >= ns.nsze || nlb > ns.nsze - slba)
		return sio_nvme_err(EINVAL, "Write Zeroes of %llu+%u outside namespace %u "
				    "(%llu blocks) or above 65536 blocks",
				    (unsigned long long)slba, nlb, nsid,
				    (unsigned long long)ns.nsze);
	rec.opc = SIO_NVME_CMD_WRITE_ZEROES;
	rec.nsid = nsid;
	rec.slba = slba;
	rec.nlb = nlb;
	return submit_simple(q, &rec, cb, arg);
}

int sio_nvme_ioq_flush(struct sio_nvme_ioq *q, uint32_t nsid, sio_nvme_io_cb cb, void *arg)
{
	struct cmdrec rec;

	rec.opc = SIO_NVME_CMD_FLUSH;
	rec.nsid = nsid;
	rec.slba = 0;
	rec.nlb = 0;
	return submit_simple(q, &rec, cb, arg);
}

static void finish(struct sio_nvme_ioq *q, uint32_t ridx, int err, uint16_t status)
{
	struct ioreq *r = &q->reqs[ridx];
	sio_nvme_io_cb cb;
	void *arg;

	if (err && !r->err) {
		r->err = err;
		r->status = status;
	}
	if (--r->remaining)
		return;
	cb = r->cb;
	arg = r->arg;
	err = r->err;
	status = r->status;
	q->req_stack[q->nreq_free++] = (uint16_t)ridx;
	if (cb)
		cb(arg, err, status);
}

/* No progress for too long: end everything in flight and fail the queue. */
static int fail_queue(struct sio_nvme_ioq *q)
{
	uint32_t csts = __atomic_load_n((volatile uint32_t *)(q->cl->regs + SIO_NVME_REG_CSTS),
					__ATOMIC_ACQUIRE);
	uint32_t cid, i;
	int err, p;

	if (csts == 0xffffffffu)
		err = sio_nvme_err(ENODEV, "queue %u: controller registers read all ones "
				   "(device gone or link down)", q->qp[0].q.qid);
	else if (csts & SIO_NVME_CSTS_CFS)
		err = sio_nvme_err(EIO, "queue %u: controller fatal status", q->qp[0].q.qid);
	else if (q->mp && !q->act)
		err = sio_nvme_err(ETIMEDOUT, "queue %u: no path to the controller for "
				   "%u ms (both links down)", q->qp[0].q.qid, q->cl->timeout_ms);
	else
		err = sio_nvme_err(ETIMEDOUT, "queue %u: %u command(s) got no completion "
				   "within %u ms%s", q->qp[0].q.qid, sio_nvme_ioq_inflight(q),
				   q->cl->timeout_ms, q->mp ? " on either path" : "");
	q->failed = err;
	for (p = 0; p < 2; p++) {
		struct qpair *qp = &q->qp[p];

		if (!qp->busy)
			continue;
		for (cid = 0; cid < qp->q.nslots; cid++) {
			if (qp->busy[cid] != SIO_NVME_CID_BUSY)
				continue;
			/* The cid stays busy: the controller may still complete it. */
			qp->busy[cid] = 2;
			finish(q, (uint32_t)qp->cookies[cid], err, 0);
		}
	}
	for (i = 0; i < q->npend; i++)
		finish(q, q->pend[i].ridx, err, 0);
	q->npend = 0;
	return err;
}

/* Take @p's completions (at most @max, 0: all). A multipath queue sends a
 * command that met a data transfer error again, since a link failing under
 * it looks just so. */
static int reap(struct sio_nvme_ioq *q, struct qpair *p, uint32_t max, bool ring)
{
	struct sio_nvme_cpl cpl;
	uint64_t cookie;
	uint16_t st;
	int n = 0, cid;

	while ((!max || (uint32_t)n < max) && sio_nvme_cq_peek(&p->q)) {
		cid = sio_nvme_cq_pop(&p->q, &cpl, &cookie);
		if (cid < 0)
			continue;
		st = SIO_NVME_STATUS_CODE(cpl.status);
		n++;
		if (q->mp && st == SIO_NVME_SC_DATA_XFER_ERROR && p->rec[cid].retries < 4 &&
		    q->npend < q->pend_cap) {
			q->pend[q->npend] = p->rec[cid];
			q->pend[q->npend++].retries++;
			q->resubmitted++;
			continue;
		}
		finish(q, (uint32_t)cookie, st ? -EIO : 0, st);
	}
	if (ring)
		sio_nvme_cq_ring(&p->q);
	return n;
}

/* ---- multipath ---- */

/* Send waiting commands on the active path, oldest first, as room allows.
 * Return: whether none is left waiting. */
static bool flush_pending(struct sio_nvme_ioq *q)
{
	uint32_t i, n;

	if (!q->act || !q->npend)
		return !q->npend;
	n = sio_nvme_queue_free_slots(&q->act->q);
	if (n > q->npend)
		n = q->npend;
	for (i = 0; i < n; i++)
		put_cmd(q, q->act, &q->pend[i]);
	if (n) {
		sio_nvme_sq_ring(&q->act->q);
		memmove(q->pend, q->pend + n, (q->npend - n) * sizeof(*q->pend));
		q->npend -= n;
	}
	return !q->npend;
}

/*
 * A path failed. Take what its CQ holds, then have the manager delete the
 * queue pair: the controller finishes what it started and fetches nothing
 * more, so no command of it can run after (or beside) its resubmission.
 * What is still in flight then waits to be sent on the other path.
 */
static void path_down(struct sio_nvme_ioq *q, struct qpair *p, bool timed_out)
{
	uint32_t cid;

	if (!p->live)
		return;
	reap(q, p, 0, true);
	/* On failure (the manager gone) there is no one left to ask. */
	(void)sio_nvme_ioq_delete_at(q->cl, p->q.qid);
	p->live = false;
	/* Completions posted while it drained, through a link that works. */
	reap(q, p, 0, false);
	for (cid = 0; cid < p->q.nslots; cid++) {
		if (p->busy[cid] != SIO_NVME_CID_BUSY)
			continue;
		p->busy[cid] = SIO_NVME_CID_FREE;
		if (q->npend < q->pend_cap) {
			q->pend[q->npend++] = p->rec[cid];
			q->resubmitted++;
		}
	}
	q->stale += p->q.spurious;
	p->q.spurious = 0;
	p->q.nfree = p->q.nslots;
	p->retry_ns = timed_out ? sio_nvme_now_ns() + (uint64_t)q->cl->timeout_ms * 1000000ull : 0;
	if (q->act == p) {
		q->act = q->qp[!p->path].live ? &q->qp[!p->path] : NULL;
		if (p->path == 0)
			q->failovers++;
	}
	if (!q->act && !q->down_since)
		q->down_since = sio_nvme_now_ns();
}

/* Remap a segment of @p for its device; when the mapping changed, move the
 * addresses that lie in it. Return: 0 or -errno. */
static int remap(struct qpair *p, struct sio_segment *seg, uint64_t *base)
{
	struct sio_segment_info si;
	uint64_t bus, old = *base;
	int ret;

	if (!seg)
		return 0;
	ret = sio_device_map(p->dev, seg, &bus);
	if (ret || bus == old)
		return ret;
	if (sio_segment_info(seg, &si))
		si.size = 0;
	if (p->sq_bus >= old && p->sq_bus < old + si.size)
		p->sq_bus = p->sq_bus - old + bus;
	if (p->cq_bus >= old && p->cq_bus < old + si.size)
		p->cq_bus = p->cq_bus - old + bus;
	if (p->prp_bus >= old && p->prp_bus < old + si.size)
		p->prp_bus = p->prp_bus - old + bus;
	*base = bus;
	return 0;
}

/* A path came back: create its queue pair again over the same memory. */
static int path_up(struct sio_nvme_ioq *q, struct qpair *p)
{
	uint16_t qid;
	int ret;

	if (p->live || (p->retry_ns && sio_nvme_now_ns() < p->retry_ns))
		return 0;
	ret = remap(p, p->cq_seg, &p->cq_seg_bus);
	if (!ret)
		ret = remap(p, p->sq_seg, &p->sq_seg_bus);
	if (ret)
		return ret;
	memset(p->cq_va, 0, p->cq_bytes);
	ret = sio_nvme_ioq_create_at(q->cl, p->sq_bus, p->cq_bus, q->depth, q->prio, &qid);
	if (ret)
		return ret;
	qpair_init(q, p, qid);
	p->live = true;
	p->retry_ns = 0;
	/* The primary takes new commands again; the backup drains. */
	if (!q->act || p->path == 0) {
		if (p->path == 0 && q->act)
			q->restores++;
		q->act = p;
	}
	q->down_since = 0;
	return 0;
}

/* Bring each path's queue pair in line with the state of its links. */
static void mp_evaluate(struct sio_nvme_ioq *q)
{
	bool up[2];
	int p;

	q->seen_gen = __atomic_load_n(&q->cl->link_gen, __ATOMIC_ACQUIRE);
	for (p = 0; p < 2; p++)
		up[p] = path_links_up(q->cl, p);
	for (p = 0; p < 2; p++)
		if (!up[p])
			path_down(q, &q->qp[p], false);
	for (p = 0; p < 2; p++)
		if (up[p])
			path_up(q, &q->qp[p]);
	flush_pending(q);
}

/* Link events for this client's paths, read from its fabric handle; any
 * queue pair of the client acts on them at its next poll. */
static void mp_events(struct sio_nvme_ioq *q)
{
	struct sio_nvme_client *cl = q->cl;
	struct sio_event ev[16];
	int n, i, me = sio_fabric_node_id(cl->f);

	while ((n = sio_event_read(cl->f, ev, 16)) > 0) {
		for (i = 0; i < n; i++)
			if ((ev[i].type == SIO_EV_LINK_DOWN || ev[i].type == SIO_EV_LINK_UP) &&
			    (ev[i].node == me || ev[i].node == cl->dinfo.lender))
				__atomic_fetch_add(&cl->link_gen, 1, __ATOMIC_ACQ_REL);
		if (n < 16)
			break;
	}
}

/* Poll of a multipath queue: events every few polls (a syscall that finds
 * nothing costs little), both queue pairs, waiting commands, and on a stall
 * a failover before the queue is failed. */
static int mp_poll(struct sio_nvme_ioq *q, uint32_t max)
{
	uint64_t now;
	int n = 0, p;

	if (!(++q->polls & 31) || !q->act || q->npend) {
		mp_events(q);
		/* A path that is not live is looked at again now and then, in
		 * case its link-up event was lost (a full event socket drops). */
		if ((!q->qp[0].live || !q->qp[1].live) && !(q->polls & 1023)) {
			now = sio_nvme_now_ns();
			if (now >= q->next_check) {
				q->next_check = now + 100000000ull;
				mp_evaluate(q);
			}
		}
	}
	if (__atomic_load_n(&q->cl->link_gen, __ATOMIC_ACQUIRE) != q->seen_gen)
		mp_evaluate(q);
	for (p = 0; p < 2; p++)
		if (q->qp[p].live)
			n += reap(q, &q->qp[p], max ? max - (uint32_t)n : 0, true);
	if (q->npend)
		flush_pending(q);
	if (n) {
		q->empty_polls = 0;
		q->stall_since = 0;
		q->tmo_failovers = 0;
		return n;
	}
	if (!sio_nvme_ioq_inflight(q) || (++q->empty_polls & 255))
		return 0;
	now = sio_nvme_now_ns();
	if (!q->act) {
		if (now - q->down_since > (uint64_t)q->cl->timeout_ms * 1000000ull)
			return fail_queue(q);
		return 0;
	}
	if (!q->stall_since) {
		q->stall_since = now;
	} else if (now - q->stall_since > (uint64_t)q->cl->timeout_ms * 1000000ull) {
		/* Stuck with no event: try the other path, once per path. */
		q->stall_since = 0;
		if (++q->tmo_failovers > 2 || !q->qp[!q->act->path].live)
			return fail_queue(q);
		path_down(q, q->act, true);
		flush_pending(q);
	}
	return 0;
}

int sio_nvme_ioq_poll(struct sio_nvme_ioq *q, uint32_t max)
{
	uint64_t now;
	int n;

	if (q->failed)
		return q->failed;
	if (q->mp)
		return mp_poll(q, max);
	n = reap(q, &q->qp[0], max, true);
	if (n) {
		q->empty_polls = 0;
		q->stall_since = 0;
		return n;
	}
	if (!sio_nvme_queue_inflight(&q->qp[0].q) || (++q->empty_polls & 255))
		return 0;
	/* Only a queue that looks stuck reads the clock. */
	now = sio_nvme_now_ns();
	if (!q->stall_since)
		q->stall_since = now;
	else if (now - q->stall_since > (uint64_t)q->cl->timeout_ms * 1000000ull)
		return fail_queue(q);
	return 0;
}

int sio_nvme_ioq_wait(struct sio_nvme_ioq *q)
{
	struct sio_nvme_backoff b;
	int ret;

	sio_nvme_backoff_init_io(&b);
	while (sio_nvme_ioq_inflight(q)) {
		ret = sio_nvme_ioq_poll(q, 0);
		if (ret < 0)
			return ret;
		if (ret > 0)
			sio_nvme_backoff_init_io(&b);
		else
			sio_nvme_backoff_wait(&b);
	}
	return q->failed;
}

struct sync_done {
	int done;
	int err;
	uint16_t status;
};

static void sync_cb(void *arg, int err, uint16_t status)
{
	struct sync_done *d = arg;

	d->done = 1;
	d->err = err;
	d->status = status;
}

static int sync_wait(struct sio_nvme_ioq *q, struct sync_done *d, const char *what)
{
	struct sio_nvme_backoff b;
	int ret;

	sio_nvme_backoff_init_io(&b);
	while (!d->done) {
		ret = sio_nvme_ioq_poll(q, 0);
		if (ret < 0 && !d->done)
			return ret;
		if (ret == 0)
			sio_nvme_backoff_wait(&b);
	}
	if (d->err == -EIO)
		return sio_nvme_err(EIO, "%s failed: %s (status 0x%03x)", what,
				    sio_nvme_status_str(d->status), d->status);
	return d->err;
}

/* Submit with retries while the queue is full (others' async I/O). */
#define SYNC_SUBMIT(q, call, what) do {						\
	struct sync_done d = { 0, 0, 0 };					\
	struct sio_nvme_backoff b;						\
	int r_;									\
	sio_nvme_backoff_init_io(&b);						\
	while ((r_ = (call)) == -EAGAIN) {					\
		r_ = sio_nvme_ioq_poll((q), 0);					\
		if (r_ < 0)							\
			return r_;						\
		sio_nvme_backoff_wait(&b);					\
	}									\
	if (r_)									\
		return r_;							\
	return sync_wait((q), &d, (what));					\
} while (0)

static int sync_rw1(struct sio_nvme_ioq *q, uint8_t opc, uint32_t nsid, uint64_t slba,
		    uint32_t nlb, struct sio_nvme_buf *buf, uint64_t off)
{
	SYNC_SUBMIT(q, submit_rw(q, opc, nsid, slba, nlb, buf, off, sync_cb, &d),
		    opc == SIO_NVME_CMD_READ ? "read" : "write");
}

/* Synchronous transfers of any size: pieces that fit half the queue. */
static int sync_rw(struct sio_nvme_ioq *q, uint8_t opc, uint32_t nsid, uint64_t slba,
		   uint32_t nlb, struct sio_nvme_buf *buf, uint64_t off)
{
	struct sio_nvme_ns ns;
	uint64_t piece;
	uint32_t n;
	int ret = ns_get(q, nsid, &ns);

	if (ret)
		return ret;
	piece = (uint64_t)(q->max_xfer / ns.lba_size) * (q->depth - 1 > 2 ? (q->depth - 1) / 2 : 1);
	if (piece > 65536ull * 64)
		piece = 65536ull * 64;
	do {
		n = nlb > piece ? (uint32_t)piece : nlb;
		ret = sync_rw1(q, opc, nsid, slba, n, buf, off);
		slba += n;
		off += (uint64_t)n * ns.lba_size;
		nlb -= n;
	} while (!ret && nlb);
	return ret;
}

int sio_nvme_read(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
		  struct sio_nvme_buf *buf, uint64_t off)
{
	return sync_rw(q, SIO_NVME_CMD_READ, nsid, slba, nlb, buf, off);
}

int sio_nvme_write(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
		   struct sio_nvme_buf *buf, uint64_t off)
{
	return sync_rw(q, SIO_NVME_CMD_WRITE, nsid, slba, nlb, buf, off);
}

int sio_nvme_write_zeroes(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb)
{
	SYNC_SUBMIT(q, sio_nvme_ioq_write_zeroes(q, nsid, slba, nlb, sync_cb, &d),
		    "write zeroes");
}

int sio_nvme_flush(struct sio_nvme_ioq *q, uint32_t nsid)
{
	SYNC_SUBMIT(q, sio_nvme_ioq_flush(q, nsid, sync_cb, &d), "flush");
}
