/* SPDX-License-Identifier: MIT */
/*
 * The words of boot.c by message, where the NTB has message registers and
 * no scratchpads (IDT). The node service keeps this port's words and each
 * peer's; a word goes as two messages of message register 0, its high
 * half then its low half:
 *
 *   bits 31-28   0xa: a high half, 0xb: a low half, 0xc: "send me yours"
 *   bits 27-24   the word (0 .. NTB_WORDS - 1)
 *   bits 15-0    the half
 *
 * A register holds one message until the peer's kernel takes it (the
 * sender is told EAGAIN meanwhile, and tries again), so one sender's
 * messages come in the order sent: a low half completes the high half
 * before it. A peer's words are forgotten when its link generation moves
 * (it came back: a new kernel) and sent to it again; words that did not
 * come are asked for once a second, and everything is sent again every
 * few seconds, for a peer whose messages went to another file while no
 * node service held the NTB.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ntb.h"

#define MSG_HI		0xau
#define MSG_LO		0xbu
#define MSG_ASK		0xcu
#define MSG_REG		0
#define ALL_WORDS	((1u << NTB_WORDS) - 1)
#define ASK_NS		1000000000ull
#define REFRESH_NS	5000000000ull
#define SEND_TRIES	12		/* a full register: 1 ms, doubling, to 8 ms */

int sio__ntb_board_init(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd)
{
	memset(bd, 0, sizeof(*bd));
	if (i->spads)
		return 0;
	if (!(i->flags & SIO_NTB_F_MSGS) || !i->msgs)
		return sio__err(EOPNOTSUPP, "ntb: %s (%s) has neither scratchpads nor message registers: the nodes have no way to find the fabric's home",
				d->what, i->driver);
	bd->by_msg = 1;
	return 0;
}

/* Send @v to peer @pidx, waiting (bounded) while its register is full: 0 or -errno. */
static int send_one(struct ntbdev *d, uint32_t pidx, uint32_t v)
{
	struct sio_ntb_msg m = { .pidx = pidx, .midx = MSG_REG, .value = v };
	long nap = 1000000;
	int ret = 0;

	for (int t = 0; t < SEND_TRIES; t++) {
		if ((ret = ntbdev_ioctl(d, SIO_NTB_IOC_MSG_SEND, &m)) != -EAGAIN)
			return ret;
		nanosleep(&(struct timespec){ 0, nap }, NULL);
		nap = nap < 8000000 ? nap * 2 : nap;
	}
	return ret;
}

static uint32_t half(uint32_t kind, uint32_t k, uint32_t v)
{
	return kind << 28 | k << 24 | (v & 0xffff);
}

/* A message of peer @pidx. */
static void take(struct ntb_board *bd, struct ntb_post *p, uint32_t pidx, uint32_t v)
{
	uint32_t kind = v >> 28, k = v >> 24 & 0xf;

	if (kind == MSG_ASK) {
		p->dirty[pidx] = ALL_WORDS;
		return;
	}
	if (k >= NTB_WORDS)
		return;		/* a word this layout does not have */
	if (kind == MSG_HI) {
		p->hi[pidx][k] = v & 0xffff;
		p->hi_have[pidx] |= 1u << k;
	} else if (kind == MSG_LO && (p->hi_have[pidx] >> k & 1)) {
		bd->w[pidx][k] = p->hi[pidx][k] << 16 | (v & 0xffff);
		bd->have[pidx] |= 1u << k;
		p->hi_have[pidx] &= ~(1u << k);
	}
}

/* Peers that came back (or went) since their words came: forget them, send ours again. */
static void peers_follow(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			 struct ntb_post *p)
{
	for (uint32_t q = 0; q < i->peers && q < SIO_NTB_MAX_PEERS; q++) {
		struct sio_ntb_peer pr = { .pidx = q };

		if (ntbdev_ioctl(d, SIO_NTB_IOC_PEER, &pr))
			continue;
		if (!pr.link_up) {
			bd->have[q] = p->hi_have[q] = 0;
			p->gen[q] = 0;
			continue;
		}
		if (pr.link_gen == p->gen[q])
			continue;
		p->gen[q] = pr.link_gen;
		bd->have[q] = p->hi_have[q] = 0;
		p->dirty[q] = ALL_WORDS;
		p->asked[q] = sio__now_ns();	/* its words are on their way, as ours are */
	}
}

/* Send peer @q the words it lacks, the last word (the bootstrap's first) last. */
static void send_words(struct ntbdev *d, struct ntb_board *bd, struct ntb_post *p, uint32_t q)
{
	for (uint32_t n = 1; n <= NTB_WORDS && p->dirty[q]; n++) {
		uint32_t k = n % NTB_WORDS, v = bd->own[k];	/* word 0 vouches for 1-3: after them */

		if (!(p->dirty[q] >> k & 1))
			continue;
		if (send_one(d, q, half(MSG_HI, k, v >> 16)) || send_one(d, q, half(MSG_LO, k, v)))
			return;		/* full, or its link went: the next tick */
		p->dirty[q] &= ~(1u << k);
	}
}

void sio__ntb_board_post(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			 struct ntb_post *p)
{
	struct sio_ntb_msg m = { 0 };
	uint64_t now = sio__now_ns(), changed = 0;

	if (!bd->by_msg)
		return;
	peers_follow(d, i, bd, p);
	while (!ntbdev_ioctl(d, SIO_NTB_IOC_MSG_RECV, &m)) {
		if (m.pidx < i->peers && m.pidx < SIO_NTB_MAX_PEERS && p->gen[m.pidx])
			take(bd, p, m.pidx, m.value);
		m = (struct sio_ntb_msg){ 0 };
	}
	for (uint32_t k = 0; k < NTB_WORDS; k++)
		if (bd->own[k] != p->sent[k])
			changed |= 1u << k;
	memcpy(p->sent, bd->own, sizeof(p->sent));
	if (now >= p->refresh) {
		changed = ALL_WORDS;
		p->refresh = now + REFRESH_NS;
	}
	for (uint32_t q = 0; q < i->peers && q < SIO_NTB_MAX_PEERS; q++) {
		if (!p->gen[q])
			continue;	/* its link is down */
		p->dirty[q] |= (uint32_t)changed;
		send_words(d, bd, p, q);
		if (bd->have[q] != ALL_WORDS && now - p->asked[q] >= ASK_NS &&
		    !send_one(d, q, half(MSG_ASK, 0, 0)))
			p->asked[q] = now;
	}
}
