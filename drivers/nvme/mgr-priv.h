/* SPDX-License-Identifier: MIT */
#ifndef SIO_NVME_MGR_PRIV_H
#define SIO_NVME_MGR_PRIV_H

/* Internal to the NVMe manager: its tables and state (manager.c), and its
 * mailbox (mbox.c). */

#include <pthread.h>
#include <stdio.h>
#include <smartio/nvme/manager.h>
#include "mailbox.h"
#include "priv.h"

#define CMB_MAX_ALLOCS	256
#define REAP_EVERY_NS	200000000ull
#define PIDCHECK_EVERY_NS 500000000ull
#define STATE_QIDS	1024	/* I/O queue pairs a manager hands out, at most */
/* queue pairs created at once: the admin tags the event requests leave */
#define CREATE_BATCH	(SIO_NVME_ADMIN_DEPTH - 1 - SIO_NVME_ADMIN_AERS)
#define STATE_MAGIC	0x3154534d564e53ull	/* "SNVMST1" */

struct cmb_alloc {
	int32_t slot;		/* -1: unused entry */
	uint64_t off, size;
};

/* PEND_GONE: owned, but not in the controller (a reset took it): kept for
 * its owner to create again with the same id, and no one else's meanwhile.
 * PEND_REDO: being created again, or deleted to be created again, for its
 * owner: whatever comes of it (a reset, a manager's death), still the
 * owner's. */
enum { PEND_NONE, PEND_CREATE, PEND_DELETE, PEND_GONE, PEND_REDO };

/*
 * The manager's tables, in a kept segment on the lender's node (priv.h)
 * that no client maps: a manager that takes over after a crash goes on
 * from them, once the controller has confirmed the rest (ctrl.c, adopt).
 */
struct mgr_state {
	uint64_t magic;		/* written last */
	uint32_t device;
	uint32_t io_queues;
	/* Per qid, a queue pair being created or deleted (PEND_*): after a
	 * crash its fate in the controller is unknown, and the successor
	 * deletes it to be sure; or one a reset took (PEND_GONE). */
	uint8_t pend[STATE_QIDS + 1];
	int32_t qowner[STATE_QIDS + 1];	/* per qid: owning slot or -1 */
	int32_t qpid[STATE_QIDS + 1];	/* per qid: owner's pid when created */
	/* BAR0 confined: per qid, the process last granted its doorbell pages
	 * (0: none). A revoked grant does not undo a mapping, so a qid goes to
	 * another process only once that one is gone. */
	int32_t dbpid[STATE_QIDS + 1];
	struct cmb_alloc cmb[CMB_MAX_ALLOCS];
};

struct sio_nvme_manager {
	struct sio_fabric *f;
	struct sio_device *dev;
	struct sio_device_info dinfo;
	struct sio_nvme_ctrl *ctrl;
	struct sio_nvme_ctrl_opts co;	/* what it was brought up with */
	const struct sio_nvme_ctrl_info *ci;
	struct sio_segment *seg;
	struct sio_nvme_mbox *mb;
	struct sio_segment *state_seg;
	struct mgr_state *state;
	int32_t *qowner, *qpid, *dbpid;	/* the state's tables */
	struct cmb_alloc *cmb;
	bool confined;
	bool published;		/* serving: the mailbox is ours to close */
	bool adopted;		/* took over from a crashed manager */
	bool fresh_shared;	/* borrowed shared, no state to take over: afresh */
	bool hand_over;		/* a reset is due that only a manager on the
				 * lender's node can do: stop, the state kept */
	uint32_t last_doorbell;
	uint64_t last_reap, last_pidcheck, last_look;
	FILE *log;
	bool dev_gone;		/* the controller was unregistered */
	uint64_t dev_missed_ns;	/* since when the fabric says no such device (0: it has it) */
	struct sio_nvme_manager_stats st;
	/* the mailbox as this manager wrote it (mbox.c): what another process
	 * overwrites is put back */
	int32_t slot_pid[SIO_NVME_MBOX_SLOTS];	/* the client on each slot, 0: none */
	int32_t slot_node[SIO_NVME_MBOX_SLOTS];
	struct sio_nvme_mbox_ctrl hdr_ctrl;
	struct sio_nvme_mbox_dbbuf hdr_dbbuf;
	struct sio_nvme_mbox_events events;
	uint32_t epoch, resets;
	uint64_t last_mend, mended;
	int nodes;		/* of the fabric */
	pthread_t pulse;	/* bumps the mailbox's pulse (manager.c) */
	bool pulsing;
	uint32_t pulse_stop;
	uint32_t grace_ms;	/* $SMARTIO_NVME_LINK_GRACE_MS */
	uint32_t link_losses;	/* the lender out of reach, waited out (mgr-health.c) */
};

