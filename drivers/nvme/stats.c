/* SPDX-License-Identifier: MIT */
/*
 * Live statistics (<smartio/nvme/stats.h>): one page in the client's own
 * node's memory, a counter block per queue pair, written by the client
 * alone; read by anyone on the fabric through sio_nvme_stats_read().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <smartio/smartio.h>
#include "client-priv.h"
#include "emu/arb.h"

#define STATS_MAGIC	0x31535453564e5353ull	/* "SSNVSTS1" */
#define STATS_VERSION	5u	/* 2: latency histogram; 3: faults; 4: shares; 5: flaps */
#define STATS_NAME	"nvme-stats"
#define STATS_SIZE	8192u	/* two pages: the queues outgrew one at version 4 */

struct sio_nvme_stats_page {
	uint64_t magic;		/* written last, once the header is valid */
	uint32_t version;
	int32_t pid;
	int32_t node;
	uint32_t device;
	struct sio_nvme_qstats q[SIO_NVME_STATS_QUEUES];
};

_Static_assert(sizeof(struct sio_nvme_stats_page) <= STATS_SIZE, "stats fit STATS_SIZE");

/* The client's page. Without one (no memory for it) queues count into a
 * private block: the hot path never tests for it. */
int sio_nvme_stats_open(struct sio_nvme_client *cl)
{
	struct sio_nvme_stats_page *p;
	void *va;

	if (sio_segment_create(cl->f, 0, STATS_SIZE, 0, &cl->stats_seg))
		return 0;	/* statistics are no reason to refuse a client */
	if (sio_segment_map(cl->stats_seg, &va)) {
		sio_segment_close(cl->stats_seg);
		cl->stats_seg = NULL;
		return 0;
	}
	sio_segment_set_name(cl->stats_seg, STATS_NAME);
	p = va;
	memset(p, 0, STATS_SIZE);
	p->version = STATS_VERSION;
	p->pid = (int32_t)getpid();
	p->node = sio_fabric_node_id(cl->f);
	p->device = cl->dinfo.id;
	__atomic_store_n(&p->magic, STATS_MAGIC, __ATOMIC_RELEASE);
	cl->stats = p;
	return 0;
}

void sio_nvme_stats_close(struct sio_nvme_client *cl)
{
	if (cl->stats_seg)
		sio_segment_close(cl->stats_seg);
	cl->stats_seg = NULL;
	cl->stats = NULL;
}

/* How the doorbell stores reach the controller: relayed, or through another kernel's window. */
static uint16_t bar_path_flag(struct sio_nvme_client *cl)
{
	switch (sio_device_bar_path_kind(sio_nvme_client_device(cl), 0)) {
	case SIO_BAR_PATH_RELAYED: return SIO_NVME_QS_RELAYED;
	case SIO_BAR_PATH_NTB_WINDOW: return SIO_NVME_QS_NTB_WINDOW;
	case SIO_BAR_PATH_NTB_WINDOW_EMULATED: return SIO_NVME_QS_NTB_WINDOW | SIO_NVME_QS_EMULATED;
	default: return 0;
	}
}

/* A block for queue pair @q, described as it was made. */
void sio_nvme_stats_attach(struct sio_nvme_ioq *q)
{
	struct sio_nvme_stats_page *p = q->cl->stats;
	struct sio_nvme_qstats *s = &q->qs_local;

	for (int i = 0; p && i < SIO_NVME_STATS_QUEUES; i++)
		if (!p->q[i].qid) {
			s = &p->q[i];
			break;
		}
	memset(s, 0, sizeof(*s));
	s->sq_place = (int16_t)q->qp[0].sq_place;
	s->cq_place = (int16_t)q->qp[0].cq_place;
	s->flags = (uint16_t)((q->qp[0].q.sq_ei ? SIO_NVME_QS_SHADOW_DB : 0) |
			      (q->mp ? SIO_NVME_QS_MULTIPATH : 0) | bar_path_flag(q->cl));
	/* the qid last: it marks the block taken */
	__atomic_store_n(&s->qid, q->qp[0].q.qid, __ATOMIC_RELEASE);
	q->qs = s;
}

void sio_nvme_stats_detach(struct sio_nvme_ioq *q)
{
	if (q->qs)
		__atomic_store_n(&q->qs->qid, 0, __ATOMIC_RELEASE);
	q->qs = NULL;
}

/* What only the poll path knows: doorbell writes, the path taken; and the
 * fault counters, when a fault is handled. */
void sio_nvme_stats_sync(struct sio_nvme_ioq *q)
{
	struct sio_nvme_qstats *s = q->qs;

	if (!s)
		return;
	s->db_writes = q->qp[0].q.db_writes + q->qp[1].q.db_writes;
	s->timeouts = q->timeouts;
	s->recoveries = q->recoveries;
	s->resubmitted = q->resubmitted;
	s->failovers = q->failovers;
	s->link_flaps = q->link_flaps;
	s->paused_ns = q->paused_ns;
	if (q->mp)
		s->flags = (uint16_t)((s->flags & ~SIO_NVME_QS_BACKUP) |
				      (q->act && q->act->path ? SIO_NVME_QS_BACKUP : 0));
}

void sio_nvme_ioq_publish_latency(struct sio_nvme_ioq *q, const struct sio_nvme_lat *lat)
{
	struct sio_nvme_qstats *s;

	if (!q || !lat || !(s = q->qs))
		return;
	sio_nvme_stats_sync(q);
	s->lat_p50_ns = lat->p50_ns;
	s->lat_p99_ns = lat->p99_ns;
	s->lat_p999_ns = lat->p999_ns;
	s->lat_max_ns = lat->max_ns;
	s->lat_sum_ns = lat->sum_ns;
	memcpy(s->lat_le, lat->le, sizeof(s->lat_le));
	__atomic_store_n(&s->lat_ios, lat->ios, __ATOMIC_RELEASE);
}

