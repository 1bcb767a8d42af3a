/* SPDX-License-Identifier: MIT */
/*
 * fio external ioengine "smartio": fio jobs read and write a namespace
 * through an NVMe client queue pair of smartio's driver, on any fabric a
 * controller is lent on (simulated, vfio, a cluster).
 *
 *   ioengine=external:/path/to/fio-smartio.so
 *   sio_fabric=NAME sio_node=N sio_device=ID sio_nsid=1 sio_queue=SPEC
 *   sio_completions=hybrid|poll|irq|adaptive
 *
 * Each job (each of numjobs) is its own client with its own queue pair,
 * created in the job's process or thread and deleted when it ends; fio's
 * I/O buffers are one buffer mapped for the device (iomem_alloc), so data
 * moves by DMA with no copy. Commands are written into the SQ as they are
 * queued and the doorbell is written once per batch fio commits
 * (iodepth_batch_submit); getevents() reaps completions by polling, asleep
 * on the CQ's interrupt, or after a timed sleep (sio_completions, the queue
 * pair's completion mode: struct sio_nvme_qspec.completions). Built
 * against the fio source of the installed fio version (its config-host.h
 * and headers; see bench/fio/meson.build).
 */
#include "fio.h"
#include "optgroup.h"

#include <sched.h>
#include <sys/prctl.h>
#include <smartio/nvme.h>
#include "clock.h"
#include "parse.h"

struct sio_fio_opts {
	void *pad;		/* fio: an option's offset must not be 0 */
	char *fabric;
	char *node;
	char *device;
	unsigned int nsid;
	char *queue;
	char *completions;
};

struct sio_fio {
	struct sio_fabric *f;
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq *q;
	struct sio_nvme_buf *buf;
	struct sio_nvme_ns ns;
	struct io_u **events;	/* completed, not yet handed to fio */
	unsigned int nevents, nret, max_events;
	int cpl;		/* SIO_NVME_CPL_* in force */
	unsigned int lba_shift;	/* log2 of the namespace's block size */
};

static struct fio_option options[] = {
	{
		.name = "sio_fabric", .lname = "smartio fabric",
		.type = FIO_OPT_STR_STORE, .off1 = offsetof(struct sio_fio_opts, fabric),
		.help = "Fabric to join (default $SMARTIO_FABRIC)",
		.category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,
	},
	{
		.name = "sio_node", .lname = "smartio node",
		.type = FIO_OPT_STR_STORE, .off1 = offsetof(struct sio_fio_opts, node),
		.help = "Node to join as (default $SMARTIO_NODE, else 0)",
		.category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,
	},
	{
		.name = "sio_device", .lname = "smartio device",
		.type = FIO_OPT_STR_STORE, .off1 = offsetof(struct sio_fio_opts, device),
		.help = "NVMe controller's device id (default: the first)",
		.category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,
	},
	{
		.name = "sio_nsid", .lname = "smartio namespace",
		.type = FIO_OPT_INT, .off1 = offsetof(struct sio_fio_opts, nsid),
		.def = "1", .minval = 1,
		.help = "Namespace id",
		.category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,
	},
	{
		.name = "sio_queue", .lname = "smartio queue spec",
		.type = FIO_OPT_STR_STORE, .off1 = offsetof(struct sio_fio_opts, queue),
		.help = "Queue pair spec: location=local|lender|device|hint,cq=...,depth=N,prio=0..3",
		.category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,
	},
	{
		.name = "sio_completions", .lname = "smartio completions",
		.type = FIO_OPT_STR_STORE, .off1 = offsetof(struct sio_fio_opts, completions),
		.help = "hybrid (default: with two or more in flight, sleep for about the "
			"time half of them take, then poll), poll (spin), irq (sleep on the CQ's "
			"interrupt) or adaptive (spin while completions come, sleep when they stop)",
		.category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,
	},
	{ .name = NULL },
};

/* Fail the job with smartio's message: fio prints it and the job errors. */
static int fail(struct thread_data *td, int rc, const char *what)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "smartio: %s: %s", what, sio_errmsg());
	log_err("fio: %s\n", msg);
	td_vmsg(td, rc < 0 ? -rc : EIO, msg, what);
	return 1;
}