/* A Create I/O Queue Pair request, served with others taken at once. */
struct creating {
	int s;
	struct sio_nvme_mbox_req q;
	struct sio_nvme_mbox_resp r;
	uint32_t qid;		/* reserved (qowner and pend set); 0: none */
	int32_t pid;
	int ret;
	bool drop_cq;		/* its SQ failed: its CQ is deleted */
	bool again;		/* the slot's own, taken by a reset, made again */
};

/*
 * The manager's jobs, each in a file of its own, as Linux keeps
 * target/admin-cmd.c apart from core.c:
 *   manager.c     start, take-over, the serve loop, stop
 *   mgr-reap.c    clients that died: their slots and queue pairs
 *   mgr-admin.c   the requests of clients: queue pairs, identify, logs, CMB
 *   mgr-health.c  the controller's health, and its reset
 */

/* manager.c */
void sio_nvme_mgr_log(struct sio_nvme_manager *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define mlog(m, ...)	sio_nvme_mgr_log(m, __VA_ARGS__)
void sio_nvme_mgr_retry(struct sio_nvme_manager *m, int s, const char *why);
void sio_nvme_mgr_queues_gone(struct sio_nvme_manager *m);
bool sio_nvme_mgr_slot_plausible(const struct sio_nvme_manager *m, int s);
int sio_nvme_mgr_still_there(struct sio_nvme_manager *m);

/* mgr-reap.c */
uint64_t sio_nvme_mgr_db_offset(const struct sio_nvme_manager *m, uint32_t qid);
bool sio_nvme_mgr_pid_alive(int32_t pid);
void sio_nvme_mgr_revoke_doorbells(struct sio_nvme_manager *m, uint32_t qid);
int sio_nvme_mgr_qpair_drop(struct sio_nvme_manager *m, uint32_t q);
int sio_nvme_mgr_release_slot(struct sio_nvme_manager *m, int s);
void sio_nvme_mgr_check_clients(struct sio_nvme_manager *m, uint64_t now);
bool sio_nvme_mgr_dev_missing(struct sio_nvme_manager *m, uint64_t now);

/* mgr-admin.c */
int sio_nvme_mgr_grant_doorbells(struct sio_nvme_manager *m, uint32_t qid, int32_t pid,
				 struct sio_nvme_mbox_resp *r);
bool sio_nvme_mgr_note_client(struct sio_nvme_manager *m, int s, uint32_t op);
void sio_nvme_mgr_handle(struct sio_nvme_manager *m, int s, const struct sio_nvme_mbox_req *req);
void sio_nvme_mgr_create_and_respond(struct sio_nvme_manager *m, struct creating *c, int n);

/* mgr-health.c */
int sio_nvme_mgr_check_ctrl(struct sio_nvme_manager *m);
/* Away from the lender, wait out its being out of reach (what it holds reads
 * all ones): 0 (nothing to wait out, or it is back), -ENOLINK past the
 * grace, or -errno of a device or fabric gone. */
int sio_nvme_mgr_link_wait(struct sio_nvme_manager *m);

/* mbox.c: the mailbox published, its reset count, and checked: a header or
 * a slot another process overwrote is written again */
void sio_nvme_mbox_publish(struct sio_nvme_manager *m, bool clients);
void sio_nvme_mbox_reset_mark(struct sio_nvme_manager *m, bool underway);
void sio_nvme_mbox_events(struct sio_nvme_manager *m);
void sio_nvme_mbox_ctrl_changed(struct sio_nvme_manager *m);
void sio_nvme_mbox_check(struct sio_nvme_manager *m, uint64_t now);
bool sio_nvme_mbox_known(struct sio_nvme_manager *m, int s);

#endif
