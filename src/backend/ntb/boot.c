/* SPDX-License-Identifier: MIT */
/*
 * The bootstrap of an ntb fabric: the port that hosts it (its state at the
 * start of that port's memory) says so in four words of its own, which
 * every peer reads:
 *
 *   word 0   'S' 'F', a layout version, a check byte over the next three
 *   word 1   the fabric's name, hashed
 *   word 2   its generation: new at every create, also in the header
 *   word 3   the state's size in 64 KiB | the inbound window it is in << 24
 *
 * and two more that every node service keeps (hosting or not):
 *
 *   word 4   the ports (0 to 31, a bit each) this port could not export
 *            its memory to: the hardware driver refused their translation
 *   word 5   the same, ports 32 to 63
 *
 * so that a peer of a home that could not export the state to it says so
 * instead of reading what an untranslated window reaches. Where the
 * hardware translates outbound only (IDT), the peers translate their
 * window to the node's memory themselves, and three more words say where
 * it is:
 *
 *   word 6   its bus address, low 32 bits
 *   word 7   its bus address, high 32 bits
 *   word 8   its size in pages
 *
 * On a two-port NTB whose driver gives no port numbers (Switchtec, the
 * endpoint function: both sides say port 0), one more tells the sides
 * apart, for the nodes' ids:
 *
 *   word 9   bit 31: set; bit 30: this side's id is decided, bit 29: it;
 *            bits 28-0: a number drawn at the node service's start
 *
 * The words are the port's own scratchpads where the hardware has them
 * (ntb_peer_spad_read: from the last, the bootstrap's four, then words 4
 * and 5 before them, 6 to 8 before those, 9 before those), else a board
 * the node service sends its peers by message register and keeps of
 * theirs (board.c).
 *
 * Anything there is input: a port whose words are not a bootstrap is no
 * home, one whose check byte is wrong is damaged, and a generation that
 * the header does not hold is stale; each is said with what was read.
 */
#include <stdio.h>
#include <string.h>

#include "ntb.h"

#define BOOT_MAGIC	0x5346u		/* "SF" */
#define BOOT_VERSION	1
#define BOOT_SPADS	4

static uint8_t check_of(const uint32_t *w)
{
	uint32_t x = w[1] ^ w[2] ^ w[3];

	return (uint8_t)(x ^ x >> 8 ^ x >> 16 ^ x >> 24 ^ 0xa5);
}

uint32_t sio__ntb_name_hash(const char *name)
{
	uint32_t h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 16777619u;
	return h ? h : 1;
}

/* Each word's scratchpad, counted back from the last (the bootstrap's are the last four). */
static const uint8_t from_end[NTB_WORDS] = { 4, 3, 2, 1, 6, 5, 9, 8, 7, 10 };

static uint32_t spads_needed(uint32_t first, uint32_t n)
{
	uint32_t most = 0;

	for (uint32_t k = first; k < first + n; k++)
		most = from_end[k] > most ? from_end[k] : most;
	return most;
}

/*
 * Words @first .. @first + @n - 1 of port @pidx (SIO_NTB_LOCAL: this
 * port's), in the scratchpads or on the board: 0, -ENOENT for words a
 * peer has not sent (yet), -EOPNOTSUPP where there are too few
 * scratchpads, or the device's errno.
 */
static int words_rw(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
		    uint32_t pidx, uint32_t first, uint32_t n, uint32_t *w, bool write)
{
	uint32_t mask = ((1u << n) - 1) << first;

	if (bd && bd->by_msg) {
		if (pidx == SIO_NTB_LOCAL && write)
			memcpy(bd->own + first, w, n * sizeof(*w));
		else if (pidx == SIO_NTB_LOCAL)
			memcpy(w, bd->own + first, n * sizeof(*w));
		else if (pidx >= SIO_NTB_MAX_PEERS || (bd->have[pidx] & mask) != mask)
			return -ENOENT;
		else
			memcpy(w, bd->w[pidx] + first, n * sizeof(*w));
		return 0;
	}
	if (i->spads < spads_needed(first, n))
		return -EOPNOTSUPP;
	for (uint32_t k = 0; k < n; k++) {
		struct sio_ntb_spad s = { .pidx = pidx, .sidx = i->spads - from_end[first + k], .value = w[k] };
		int ret = ntbdev_ioctl(d, write ? SIO_NTB_IOC_SPAD_WRITE : SIO_NTB_IOC_SPAD_READ, &s);

		if (ret)
			return ret;
		w[k] = s.value;
	}
	return 0;
}

