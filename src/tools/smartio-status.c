/* SPDX-License-Identifier: MIT */
/*
 * smartio status: a fabric at one moment, as text, JSON or a Graphviz
 * picture; --watch redraws it every few seconds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <smartio/smartio.h>
#include "prog.h"
#include "prom.h"
#include "smartio-cmd.h"

static const char *kind_name(int k)
{
	return k == SIO_SEG_BAR ? "bar" : k == SIO_SEG_GPU ? "gpu" : "ram";
}

static struct json_object *nodes_json(const struct sio_fabric_status *st)
{
	struct json_object *a = json_object_new_array();

	for (int n = 0; n < st->nnodes; n++) {
		const struct sio_node_info *ni = &st->nodes[n];
		struct json_object *o = pj_push_obj(a), *ad = pj_arr(o, "adapters");

		pj_int(o, "id", n);
		pj_int(o, "procs", ni->procs);
		for (int i = 0; i < ni->adapters; i++) {
			struct json_object *x = pj_push_obj(ad);

			pj_int(x, "switch", ni->switch_id[i]);
			pj_bool(x, "link_up", ni->link_up[i]);
			pj_int(x, "windows_used", ni->windows_used[i]);
		}
	}
	return a;
}

static void segments_json(struct json_object *o, const struct sio_fabric_status *st)
{
	struct json_object *a = pj_arr(o, "segments");

	for (int i = 0; i < st->nsegments; i++) {
		const struct sio_segment_info *sg = &st->segments[i].info;
		struct json_object *s = pj_push_obj(a);

		pj_int(s, "node", sg->node);
		pj_u64(s, "id", sg->id);
		pj_u64(s, "size", sg->size);
		pj_str(s, "kind", kind_name(sg->kind));
		pj_str(s, "name", sg->name);
		pj_int(s, "pid", st->segments[i].owner_pid);
		pj_bool(s, "hugepages", sg->hugepages);
		if (sg->reach[0])
			pj_str(s, "reach", sg->reach);
		if (sg->kind == SIO_SEG_BAR) {
			pj_int(s, "device", sg->device);
			pj_int(s, "bar", sg->bar);
		}
	}
}

static void devices_json(struct json_object *o, const struct sio_fabric_status *st)
{
	struct json_object *a = pj_arr(o, "devices");
	char cls[16];

	for (int i = 0; i < st->ndevices; i++) {
		const struct sio_device_info *d = &st->devices[i];
		struct json_object *x = pj_push_obj(a);

		snprintf(cls, sizeof(cls), "0x%06x", d->class_code);
		pj_u64(x, "id", d->id);
		pj_int(x, "lender", d->lender);
		pj_str(x, "class", cls);
		pj_str(x, "name", d->name);
		if (d->bdf[0])
			pj_str(x, "bdf", d->bdf);
		pj_int(x, "borrowers", d->borrowers);
		pj_bool(x, "exclusive", d->exclusive);
		pj_u64(x, "dma_faults", d->dma_faults);
		if (d->relayed) {
			pj_u64(x, "relayed", d->relayed);
			pj_u64(x, "relay_wait_ns", d->relay_wait_ns);
			pj_u64(x, "relay_fwd_ns", d->relay_fwd_ns);
		}
	}
	a = pj_arr(o, "borrows");
	for (int i = 0; i < st->nborrows; i++) {
		struct json_object *b = pj_push_obj(a);

		pj_u64(b, "device", st->borrows[i].device);
		pj_int(b, "pid", st->borrows[i].pid);
		pj_int(b, "node", st->borrows[i].node);
		pj_bool(b, "exclusive", st->borrows[i].exclusive);
		pj_str(b, "doorbells", st->borrows[i].doorbells[0] ? st->borrows[i].doorbells : "mapped");
	}
}

struct json_object *sio_tool_status_json(const struct sio_fabric_status *st)
{
	const struct sio_topology *t = &st->topo;
	struct json_object *o = json_object_new_object();

	pj_str(o, "fabric", st->name);
	pj_timestamp(o);
	pj_str(o, "backend", st->backend);
	pj_str(o, "topology", prog_topo_name(t->kind));
	pj_int(o, "nodes", t->nodes);
	pj_int(o, "adapters", t->adapters);
	pj_int(o, "windows", t->windows);
	pj_bool(o, "latency_model", t->latency_model);
	pj_int(o, "procs", st->procs);
	json_object_object_add(o, "node", nodes_json(st));
	segments_json(o, st);
	devices_json(o, st);
	return o;
}

void sio_tool_status_text(FILE *o, const struct sio_fabric_status *st)
{
	const struct sio_topology *t = &st->topo;

	fprintf(o, "fabric %s: %s, %d nodes, %d adapter(s) per node, %d windows per adapter, "
		"latency model %s\n", st->name, prog_topo_name(t->kind), t->nodes, t->adapters,
		t->windows, t->latency_model ? "on (modelled, not measured)" : "off");
	fprintf(o, "%-6s %-8s %-10s %-14s %s\n", "node", "adapter", "switch", "link", "windows used");
	for (int n = 0; n < st->nnodes; n++)
		for (int a = 0; a < st->nodes[n].adapters; a++)
			fprintf(o, "%-6d %-8d %-10d %-14s %d/%d\n", n, a, st->nodes[n].switch_id[a],
				st->nodes[n].link_up[a] ? "up" : "DOWN", st->nodes[n].windows_used[a],
				t->windows);
	fprintf(o, "\nsegments:\n%-6s %-10s %-12s %-5s %-8s %s\n", "node", "id", "size", "kind",
		"pid", "name");
	for (int i = 0; i < st->nsegments; i++) {
		const struct sio_segment_info *sg = &st->segments[i].info;

		/* ids in hex, as the programs' logs print them */
		fprintf(o, "%-6d 0x%08x %-12llu %-5s %-8d %s\n", sg->node, sg->id,
			(unsigned long long)sg->size, kind_name(sg->kind), st->segments[i].owner_pid,
			sg->name);
	}
	for (int i = 0; i < st->nsegments; i++) {	/* how other kernels reach each */
		const struct sio_segment_info *sg = &st->segments[i].info;

		if (sg->reach[0])
			fprintf(o, "segment 0x%08x of node %d: %s\n", sg->id, sg->node, sg->reach);
	}
	fprintf(o, "\ndevices:\n%-4s %-7s %-9s %-16s %-10s %s\n", "id", "lender", "class", "name",
		"borrowers", "dma faults");
	for (int i = 0; i < st->ndevices; i++) {
		const struct sio_device_info *d = &st->devices[i];

		fprintf(o, "%-4u %-7d 0x%06x  %-16s %d%-9s %llu\n", d->id, d->lender, d->class_code,
			d->name, d->borrowers, d->exclusive ? " (excl)" : "",
			(unsigned long long)d->dma_faults);
	}
	for (int i = 0; i < st->ndevices; i++) {
		const struct sio_device_info *d = &st->devices[i];

		if (d->relayed)
			fprintf(o, "device %u: its relay forwarded %llu doorbells of other kernels: waited at most %llu us, wrote BAR0 in %llu us (all of them)\n",
				d->id, (unsigned long long)d->relayed,
				(unsigned long long)(d->relay_wait_ns / 1000),
				(unsigned long long)(d->relay_fwd_ns / 1000));
	}
	fprintf(o, "\nborrows:\n");
	for (int i = 0; i < st->nborrows; i++)
		fprintf(o, "  device %u by pid %d on node %d%s%s%s\n", st->borrows[i].device,
			st->borrows[i].pid, st->borrows[i].node,
			st->borrows[i].exclusive ? " (exclusive)" : "",
			st->borrows[i].doorbells[0] ? ", doorbells " : "", st->borrows[i].doorbells);
}