/* Join the fabric and connect to the controller's manager. */
static int sio_fio_connect(struct thread_data *td, struct sio_fio *s)
{
	struct sio_fio_opts *o = td->eo;
	uint64_t node = 0, dev = SIO_DEVICE_ANY;
	int rc;

	if (o->node && o->node[0] && (rc = sio_parse_u64(o->node, 0, SIO_MAX_NODES - 1, &node)))
		return fail(td, rc, "sio_node");
	if (o->device && o->device[0] && strcmp(o->device, "any") &&
	    (rc = sio_parse_u64(o->device, 0, UINT32_MAX - 1, &dev)))
		return fail(td, rc, "sio_device");
	if ((rc = sio_fabric_open(o->fabric && o->fabric[0] ? o->fabric : NULL,
				  o->node && o->node[0] ? (int)node : -1, &s->f)))
		return fail(td, rc, "join the fabric");
	if ((rc = sio_nvme_client_open(s->f, (uint32_t)dev, &s->cl)))
		return fail(td, rc, "connect to the controller's manager");
	if ((rc = sio_nvme_client_ns(s->cl, o->nsid, &s->ns)))
		return fail(td, rc, "namespace");
	return 0;
}

static void sio_fio_disconnect(struct sio_fio *s)
{
	sio_nvme_buf_close(s->cl, s->buf);
	sio_nvme_ioq_close(s->q);
	sio_nvme_client_close(s->cl);
	sio_fabric_close(s->f);
	s->buf = NULL, s->q = NULL, s->cl = NULL, s->f = NULL;
}

/*
 * Runs in fio's parent process as it sizes the jobs (and again in the job):
 * the namespace is the job's one "file". A short-lived client asks its
 * size where the job has none yet.
 */
static int sio_fio_setup(struct thread_data *td)
{
	struct sio_fio *s = td->io_ops_data, tmp = { 0 };
	struct fio_file *f;
	int rc = 0;

	if (!td->files_index) {
		add_file(td, "smartio", 0, 0);
		td->o.nr_files = td->o.nr_files ? : 1;
		td->o.open_files++;
	}
	f = td->files[0];
	if (!s || !s->cl) {
		s = &tmp;
		rc = sio_fio_connect(td, s);
	}
	if (!rc)
		f->real_file_size = s->ns.nsze * s->ns.lba_size;
	if (s == &tmp)
		sio_fio_disconnect(s);
	return rc;
}

/*
 * Adaptive spins while completions keep coming. With more jobs than the
 * CPUs they may run on, a job that spins holds a CPU a sibling needs to
 * refill its SQ, and the controller, serving what it finds, serves the
 * spinners (docs/benchmarks.md, fio with more jobs than CPUs). NAPI stops
 * busy polling when another task needs the CPU; here another job always
 * does, so the queue sleeps on its interrupt without a spin (irq), or, where
 * there is none, polls as adaptive would. 0, or what creating it returned.
 */
static int create_crowded(struct thread_data *td, struct sio_fio *s, struct sio_nvme_qspec *qs)
{
	cpu_set_t set;
	int ncpu = 0;

	if (!sched_getaffinity(0, sizeof(set), &set))	/* cpus_allowed, once applied */
		ncpu = CPU_COUNT(&set);
	/* the jobs of this run: numjobs' clones have numjobs 1 each */
	if (qs->completions != SIO_NVME_CPL_ADAPTIVE || ncpu <= 0 ||
	    thread_number <= (unsigned int)ncpu)
		return sio_nvme_ioq_create(s->cl, qs, &s->q);
	qs->completions = SIO_NVME_CPL_IRQ;
	if (!sio_nvme_ioq_create(s->cl, qs, &s->q)) {
		if (!td->subjob_number)
			log_info("fio: smartio: sio_completions=adaptive, %u jobs on %d CPUs: "
				 "the jobs sleep on interrupts without spinning (a spin holds "
				 "a CPU another job needs)\n", thread_number, ncpu);
		return 0;
	}
	qs->completions = SIO_NVME_CPL_ADAPTIVE;
	return sio_nvme_ioq_create(s->cl, qs, &s->q);
}

