/* SPDX-License-Identifier: MIT */
/*
 * Prometheus's text exposition format (prom.h): families gathered in
 * memory streams, written together with their HELP and TYPE lines.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "prog.h"
#include "prom.h"

#define PROM_FAMILIES 48

struct family {
	const char *name, *type, *help;
	char *text;
	size_t len;
	FILE *f;
};

struct prom {
	FILE *out;
	int n;
	bool failed;
	struct family fam[PROM_FAMILIES];
};

struct prom *prom_open(FILE *out)
{
	struct prom *p = calloc(1, sizeof(*p));

	if (p)
		p->out = out;
	return p;
}

static struct family *family(struct prom *p, const char *name, const char *type,
			     const char *help)
{
	struct family *x;

	for (int i = 0; i < p->n; i++)
		if (!strcmp(p->fam[i].name, name))
			return &p->fam[i];
	if (p->n == PROM_FAMILIES)
		return NULL;
	x = &p->fam[p->n];
	x->f = open_memstream(&x->text, &x->len);
	if (!x->f)
		return NULL;
	x->name = name;
	x->type = type;
	x->help = help;
	p->n++;
	return x;
}

void prom_add(struct prom *p, const char *name, const char *type, const char *help,
	      const char *suffix, const char *labels, double v)
{
	struct family *x = family(p, name, type, help);

	if (!x) {
		p->failed = true;
		return;
	}
	fprintf(x->f, "%s%s%s %.17g\n", name, suffix, labels, v);
}

int prom_close(struct prom *p)
{
	int ret = p->failed ? -1 : 0;

	for (int i = 0; i < p->n; i++) {
		struct family *x = &p->fam[i];

		fclose(x->f);
		fprintf(p->out, "# HELP %s %s\n# TYPE %s %s\n%s", x->name, x->help, x->name,
			x->type, x->text ? x->text : "");
		free(x->text);
	}
	free(p);
	return ret;
}

void prom_labels(char *buf, size_t len, ...)
{
	size_t at = 0;
	const char *k;
	va_list ap;

	va_start(ap, len);
	while (at + 8 < len && (k = va_arg(ap, const char *))) {
		const char *v = va_arg(ap, const char *);

		at += (size_t)snprintf(buf + at, len - at, "%s%s=\"", at ? "," : "{", k);
		for (; *v && at + 8 < len; v++) {
			if (*v == '\\' || *v == '"')
				buf[at++] = '\\';
			if (*v == '\n') {
				buf[at++] = '\\';
				buf[at++] = 'n';
				continue;
			}
			buf[at++] = *v;
		}
		buf[at++] = '"';
	}
	va_end(ap);
	snprintf(buf + at, len - at, "%s", at ? "}" : "");
}

static void node_metrics(struct prom *p, const struct sio_fabric_status *st, const char *fab)
{
	char l[256], node[12], ad[12];

	for (int n = 0; n < st->nnodes; n++) {
		snprintf(node, sizeof(node), "%d", n);
		prom_labels(l, sizeof(l), "fabric", fab, "node", node, NULL);
		prom_add(p, "smartio_node_processes", "gauge", "Processes joined as the node.",
			 "", l, st->nodes[n].procs);
		for (int a = 0; a < st->nodes[n].adapters; a++) {
			snprintf(ad, sizeof(ad), "%d", a);
			prom_labels(l, sizeof(l), "fabric", fab, "node", node, "adapter", ad, NULL);
			prom_add(p, "smartio_link_up", "gauge",
				 "1 when the adapter's link to its switch is up, else 0.", "", l,
				 st->nodes[n].link_up[a]);
			prom_add(p, "smartio_windows_used", "gauge",
				 "Windows of the adapter in use.", "", l,
				 st->nodes[n].windows_used[a]);
			prom_add(p, "smartio_windows", "gauge", "Windows the adapter has.", "", l,
				 st->topo.windows);
		}
	}
}

static void device_metrics(struct prom *p, const struct sio_fabric_status *st, const char *fab)
{
	char l[384], id[12], lender[12];

	for (int i = 0; i < st->ndevices; i++) {
		const struct sio_device_info *d = &st->devices[i];

		snprintf(id, sizeof(id), "%u", d->id);
		snprintf(lender, sizeof(lender), "%d", d->lender);
		prom_labels(l, sizeof(l), "fabric", fab, "device", id, "name", d->name, "lender",
			    lender, NULL);
		prom_add(p, "smartio_device_borrowers", "gauge", "Processes borrowing the device.",
			 "", l, d->borrowers);
		prom_add(p, "smartio_device_dma_faults_total", "counter",
			 "DMA the fabric refused to the device (no mapping).", "", l,
			 (double)d->dma_faults);
	}
}

void prom_fabric(struct prom *p, const struct sio_fabric_status *st)
{
	double bytes = 0;
	char l[256];

	prom_labels(l, sizeof(l), "fabric", st->name, NULL);
	prom_add(p, "smartio_nodes", "gauge", "Nodes of the fabric.", "", l, st->topo.nodes);
	prom_add(p, "smartio_processes", "gauge", "Processes joined to the fabric.", "", l,
		 st->procs);
	prom_add(p, "smartio_segments", "gauge", "Segments of the fabric.", "", l,
		 st->nsegments);
	for (int i = 0; i < st->nsegments; i++)
		bytes += (double)st->segments[i].info.size;
	prom_add(p, "smartio_segment_bytes", "gauge", "Bytes of the fabric's segments.", "", l,
		 bytes);
	prom_add(p, "smartio_devices", "gauge", "Devices lent to the fabric.", "", l,
		 st->ndevices);
	prom_add(p, "smartio_borrows", "gauge", "Borrows of the fabric's devices.", "", l,
		 st->nborrows);
	node_metrics(p, st, st->name);
	device_metrics(p, st, st->name);
}

int prom_fabric_write(FILE *out, const struct sio_fabric_status *st)
{
	struct prom *p = prom_open(out);

	if (!p)
		return prog_fail("out of memory");
	prom_fabric(p, st);
	if (prom_close(p) || fflush(out))
		return prog_fail("cannot write the metrics");
	return 0;
}