/* A Graphviz string: quotes and backslashes escaped. */
static void dot_str(FILE *o, const char *s)
{
	fputc('"', o);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', o);
		fputc((unsigned char)*s < 0x20 ? ' ' : *s, o);
	}
	fputc('"', o);
}

/*
 * The picture: nodes (boxes), switches (diamonds) and the links between
 * them (red and dashed when down, labelled with the windows in use), the
 * devices (ellipses) inside their lender's cluster, and a dotted edge from
 * each borrowing node to what it borrows.
 */
void sio_tool_status_dot(FILE *o, const struct sio_fabric_status *st)
{
	const struct sio_topology *t = &st->topo;
	int nsw = t->switches;
	bool *sw;

	/* each adapter plane has switches of its own: the second plane's ids
	 * go past t->switches */
	for (int n = 0; n < st->nnodes; n++)
		for (int a = 0; a < st->nodes[n].adapters; a++)
			if (st->nodes[n].switch_id[a] > nsw)
				nsw = st->nodes[n].switch_id[a];
	sw = calloc((size_t)nsw + 1, sizeof(*sw));

	fprintf(o, "graph ");
	dot_str(o, st->name);
	fprintf(o, " {\n  graph [label=");
	dot_str(o, st->name);
	fprintf(o, ", labelloc=t, fontname=Helvetica];\n  node [fontname=Helvetica];\n");
	for (int n = 0; n < st->nnodes; n++) {
		fprintf(o, "  subgraph cluster_n%d { label=\"node %d\"; style=rounded;\n"
			   "    n%d [shape=box, label=\"node %d\\n%d process(es)\"];\n", n, n, n, n,
			st->nodes[n].procs);
		for (int i = 0; i < st->ndevices; i++) {
			const struct sio_device_info *d = &st->devices[i];
			char label[128];

			if (d->lender != n)
				continue;
			snprintf(label, sizeof(label), "device %u: %s\nclass 0x%06x%s", d->id, d->name,
				 d->class_code, d->dma_faults ? "\nDMA faults!" : "");
			fprintf(o, "    d%u [shape=ellipse, label=", d->id);
			dot_str(o, label);
			fprintf(o, "];\n    n%d -- d%u;\n", n, d->id);
		}
		fprintf(o, "  }\n");
	}
	for (int n = 0; n < st->nnodes; n++)
		for (int a = 0; a < st->nodes[n].adapters; a++) {
			int s = st->nodes[n].switch_id[a];
			bool up = st->nodes[n].link_up[a];

			if (t->kind == SIO_TOPO_B2B) {	/* the two nodes, cabled directly */
				if (n == 0)
					fprintf(o, "  n0 -- n1 [label=\"adapter %d\"%s];\n", a,
						up ? "" : ", color=red, style=dashed");
				continue;
			}
			if (sw && s >= 0 && s <= nsw)
				sw[s] = true;
			fprintf(o, "  n%d -- s%d [label=\"a%d: %d/%d win\"%s];\n", n, s, a,
				st->nodes[n].windows_used[a], t->windows,
				up ? "" : ", color=red, style=dashed, fontcolor=red");
		}
	for (int s = 0; sw && s <= nsw; s++)
		if (sw[s])
			fprintf(o, "  s%d [shape=diamond, label=\"switch %d\"];\n", s, s);
	if (t->kind == SIO_TOPO_CASCADE) {	/* the leaves hang off the top switch */
		fprintf(o, "  top [shape=diamond, label=\"top switch\"];\n");
		for (int s = 0; sw && s <= nsw; s++)
			if (sw[s])
				fprintf(o, "  top -- s%d;\n", s);
	}
	for (int i = 0; i < st->nborrows; i++)
		fprintf(o, "  n%d -- d%u [style=dotted, color=blue, label=\"pid %d%s\"];\n",
			st->borrows[i].node, st->borrows[i].device, st->borrows[i].pid,
			st->borrows[i].exclusive ? " (excl)" : "");
	fprintf(o, "}\n");
	free(sw);
}

/* One look at fabric @name, written as @fmt says. Return: 0 or PROG_FAIL (said). */
int sio_tool_status_once(const char *name, enum sio_tool_fmt fmt)
{
	struct sio_fabric_status *st;
	struct sio_fabric *f;
	int ret;

	if (prog_join(name, -1, &f))	/* -1: $SMARTIO_NODE, or the backend's (ntb: this kernel's port) */
		return PROG_FAIL;
	ret = sio_fabric_status_get(f, &st);
	if (!ret)
		prog_status_without_me(f, st);
	sio_fabric_close(f);
	if (ret)
		return prog_fail("status: %s", sio_errmsg());
	if (fmt == SIO_TOOL_JSON)
		ret = prog_json_print(stdout, sio_tool_status_json(st));
	else if (fmt == SIO_TOOL_DOT)
		sio_tool_status_dot(stdout, st);
	else if (fmt == SIO_TOOL_PROM)
		ret = prom_fabric_write(stdout, st);
	else
		sio_tool_status_text(stdout, st);
	sio_fabric_status_close(st);
	fflush(stdout);
	return ret;
}
