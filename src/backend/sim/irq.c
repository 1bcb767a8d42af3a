/* SPDX-License-Identifier: MIT */
/*
 * Interrupts on the simulated fabric. A vector a borrower enabled is a unix
 * datagram socket of its own, at a path the fabric gives this host
 * (host_path: "irq-d<device>-b<borrow>-v<vector>"); a device model raising
 * the vector sends one datagram to each borrower of the device that bound
 * it, as an MSI is one posted write. The socket polls readable while
 * datagrams wait; a full queue drops the send, which coalesces as a real
 * interrupt does. Nodes are processes of one host here; a fabric whose
 * nodes have no common kernel needs its own delivery (a doorbell word).
 *
 * Which vectors a borrower bound is in its borrow slot (irq_vecs): a raise
 * sends only there, and a borrow released with vectors still bound (its
 * process died) has their sockets unlinked. Without it each raise was a
 * send to every borrower of the device, all but one refused (no socket at
 * that path): with 32 clients of one controller, 33 system calls an
 * interrupt.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "internal.h"

static int irq_path(struct sio_fabric *f, uint32_t dev, int borrow, int vec, struct sockaddr_un *sa)
{
	char leaf[64];

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	snprintf(leaf, sizeof(leaf), "irq-d%u-b%d-v%d", dev, borrow, vec);
	return sio__fabric_host_path(f, leaf, sa->sun_path, sizeof(sa->sun_path));
}

_Static_assert(SIO_IRQ_MAX_VECS <= 32, "a borrow's bound vectors are a 32-bit mask");

/* The mask of bound vectors in this borrow's slot. */
static uint32_t *bound_vecs(struct sio_device *dev)
{
	struct reg_borrow *b = reg_borrow_at(dev->f->reg, dev->borrow);

	return b ? &b->irq_vecs : NULL;
}

/*
 * The sockets of vectors @vecs of a borrow, unlinked: at its close, and
 * when the registry releases the borrow of a process that died with them
 * bound (sio_device_ops.irq_gone). The paths are this host's: a reaper on
 * another kernel finds none, and that kernel's next borrower of the slot
 * unlinks them at its enable.
 */
void sio__sim_irq_gone(struct sio_fabric *f, uint32_t id, int borrow, uint32_t vecs)
{
	struct sockaddr_un sa;

	for (; vecs; vecs &= vecs - 1)
		if (!irq_path(f, id, borrow, __builtin_ctz(vecs), &sa))
			unlink(sa.sun_path);
}

static void sim_irq_close(struct sio_device *dev, int nvec, int *fds)
{
	uint32_t *mask = bound_vecs(dev), closed = 0;

	for (int v = 0; v < nvec; v++) {
		if (fds[v] < 0)
			continue;
		if (mask)	/* unmarked first: a raise then sends nothing there */
			__atomic_fetch_and(mask, ~(1u << v), __ATOMIC_RELEASE);
		close(fds[v]);
		fds[v] = -1;
		closed |= 1u << v;
	}
	sio__sim_irq_gone(dev->f, dev->id, dev->borrow, closed);
}

int sio__sim_irq_enable(struct sio_device *dev, unsigned int kinds, int nvec, int *fds)
{
	uint32_t *mask = bound_vecs(dev);
	struct sockaddr_un sa;
	int ret;

	if (kinds && !(kinds & (SIO_IRQ_F(SIO_IRQ_MSI) | SIO_IRQ_F(SIO_IRQ_MSIX))))
		return sio__err(EOPNOTSUPP, "device %u: a device model on the simulated fabric signals "
				"message interrupts (MSI) only", dev->id);
	for (int v = 0; v < nvec; v++) {
		if (fds[v] == SIO__IRQ_SKIP) {	/* another borrower's vector */
			fds[v] = -1;
			continue;
		}
		if ((ret = irq_path(dev->f, dev->id, dev->borrow, v, &sa)))
			goto fail;
		fds[v] = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fds[v] < 0) {
			ret = sio__err(errno, "device %u: interrupt socket: %s", dev->id, strerror(errno));
			goto fail;
		}
		unlink(sa.sun_path);	/* left by a borrower of this slot that died */
		if (bind(fds[v], (struct sockaddr *)&sa, sizeof(sa))) {
			ret = sio__err(errno, "device %u: cannot bind interrupt socket %s: %s", dev->id,
				       sa.sun_path, strerror(errno));
			goto fail;
		}
		if (mask)
			__atomic_fetch_or(mask, 1u << v, __ATOMIC_RELEASE);
	}
	return SIO_IRQ_MSI;
fail:
	sim_irq_close(dev, nvec, fds);
	return ret;
}

void sio__sim_irq_disable(struct sio_device *dev)
{
	sim_irq_close(dev, dev->irq_nvec, dev->irq_fd);
}

#define TAKE_BATCH	32	/* datagrams per recvmmsg */

