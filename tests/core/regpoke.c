/* SPDX-License-Identifier: MIT */
/*
 * regpoke: write one field of a fabric's registry file, as corruption (or
 * another process of the fabric) would, for the tests of a registry that
 * defends itself. Offsets come from registry.h, so the tests follow its
 * layout.
 *
 *   regpoke REGISTRY FIELD INDEX VALUE     e.g. regpoke $R seg.owner 0 9999
 *   regpoke REGISTRY fill BYTE COUNT       COUNT bytes of BYTE from offset 0
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "registry.h"

#define F(name, tab, fld) { name, offsetof(struct sio_registry, tab[0].fld), \
			    sizeof(((struct sio_registry *)0)->tab[0]), \
			    sizeof(((struct sio_registry *)0)->tab[0].fld) }
#define H(name, fld) { name, offsetof(struct sio_registry, fld), 0, \
		       sizeof(((struct sio_registry *)0)->fld) }

static const struct field {
	const char *name;
	size_t off, stride, size;
} fields[] = {
	H("magic", magic), H("version", version), H("size", size), H("lock", lock.word),
	H("flags", flags), H("next_dev_id", next_dev_id),
	H("topo.nodes", topo.nodes), H("topo.adapters", topo.adapters),
	H("topo.windows", topo.windows), H("topo.mcast_groups", topo.mcast_groups),
	F("proc.used", procs, used), F("proc.pid", procs, pid), F("proc.node", procs, node),
	F("seg.used", segs, used), F("seg.owner", segs, owner), F("seg.node", segs, node),
	F("seg.size", segs, size), F("seg.device", segs, device), F("seg.kind", segs, kind),
	F("dev.used", devs, used), F("dev.id", devs, id), F("dev.nbars", devs, nbars),
	F("dev.excl", devs, excl), F("dev.lender", devs, lender), F("dev.owner", devs, owner),
	F("dev.bar_seg0", devs, bar_seg[0]), F("dev.restricted0", devs, restricted[0]),
	F("borrow.used", borrows, used), F("borrow.dev", borrows, dev),
	F("borrow.proc", borrows, proc),
	F("pmap.used", pmaps, used), F("pmap.window", pmaps, window),
	F("dmamap.used", dmamaps, used), F("dmamap.seg", dmamaps, seg),
	F("dmamap.window", dmamaps, window),
	F("group.used", groups, used), F("group.nsubs", groups, nsubs),
	F("group.sub_seg0", groups, sub_seg[0]),
	F("grant.used", grants, used), F("grant.dev", grants, dev),
};

static int usage(void)
{
	fprintf(stderr, "usage: regpoke REGISTRY FIELD INDEX VALUE | REGISTRY fill BYTE COUNT\nfields:");
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		fprintf(stderr, " %s", fields[i].name);
	fprintf(stderr, "\n");
	return 2;
}

int main(int argc, char **argv)
{
	const struct field *f = NULL;
	long long v;
	char buf[8];
	int fd;

	if (argc != 5)
		return usage();
	fd = open(argv[1], O_WRONLY | O_NOFOLLOW);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	if (!strcmp(argv[2], "fill")) {
		int byte = (int)strtol(argv[3], NULL, 0);
		long n = strtol(argv[4], NULL, 0);
		for (long i = 0; i < n; i++)
			if (pwrite(fd, &byte, 1, i) != 1)
				return 1;
		return 0;
	}
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!strcmp(fields[i].name, argv[2]))
			f = &fields[i];
	if (!f)
		return usage();
	v = strtoll(argv[4], NULL, 0);
	memcpy(buf, &v, sizeof(buf));	/* little-endian: the low bytes */
	if (pwrite(fd, buf, f->size, (off_t)(f->off + f->stride * strtoul(argv[3], NULL, 0))) !=
	    (ssize_t)f->size) {
		perror("pwrite");
		return 1;
	}
	close(fd);
	return 0;
}
