/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_NVME_MANAGER_H
#define SMARTIO_NVME_MANAGER_H

/**
 * DOC: NVMe manager
 *
 * The manager shares one NVMe controller among many clients at queue level
 * ("MR-IOV in software"). It borrows the controller exclusively, resets it,
 * owns the admin queues, then downgrades its borrow to shared and serves
 * clients through a mailbox segment (fabric shared memory plus segment
 * notifications). It hands out I/O queue ids, records which client owns
 * which, refuses requests on queues a client does not own and malformed or
 * oversized requests, relays Identify, log pages and Get Features with the
 * data DMA'd straight into the client's memory, and deletes the queues of a
 * client that died within about a second. It never sits on the I/O path.
 *
 * Failover. What the manager needs lives in fabric memory that outlives
 * it (SIO_SEG_F_KEEP segments on the lender's node): the mailbox with the
 * clients' slots, the admin queues with their positions, and its tables
 * (queue ownership, doorbell grants, CMB ranges). A manager started while
 * clients hold the device (after a crash, on any node; nvme-manager
 * --standby waits for that) takes the controller over without a reset
 * once the controller confirms the kept state (enabled and ready, the
 * admin queue registers, an Identify of the same serial number, the queue
 * count), so running clients' I/O goes on untouched. Their admin requests
 * wait for it (bounded; $SMARTIO_NVME_RESTART_MS, default 10 s) and a
 * request cut short is asked again. A manager busy with many clients is
 * told apart from one stopped by a signal by its pulse, a word of the
 * mailbox a thread of its own bumps whatever the serve loop does: its
 * clients wait for its answer ($SMARTIO_NVME_ANSWER_MS, default 30 s). If the controller needs a reset
 * (CSTS.CFS, or it does not match), the manager resets it and clients'
 * queue pairs fail with -ECONNRESET saying so: they reopen. A manager on
 * another node than the lender whose BAR0 is relayed (only doorbells reach
 * the device, sio_device_bar_path_kind()) cannot reset it: it stops with
 * its state kept (-EOPNOTSUPP, naming the lender's node), for a manager
 * there (--standby) to take over and reset. A clean stop
 * removes the kept state; a manager started after it while processes still
 * hold the device (clients about to ask, or dead ones not reaped yet)
 * starts afresh, with a reset: the mailbox, which one live manager holds,
 * says none serves. BAR0 is unconfined between a crash and the
 * take-over (the crashed manager's restriction ended with its borrow).
 *
 * Confinement (the rule the manager, the client and their files follow;
 * they refer here). When the controller's doorbells are at least a page
 * apart (CAP.DSTRD >= 10 on 4 KiB pages, e.g. nvme-emu --dstrd 10) every
 * queue's doorbells have pages of their own, and the manager confines BAR0
 * before sharing the controller (sio_device_restrict()): other processes
 * may map its register page read-only and, per client process, the
 * doorbell pages of the queues it was given (sio_device_grant(), withdrawn
 * when the queue is deleted or the client leaves or dies), nothing else. A
 * client can then neither ring another's queues nor write CC to reset the
 * controller; mapping anything else of BAR0 fails with -EACCES. A queue id
 * whose pages a still-running process was granted is given to no other
 * process, since withdrawing a grant does not undo a mapping. With a
 * smaller stride (QEMU, real SSDs: DSTRD 0) doorbells of different queues
 * share a page, which no mapping can split: every client maps BAR0 whole,
 * and the manager's ownership checks on requests are the only protection.
 */

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <smartio/nvme/ctrl.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sio_nvme_manager;

/**
 * struct sio_nvme_manager_opts - manager options
 * @ctrl: controller bring-up options
 * @log: where to report client arrivals, departures and refusals (NULL:
 *	silent)
 */
struct sio_nvme_manager_opts {
	struct sio_nvme_ctrl_opts ctrl;
	FILE *log;
};

/**
 * struct sio_nvme_manager_stats - what the manager has done
 * @clients: clients connected now
 * @queues: I/O queue pairs in use now
 * @requests: requests served
 * @refused: requests answered with an error
 * @reaped: dead clients cleaned up
 * @resets: controller resets under running clients (after CSTS.CFS)
 */
struct sio_nvme_manager_stats {
	uint32_t clients;
	uint32_t queues;
	uint64_t requests;
	uint64_t refused;
	uint64_t reaped;
	uint64_t resets;
};

/**
 * sio_nvme_manager_start() - take a controller and open the mailbox
 * @f: fabric handle (the manager's node)
 * @device: device id, or SIO_DEVICE_ANY for the first NVMe controller
 * @opts: options (NULL for defaults)
 * @out: the manager
 *
 * Return: 0; -ENOENT (no such device), -EBUSY (another manager serves it, or
 * holds it exclusively while it starts),
 * -errno from bringing the controller up.
 */
int sio_nvme_manager_start(struct sio_fabric *f, uint32_t device,
			   const struct sio_nvme_manager_opts *opts,
			   struct sio_nvme_manager **out);

/**
 * sio_nvme_manager_serve() - serve requests for a while
 * @m: manager
 * @timeout_ms: longest sleep waiting for a request
 *
 * Sleeps on the mailbox until a client rings (or @timeout_ms passes),
 * answers every waiting request, and cleans up after dead clients.
 * Return: the number of requests answered, or -errno if the controller
 * died (-ENODEV, -EIO), or needs a reset this manager cannot do
 * (-EOPNOTSUPP: see DOC; sio_nvme_manager_close() keeps the state for the
 * manager that can).
 */
int sio_nvme_manager_serve(struct sio_nvme_manager *m, uint32_t timeout_ms);

/**
 * sio_nvme_manager_run() - serve until *@stop becomes non-zero
 * @m: manager
 * @stop: set from a signal handler to end the loop
 * Return: 0, or -errno if the controller died.
 */
int sio_nvme_manager_run(struct sio_nvme_manager *m, volatile sig_atomic_t *stop);

/**
 * sio_nvme_manager_stats() - counters
 * @m: manager
 * @out: filled in
 * Return: 0, or -EINVAL for a NULL argument.
 */
int sio_nvme_manager_stats(const struct sio_nvme_manager *m,
			   struct sio_nvme_manager_stats *out);

/**
 * sio_nvme_manager_ctrl() - the controller the manager drives
 * @m: manager
 */
struct sio_nvme_ctrl *sio_nvme_manager_ctrl(const struct sio_nvme_manager *m);

/**
 * sio_nvme_manager_close() - delete every client queue, shut down, leave
 * @m: manager (NULL is ignored)
 */
void sio_nvme_manager_close(struct sio_nvme_manager *m);

#ifdef __cplusplus
}
#endif
#endif
