/* SPDX-License-Identifier: MIT */
/*
 * The bootstrap of an ntb fabric: the port that hosts it (its state at the
 * start of that port's memory) says so in its own last four scratchpads,
 * which every peer reads (ntb_peer_spad_read):
 *
 *   spads - 4   'S' 'F', a layout version, a check byte over the next three
 *   spads - 3   the fabric's name, hashed
 *   spads - 2   its generation: new at every create, also in the header
 *   spads - 1   the state's size in 64 KiB | the inbound window it is in << 24
 *
 * and two more, before them, that every node service keeps (hosting or not):
 *
 *   spads - 6   the ports (0 to 31, a bit each) this port could not export
 *               its memory to: the hardware driver refused their translation
 *   spads - 5   the same, ports 32 to 63
 *
 * so that a peer of a home that could not export the state to it says so
 * instead of reading what an untranslated window reaches.
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

static int spads_rw(struct ntbdev *d, uint32_t pidx, uint32_t first, uint32_t n, uint32_t *w,
		    bool write)
{
	for (uint32_t i = 0; i < n; i++) {
		struct sio_ntb_spad s = { .pidx = pidx, .sidx = first + i, .value = w[i] };
		int ret = ntbdev_ioctl(d, write ? SIO_NTB_IOC_SPAD_WRITE : SIO_NTB_IOC_SPAD_READ, &s);

		if (ret)
			return ret;
		w[i] = s.value;
	}
	return 0;
}

int sio__ntb_boot_publish(struct ntbdev *d, const struct sio_ntb_info *i, const struct ntb_boot *b)
{
	uint32_t w[BOOT_SPADS] = { 0 };
	int ret;

	if (i->spads < BOOT_SPADS)
		return sio__err(EOPNOTSUPP, "ntb: %s has %u scratchpads; a fabric's bootstrap needs %d",
				d->what, i->spads, BOOT_SPADS);
	if (b) {
		w[1] = b->name_hash;
		w[2] = b->gen;
		w[3] = (uint32_t)((b->state_size + 0xffff) >> 16) | (uint32_t)b->widx << 24;
		w[0] = BOOT_MAGIC << 16 | BOOT_VERSION << 8 | check_of(w);
	}
	/* the words after the first, then the first that vouches for them (or clears them) */
	if ((ret = spads_rw(d, SIO_NTB_LOCAL, i->spads - BOOT_SPADS + 1, BOOT_SPADS - 1, w + 1, true)) ||
	    (ret = spads_rw(d, SIO_NTB_LOCAL, i->spads - BOOT_SPADS, 1, w, true)))
		return sio__err(EIO, "ntb: %s: cannot write the bootstrap's scratchpads", d->what);
	return 0;
}

int sio__ntb_unreached_publish(struct ntbdev *d, const struct sio_ntb_info *i, uint64_t ports)
{
	uint32_t w[2] = { (uint32_t)ports, (uint32_t)(ports >> 32) };

	if (i->spads < BOOT_SPADS + 2)
		return 0;	/* peers then learn it from the state's magic, as before */
	if (spads_rw(d, SIO_NTB_LOCAL, i->spads - BOOT_SPADS - 2, 2, w, true))
		return sio__err(EIO, "ntb: %s: cannot write the scratchpads of the ports out of reach",
				d->what);
	return 0;
}

bool sio__ntb_unreached(struct ntbdev *d, const struct sio_ntb_info *i, int port, int by)
{
	int pidx = sio__ntbdev_pidx(d, port);
	uint32_t w[2];

	if (pidx < 0 || by < 0 || by >= 64 || i->spads < BOOT_SPADS + 2 ||
	    spads_rw(d, (uint32_t)pidx, i->spads - BOOT_SPADS - 2, 2, w, false))
		return false;
	return ((uint64_t)w[1] << 32 | w[0]) >> by & 1;
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

/* This port's and every peer's bootstrap: the one port that hosts a fabric, or -errno. */
int sio__ntb_boot_find(struct ntbdev *d, const struct sio_ntb_info *i, struct ntb_boot *out)
{
	char why[256] = "", seen[160] = "";
	int found = 0, err = 0;

	if (i->spads < BOOT_SPADS)
		return sio__err(EOPNOTSUPP, "ntb: %s has %u scratchpads; a fabric's bootstrap needs %d",
				d->what, i->spads, BOOT_SPADS);
	for (int p = -1; p < (int)i->peers; p++) {
		uint32_t w[BOOT_SPADS], pidx = p < 0 ? SIO_NTB_LOCAL : (uint32_t)p;
		struct sio_ntb_peer pr = { .pidx = pidx };
		struct ntb_boot b;
		int port = i->port, r;

		if (p >= 0 && (ntbdev_ioctl(d, SIO_NTB_IOC_PEER, &pr) || !pr.link_up))
			continue;	/* a peer we cannot hear from hosts nothing we can reach */
		if (p >= 0)
			port = pr.port;
		if (spads_rw(d, pidx, i->spads - BOOT_SPADS, BOOT_SPADS, w, false))
			continue;
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
			snprintf(why, sizeof(why), "ports %d and %d both say they host a fabric: destroy one (smartio destroy on its node) or restart its smartio ntb serve",
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
	return sio__err(ENOENT, "ntb: no port of %s (or of the peers whose link is up) hosts a fabric%s%s",
			d->what, seen, seen[0] ? ": not a smartio bootstrap)" : "");
}