void sio_nvme_ioq_publish_sched(struct sio_nvme_ioq *q, const struct sio_nvme_sched *sc)
{
	struct sio_nvme_qstats *s;

	if (!q || !sc || !(s = q->qs))
		return;
	s->offcpu_ns = sc->offcpu_ns;
	s->wait_ns = sc->wait_ns;
}

/* Copy page @p out, checked: 0, or -EINVAL when it is not a whole page. */
static int copy_page(const struct sio_nvme_stats_page *p, struct sio_nvme_client_stats *out)
{
	if (__atomic_load_n(&p->magic, __ATOMIC_ACQUIRE) != STATS_MAGIC ||
	    p->version != STATS_VERSION)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->pid = p->pid;
	out->node = p->node;
	out->device = p->device;
	for (int i = 0; i < SIO_NVME_STATS_QUEUES; i++) {
		struct sio_nvme_qstats s = p->q[i];

		if (!__atomic_load_n(&p->q[i].qid, __ATOMIC_ACQUIRE))
			continue;
		/* a hostile writer's places would index tables: keep them in range */
		if (s.sq_place < 0 || s.sq_place > 8)
			s.sq_place = -1;
		if (s.cq_place < 0 || s.cq_place > 8)
			s.cq_place = -1;
		s.ctrl_fetched = s.ctrl_skipped = s.ctrl_blocked = 0;	/* the controller's */
		out->q[out->nqueues++] = s;
	}
	return 0;
}

/* One client's page, at (@node, @id): 1 copied, 0 skipped, -errno. */
static int read_one(struct sio_fabric *f, int node, uint32_t id, struct sio_nvme_client_stats *out)
{
	struct sio_segment *seg;
	void *va;
	int ret;

	if (sio_segment_connect(f, node, id, &seg))
		return 0;	/* gone since the status was taken */
	ret = sio_segment_map_range(seg, -1, 0, STATS_SIZE, SIO_MAP_RDONLY, &va);
	if (!ret)
		ret = copy_page(va, out) ? 0 : 1;
	else if (ret != -ENOSPC)
		ret = 0;
	sio_segment_close(seg);
	return ret;
}

/* The arbiter's counters of @pg (@size bytes, read-only) into the clients
 * of its device. */
static void arb_merge(const struct emu_arb_page *pg, uint64_t size,
		      struct sio_nvme_client_stats *out, int n)
{
	uint32_t nq;

	if (__atomic_load_n(&pg->magic, __ATOMIC_ACQUIRE) != EMU_ARB_PAGE_MAGIC)
		return;
	nq = pg->nq;
	if (sizeof(*pg) + (uint64_t)nq * sizeof(pg->q[0]) > size)
		return;	/* not a whole page: never read past the mapping */
	for (int i = 0; i < n; i++) {
		if (out[i].device != pg->device)
			continue;
		for (uint32_t k = 0; k < out[i].nqueues; k++) {
			struct sio_nvme_qstats *s = &out[i].q[k];

			if (s->qid >= nq)
				continue;
			s->ctrl_fetched = pg->q[s->qid].fetched;
			s->ctrl_skipped = pg->q[s->qid].skipped;
			s->ctrl_blocked = pg->q[s->qid].blocked;
		}
	}
}

/* Every emulated controller's arbitration counters into the clients found. */
static void arb_read(struct sio_fabric *f, const struct sio_fabric_status *st,
		     struct sio_nvme_client_stats *out, int n)
{
	for (int i = 0; i < st->nsegments; i++) {
		const struct sio_segment_info *s = &st->segments[i].info;
		struct sio_segment *seg;
		void *va;

		if (strcmp(s->name, EMU_ARB_PAGE_NAME) || s->size < sizeof(struct emu_arb_page))
			continue;
		if (sio_segment_connect(f, s->node, s->id, &seg))
			continue;
		if (!sio_segment_map_range(seg, -1, 0, s->size, SIO_MAP_RDONLY, &va))
			arb_merge(va, s->size, out, n);
		sio_segment_close(seg);
	}
}

int sio_nvme_stats_read(struct sio_fabric *f, uint32_t device, struct sio_nvme_client_stats *out,
			int max)
{
	struct sio_nvme_client_stats tmp;
	struct sio_fabric_status *st;
	int n = 0, ret;

	if (!f || max < 0 || (max && !out))
		return sio_err_set(EINVAL, "sio_nvme_stats_read: bad arguments");
	ret = sio_fabric_status_get(f, &st);
	if (ret)
		return ret;
	for (int i = 0; i < st->nsegments; i++) {
		const struct sio_segment_info *s = &st->segments[i].info;
		struct sio_nvme_client_stats *o = n < max ? &out[n] : &tmp;

		if (strcmp(s->name, STATS_NAME) || s->size < STATS_SIZE)
			continue;
		ret = read_one(f, s->node, s->id, o);
		if (ret < 0) {
			sio_fabric_status_close(st);
			return sio_err_wrap(-ret, "cannot read the counters of the client on node %d",
					    s->node);
		}
		if (ret && (device == SIO_DEVICE_ANY || o->device == device))
			n++;
	}
	arb_read(f, st, out, n < max ? n : max);
	sio_fabric_status_close(st);
	return n;
}