/* What is pending, in one system call when it is TAKE_BATCH or fewer. */
int sio__sim_irq_take(struct sio_device *dev, int vec)
{
	struct mmsghdr mm[TAKE_BATCH];
	struct iovec iov[TAKE_BATCH];
	uint32_t msg[TAKE_BATCH];
	int n = 0, r;

	for (int i = 0; i < TAKE_BATCH; i++) {
		iov[i] = (struct iovec){ .iov_base = &msg[i], .iov_len = sizeof(msg[i]) };
		mm[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
	}
	/* bounded: a model raising without pause cannot keep this looping */
	do {
		r = recvmmsg(dev->irq_fd[vec], mm, TAKE_BATCH, MSG_DONTWAIT, NULL);
		n += r > 0 ? r : 0;
	} while (r == TAKE_BATCH && n < 4096);
	if (!n && errno != EAGAIN)
		return sio__err(errno, "device %u: reading vector %d: %s", dev->id, vec, strerror(errno));
	return n ? n : -EAGAIN;
}

/* The process's sending socket: one, unbound, made at the first raise. */
static int tx_socket(void)
{
	static int tx = -1;
	int s = __atomic_load_n(&tx, __ATOMIC_ACQUIRE);

	if (s >= 0)
		return s;
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return sio__err(errno, "interrupt socket: %s", strerror(errno));
	if (!__atomic_compare_exchange_n(&tx, &(int){ -1 }, s, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		close(s);
		s = __atomic_load_n(&tx, __ATOMIC_ACQUIRE);
	}
	return s;
}

#define RAISE_BATCH	64	/* datagrams per sendmmsg */

/* The datagrams of one raise, sent together. */
struct raise_batch {
	struct mmsghdr mm[RAISE_BATCH];
	struct iovec iov[RAISE_BATCH];
	struct sockaddr_un sa[RAISE_BATCH];
	uint32_t msg[RAISE_BATCH];
	int n, sent;
};

/*
 * One system call for them all: a woken borrower may take this CPU at the
 * call's return, and no other waits behind it. A datagram refused (a full
 * queue: coalesced; a socket closed since) is skipped and the rest go on.
 */
static void batch_send(struct raise_batch *rb, int tx)
{
	for (int i = 0; i < rb->n;) {
		int left = rb->n - i, r = sendmmsg(tx, rb->mm + i, (unsigned int)left, MSG_NOSIGNAL);

		r = r < 0 ? 0 : r;
		rb->sent += r;
		i += r < left ? r + 1 : r;	/* past the one refused */
	}
	rb->n = 0;
}

static void batch_add(struct raise_batch *rb, int tx, struct sio_fabric *f, uint32_t dev, int b,
		      int vec)
{
	int i = rb->n;

	if (irq_path(f, dev, b, vec, &rb->sa[i]))
		return;
	rb->msg[i] = (uint32_t)vec;
	rb->iov[i] = (struct iovec){ .iov_base = &rb->msg[i], .iov_len = sizeof(rb->msg[i]) };
	rb->mm[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &rb->sa[i],
						   .msg_namelen = sizeof(rb->sa[i]),
						   .msg_iov = &rb->iov[i], .msg_iovlen = 1 } };
	if (++rb->n == RAISE_BATCH)
		batch_send(rb, tx);
}

int sio_devreg_irq_raise_mask(struct sio_devreg *reg, uint32_t vecs)
{
	struct raise_batch rb;
	struct sio_fabric *f;
	int tx;

	if (!reg)
		return sio__err(EINVAL, "sio_devreg_irq_raise: no registration");
	if (!vecs)
		return 0;
	if ((tx = tx_socket()) < 0)
		return tx;
	f = reg->f;
	rb.n = rb.sent = 0;
	/*
	 * The borrowers, read without the registry lock (an interrupt must not
	 * wait for it): a slot seen half-changed costs at most a datagram to a
	 * socket nobody bound, and a borrower has its slot before it can enable.
	 */
	for (int b = 0; b < SIO_MAX_BORROWS; b++) {
		const struct reg_borrow *br = &f->reg->borrows[b];
		uint32_t on;

		if (!__atomic_load_n(&br->used, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&br->dev, __ATOMIC_RELAXED) != reg->slot)
			continue;
		on = __atomic_load_n(&br->irq_vecs, __ATOMIC_ACQUIRE) & vecs;
		for (; on; on &= on - 1)
			batch_add(&rb, tx, f, reg->id, b, __builtin_ctz(on));
	}
	batch_send(&rb, tx);
	return rb.sent;
}

int sio_devreg_irq_raise(struct sio_devreg *reg, int vec)
{
	if (!reg || vec < 0 || vec >= SIO_IRQ_MAX_VECS)
		return sio__err(EINVAL, "sio_devreg_irq_raise: no registration, or vector %d out of 0..%d",
				vec, SIO_IRQ_MAX_VECS - 1);
	return sio_devreg_irq_raise_mask(reg, 1u << vec);
}