/* Can the words of a bootstrap go anywhere: scratchpads or a board? */
static int boot_place(struct ntbdev *d, const struct sio_ntb_info *i, const struct ntb_board *bd)
{
	if ((bd && bd->by_msg) || i->spads >= BOOT_SPADS)
		return 0;
	return sio__err(EOPNOTSUPP, "ntb: %s has %u scratchpads and no message registers; a fabric's bootstrap needs %d scratchpads or message registers",
			d->what, i->spads, BOOT_SPADS);
}

int sio__ntb_boot_publish(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			  const struct ntb_boot *b)
{
	uint32_t w[BOOT_SPADS] = { 0 };
	int ret;

	if ((ret = boot_place(d, i, bd)))
		return ret;
	if (b) {
		w[1] = b->name_hash;
		w[2] = b->gen;
		w[3] = (uint32_t)((b->state_size + 0xffff) >> 16) | (uint32_t)b->widx << 24;
		w[0] = BOOT_MAGIC << 16 | BOOT_VERSION << 8 | check_of(w);
	}
	/* the words after the first, then the first that vouches for them (or clears them) */
	if (words_rw(d, i, bd, SIO_NTB_LOCAL, 1, BOOT_SPADS - 1, w + 1, true) ||
	    words_rw(d, i, bd, SIO_NTB_LOCAL, 0, 1, w, true))
		return sio__err(EIO, "ntb: %s: cannot write the bootstrap's scratchpads", d->what);
	return 0;
}

int sio__ntb_unreached_publish(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			       uint64_t ports)
{
	uint32_t w[2] = { (uint32_t)ports, (uint32_t)(ports >> 32) };
	int ret = words_rw(d, i, bd, SIO_NTB_LOCAL, NTB_W_UNREACHED, 2, w, true);

	if (ret == -EOPNOTSUPP)
		return 0;	/* peers then learn it from the state's magic, as before */
	if (ret)
		return sio__err(EIO, "ntb: %s: cannot write the scratchpads of the ports out of reach",
				d->what);
	return 0;
}

bool sio__ntb_unreached(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			int port, int by)
{
	int pidx = sio__ntbdev_pidx(d, port);
	uint32_t w[2];

	if (pidx < 0 || by < 0 || by >= 64 ||
	    words_rw(d, i, bd, (uint32_t)pidx, NTB_W_UNREACHED, 2, w, false))
		return false;
	return ((uint64_t)w[1] << 32 | w[0]) >> by & 1;
}

int sio__ntb_mem_publish(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			 uint64_t addr, uint64_t size)
{
	uint32_t w[3] = { (uint32_t)addr, (uint32_t)(addr >> 32), (uint32_t)(size >> 12) };

	if (words_rw(d, i, bd, SIO_NTB_LOCAL, NTB_W_MEM, 3, w, true))
		return sio__err(EOPNOTSUPP, "ntb: %s translates outbound only: the peers learn where this node's memory is from %d scratchpads or message registers, and it has %u scratchpads, no message registers",
				d->what, spads_needed(NTB_W_MEM, 3), i->spads);
	return 0;
}

int sio__ntb_mem_of_peer(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			 uint32_t pidx, uint64_t *addr, uint64_t *size)
{
	uint32_t w[3];
	int ret = words_rw(d, i, bd, pidx, NTB_W_MEM, 3, w, false);

	if (ret)
		return ret;
	*addr = (uint64_t)w[1] << 32 | w[0];
	*size = (uint64_t)w[2] << 12;
	return *size ? 0 : -ENOENT;
}

/*
 * Decode the four words of port @port: 1 a bootstrap, 0 none (nothing, or
 * another user's words), -errno with the reason in @why when they claim
 * to be one but are not whole.
 */
static int decode(const uint32_t *w, int port, struct ntb_boot *b, char *why, size_t len)
{
	if (w[0] >> 16 != BOOT_MAGIC)
		return 0;
	if ((w[0] >> 8 & 0xff) != BOOT_VERSION) {
		snprintf(why, len, "port %d's scratchpads hold a bootstrap of layout %u, not %d (another smartio version)",
			 port, w[0] >> 8 & 0xff, BOOT_VERSION);
		return -EPROTO;
	}
	if ((w[0] & 0xff) != check_of(w) || !w[2] || !(w[3] & 0xffffff)) {
		snprintf(why, len, "port %d's scratchpads hold a damaged bootstrap (%08x %08x %08x %08x: check byte, generation or size wrong)",
			 port, w[0], w[1], w[2], w[3]);
		return -EUCLEAN;
	}
	b->port = port;
	b->name_hash = w[1];
	b->gen = w[2];
	b->state_size = (uint64_t)(w[3] & 0xffffff) << 16;
	b->widx = w[3] >> 24;
	return 1;
}