/* In the job: its own client and queue pair. */
static int sio_fio_init(struct thread_data *td)
{
	struct sio_fio_opts *o = td->eo;
	struct sio_nvme_qspec qs;
	struct sio_fio *s;
	int rc;

	if ((rc = sio_nvme_qspec_parse(o->queue, &qs))) {
		log_err("fio: smartio: sio_queue: %s\n", sio_errmsg());
		td_vmsg(td, EINVAL, "bad sio_queue", "sio_queue");
		return 1;
	}
	/* room for every command fio keeps in flight (one entry stays empty) */
	if (qs.depth && qs.depth < td->o.iodepth + 1) {
		log_err("fio: smartio: sio_queue depth=%u is below iodepth+1 (%u)\n", qs.depth,
			td->o.iodepth + 1);
		td_vmsg(td, EINVAL, "queue shallower than iodepth", "sio_queue");
		return 1;
	}
	if (!qs.depth)
		qs.depth = td->o.iodepth + 1 < 32 ? 32 : td->o.iodepth + 1;
	/* hybrid by default: at QD1 it polls, deeper it sleeps once a batch
	 * where polling would spin for all of the device's time */
	qs.completions = SIO_NVME_CPL_HYBRID;
	if (o->completions && o->completions[0]) {
		for (qs.completions = 0; qs.completions <= SIO_NVME_CPL_HYBRID; qs.completions++)
			if (!strcmp(o->completions, sio_nvme_completions_name(qs.completions)))
				break;
		if (qs.completions > SIO_NVME_CPL_HYBRID) {
			log_err("fio: smartio: sio_completions=%s: poll, irq, adaptive or hybrid\n",
				o->completions);
			td_vmsg(td, EINVAL, "bad sio_completions", "sio_completions");
			return 1;
		}
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return 1;
	s->max_events = td->o.iodepth;
	/* hybrid's sleeps of a few microseconds need the timer's slack (50 us
	 * by default) cut */
	if (qs.completions == SIO_NVME_CPL_HYBRID)
		prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	s->events = calloc(s->max_events, sizeof(*s->events));
	td->io_ops_data = s;
	if (!s->events) {
		td_verror(td, ENOMEM, "smartio init");
		return 1;
	}
	if (sio_fio_connect(td, s))
		return 1;
	/* NVMe block sizes are powers of two (LBADS): shifts, not divisions */
	s->lba_shift = (unsigned int)__builtin_ctz(s->ns.lba_size);
	if ((rc = create_crowded(td, s, &qs)))
		return fail(td, rc, "create the queue pair");
	{
		struct sio_nvme_ioq_info qi;

		sio_nvme_ioq_info(s->q, &qi);
		s->cpl = qi.completions;
		if (qi.completions_note[0])	/* adaptive without interrupts: said */
			log_info("fio: smartio: %s\n", qi.completions_note);
	}
	/* one doorbell write per batch fio commits (a multipath queue rings
	 * at every submission) */
	if (!qs.multipath && (rc = sio_nvme_ioq_hold(s->q, true)))
		return fail(td, rc, "batch doorbells");
	return 0;
}

static void sio_fio_cleanup(struct thread_data *td)
{
	struct sio_fio *s = td->io_ops_data;

	if (!s)
		return;
	sio_fio_disconnect(s);
	free(s->events);
	free(s);
	td->io_ops_data = NULL;
}

/* fio's I/O buffers: one buffer the controller can reach. */
static int sio_fio_iomem_alloc(struct thread_data *td, size_t size)
{
	struct sio_fio *s = td->io_ops_data;
	int rc;

	if (!s || !s->cl)
		return 1;
	if ((rc = sio_nvme_buf_alloc(s->cl, size, &s->buf)))
		return fail(td, rc, "allocate I/O buffers");
	td->orig_buffer = s->buf->va;
	return 0;
}

static void sio_fio_iomem_free(struct thread_data *td)
{
	struct sio_fio *s = td->io_ops_data;

	if (s && s->buf) {
		sio_nvme_buf_close(s->cl, s->buf);
		s->buf = NULL;
	}
}

static int sio_fio_open_file(struct thread_data *td, struct fio_file *f)
{
	(void)td, (void)f;
	return 0;
}

static int sio_fio_close_file(struct thread_data *td, struct fio_file *f)
{
	(void)td, (void)f;
	return 0;
}

static int sio_fio_invalidate(struct thread_data *td, struct fio_file *f)
{
	(void)td, (void)f;
	return 0;	/* no cache between fio and the device */
}

static void sio_fio_done(void *arg, int err, uint16_t status)
{
	struct io_u *io_u = arg;
	struct thread_data *td = io_u->engine_data;
	struct sio_fio *s = td->io_ops_data;

	io_u->error = err < 0 ? -err : 0;
	io_u->resid = err ? io_u->xfer_buflen : 0;
	/* status kept for errdetails(): the NVMe status of a failed command */
	io_u->mmap_data = (void *)(uintptr_t)status;
	/* never full: at most iodepth commands are in flight or held here */
	if (s->nevents < s->max_events)
		s->events[s->nevents++] = io_u;
}

static enum fio_q_status sio_fio_queue(struct thread_data *td, struct io_u *io_u)
{
	struct sio_fio *s = td->io_ops_data;
	struct sio_fio_opts *o = td->eo;
	uint64_t lmask = s->ns.lba_size - 1, off;
	unsigned int sh = s->lba_shift;
	int rc;

	fio_ro_check(td, io_u);
	io_u->engine_data = td;
	io_u->mmap_data = NULL;
	if (io_u->ddir == DDIR_READ || io_u->ddir == DDIR_WRITE) {
		off = s->buf ? (uint64_t)((char *)io_u->xfer_buf - (char *)s->buf->va) : 0;
		if (!s->buf || off >= s->buf->size) {
			io_u->error = EFAULT;	/* not one of the buffers this engine made */
			return FIO_Q_COMPLETED;
		}
		if ((io_u->offset | io_u->xfer_buflen) & lmask || !io_u->xfer_buflen) {
			log_err("fio: smartio: offset %llu length %llu are not whole %u B blocks\n",
				(unsigned long long)io_u->offset,
				(unsigned long long)io_u->xfer_buflen, s->ns.lba_size);
			io_u->error = EINVAL;
			return FIO_Q_COMPLETED;
		}
		rc = (io_u->ddir == DDIR_READ ? sio_nvme_ioq_read : sio_nvme_ioq_write)(
			s->q, o->nsid, io_u->offset >> sh, (uint32_t)(io_u->xfer_buflen >> sh),
			s->buf, off, sio_fio_done, io_u);
	} else if (ddir_sync(io_u->ddir)) {
		rc = sio_nvme_ioq_flush(s->q, o->nsid, sio_fio_done, io_u);
	} else if (io_u->ddir == DDIR_TRIM) {
		if ((io_u->offset | io_u->xfer_buflen) & lmask || !io_u->xfer_buflen) {
			io_u->error = EINVAL;
			return FIO_Q_COMPLETED;
		}
		/* Dataset Management, Deallocate; -ENOTSUP without ONCS DSM */
		rc = sio_nvme_ioq_deallocate(s->q, o->nsid, io_u->offset >> sh,
					     (uint32_t)(io_u->xfer_buflen >> sh), sio_fio_done, io_u);
	} else {
		io_u->error = EOPNOTSUPP;
		return FIO_Q_COMPLETED;
	}
	if (rc == -EAGAIN)
		return FIO_Q_BUSY;	/* fio reaps and queues it again */
	if (rc) {
		log_err("fio: smartio: submit: %s\n", sio_errmsg());
		io_u->error = -rc;
		return FIO_Q_COMPLETED;
	}
	return FIO_Q_QUEUED;
}

/* fio's batch is in: one SQ doorbell write for all of it. */
static int sio_fio_commit(struct thread_data *td)
{
	struct sio_fio *s = td->io_ops_data;

	sio_nvme_ioq_ring(s->q);
	return 0;
}

/*
 * One reap: a poll, or (sio_completions=irq|adaptive|hybrid) a wait for the
 * first completion when fio wants one, asleep or spinning as the mode says,
 * up to fio's deadline (10 ms at a time without one). Every completion goes
 * through sio_nvme_ioq_reap(), whose count gives hybrid the device's pace.
 */
static int reap(struct sio_fio *s, unsigned int max, unsigned int min, uint64_t deadline)
{
	uint64_t now, us = 10000;

	if (s->cpl == SIO_NVME_CPL_POLL || s->nevents >= min)
		return sio_nvme_ioq_reap(s->q, max, 0, NULL);
	if (deadline) {
		now = sio__now_ns();
		us = now >= deadline ? 0 : (deadline - now) / 1000 + 1;
		if (us > 10000)
			us = 10000;
	}
	return sio_nvme_ioq_reap(s->q, max, (uint32_t)us, NULL);
}

static int sio_fio_getevents(struct thread_data *td, unsigned int min, unsigned int max,
			     const struct timespec *t)
{
	struct sio_fio *s = td->io_ops_data;
	uint64_t deadline = 0;
	unsigned int idle = 0;
	int rc;

	/* what the last call could not hand over (a failed queue completes
	 * everything at once) goes first this time */
	memmove(s->events, s->events + s->nret, (s->nevents - s->nret) * sizeof(*s->events));
	s->nevents -= s->nret;
	s->nret = 0;
	if (t)
		deadline = sio__now_ns() + (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
	if (max > s->max_events)
		max = s->max_events;
	for (;;) {	/* polls at least once, even for min 0 */
		rc = s->nevents < max ? reap(s, max - s->nevents, min, deadline) : 0;
		if (rc < 0 && !s->nevents) {
			log_err("fio: smartio: poll: %s\n", sio_errmsg());
			td_vmsg(td, -rc, sio_errmsg(), "smartio poll");
			return rc;
		}
		if (rc < 0 || s->nevents >= min || s->nevents >= max)
			break;
		if (rc > 0) {
			idle = 0;
			continue;
		}
		if (++idle > 64) {
			idle = 0;
			sched_yield();
			if (deadline && sio__now_ns() > deadline)
				break;
		}
	}
	s->nret = s->nevents < max ? s->nevents : max;
	return (int)s->nret;
}

static struct io_u *sio_fio_event(struct thread_data *td, int i)
{
	struct sio_fio *s = td->io_ops_data;

	return s->events[i];
}

static char *sio_fio_errdetails(struct io_u *io_u)
{
	uint16_t st = (uint16_t)(uintptr_t)io_u->mmap_data;
	char *m = malloc(96);

	if (m && st)
		snprintf(m, 96, "smartio: NVMe status type %#x code %#x", (unsigned)(st >> 8) & 7,
			 (unsigned)st & 0xff);
	else if (m)
		snprintf(m, 96, "smartio: no NVMe status (the command did not reach the device)");
	return m;
}

struct ioengine_ops ioengine = {
	.name = "smartio",
	.version = FIO_IOOPS_VERSION,
	.flags = FIO_DISKLESSIO | FIO_NODISKUTIL | FIO_NOEXTEND | FIO_MEMALIGN | FIO_RAWIO,
	.setup = sio_fio_setup,
	.init = sio_fio_init,
	.cleanup = sio_fio_cleanup,
	.queue = sio_fio_queue,
	.commit = sio_fio_commit,
	.getevents = sio_fio_getevents,
	.event = sio_fio_event,
	.errdetails = sio_fio_errdetails,
	.open_file = sio_fio_open_file,
	.close_file = sio_fio_close_file,
	.invalidate = sio_fio_invalidate,
	.iomem_alloc = sio_fio_iomem_alloc,
	.iomem_free = sio_fio_iomem_free,
	.options = options,
	.option_struct_size = sizeof(struct sio_fio_opts),
};