bool sio__ntb_boot_of_peer(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			   uint32_t pidx, int port, uint32_t gen)
{
	uint32_t w[BOOT_SPADS];
	struct ntb_boot b;
	char why[256];

	return !words_rw(d, i, bd, pidx, 0, BOOT_SPADS, w, false) &&
	       decode(w, port, &b, why, sizeof(why)) == 1 && b.gen == gen;
}

/* This port's and every peer's bootstrap: the one port that hosts a fabric, or -errno. */
int sio__ntb_boot_find(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
		       struct ntb_boot *out)
{
	char why[256] = "", seen[160] = "";
	int found = 0, err = 0, unheard = 0, pending = 0;

	if ((err = boot_place(d, i, bd)))
		return err;
	for (int p = -1; p < (int)i->peers; p++) {
		uint32_t w[BOOT_SPADS], pidx = p < 0 ? SIO_NTB_LOCAL : (uint32_t)p;
		struct sio_ntb_peer pr = { .pidx = pidx };
		struct ntb_boot b;
		int port = i->port, r;

		if (p >= 0 && (ntbdev_ioctl(d, SIO_NTB_IOC_PEER, &pr) || !pr.link_up)) {
			unheard++;	/* hosts nothing we can reach */
			continue;
		}
		if (p >= 0)
			port = pr.port;
		if (words_rw(d, i, bd, pidx, 0, BOOT_SPADS, w, false)) {
			/* a board's words of a peer whose link is up: on their way */
			pending += p >= 0 && bd && bd->by_msg;
			continue;
		}
		r = decode(w, port, &b, why, sizeof(why));
		if (r < 0) {
			err = r;
			continue;
		}
		if (!r) {
			if (w[0] && strlen(seen) < sizeof(seen) - 40)
				snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen), "%sport %d: %08x",
					 seen[0] ? ", " : " (", port, w[0]);
			continue;
		}
		if (found++) {
			snprintf(why, sizeof(why), "ports %d and %d both say they host a fabric: one fabric's two homes after a partition settle within a tick (docs/ntb.md, \"Two homes\"), try again; two fabrics: destroy one (smartio destroy on its node) or restart its smartio ntb serve",
				 out->port, port);
			err = -EEXIST;
			continue;
		}
		*out = b;
	}
	if (found == 1 && err != -EEXIST)
		return 0;
	if (err)
		return sio__err(-err, "ntb: %s: %s", d->what, why);
	out->unheard = seen[0] ? 0 : unheard + pending;
	if (pending)
		return sio__err(ENOENT, "ntb: no port of %s hosts a fabric as far as this node has heard: the words of %d peer(s) whose link is up have not come yet (they come by message register, and are asked for again every second), so try again",
				d->what, pending);
	if (unheard)	/* a home among them: its standby takes over, or it comes back */
		return sio__err(ENOENT, "ntb: no port of %s whose link is up hosts a fabric%s%s; %d peer(s) have no link now: if the home is one of them, its standby takes over once the link has been down for $SMARTIO_NTB_TAKEOVER_MS (docs/ntb.md), so try again; if no fabric was made, 'smartio create' makes one",
				d->what, seen, seen[0] ? ": not a smartio bootstrap)" : "", unheard);
	return sio__err(ENOENT, "ntb: no port of %s (or of the peers whose link is up) hosts a fabric%s%s; 'smartio create' makes one",
			d->what, seen, seen[0] ? ": not a smartio bootstrap)" : "");
}

int sio__ntb_side_publish(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd,
			  uint32_t word)
{
	if (words_rw(d, i, bd, SIO_NTB_LOCAL, NTB_W_SIDE, 1, &word, true))
		return sio__err(EOPNOTSUPP, "ntb: %s (%s) gives no port numbers (both sides say port %d) and has %u scratchpads, no message registers: the node services cannot tell the sides apart (they need %d)",
				d->what, i->driver, i->port, i->spads, spads_needed(NTB_W_SIDE, 1));
	return 0;
}

uint32_t sio__ntb_side_of_peer(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_board *bd)
{
	uint32_t w = 0;

	return words_rw(d, i, bd, 0, NTB_W_SIDE, 1, &w, false) ? 0 : w;
}
