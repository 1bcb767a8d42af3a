/* SPDX-License-Identifier: MIT */
/*
 * Device-side DMA on the simulated fabric: bus address -> device mapping ->
 * (window ->) segment -> this process's mapping of the segment's pages.
 * The device's mappings are cached per registration and reloaded when the
 * registry's map generation moves, so the hot path is a load, a compare and
 * a range check.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

static const struct sio_gpu_dma_plugin *gpu_ops;
static pthread_once_t gpu_once = PTHREAD_ONCE_INIT;
static char gpu_why[384];	/* why the plugin is not there */
static bool gpu_batch;		/* writes into GPU memory may be deferred */

/*
 * Load the GPU DMA plugin, once per process. A failure is printed once, with
 * dlerror()'s reason, and kept for every later DMA's error message.
 */
static void gpu_load(void)
{
	const char *p = getenv("SMARTIO_GPU_PLUGIN");
	const char *name = p && *p ? p : "libsmartio-gpudma.so";
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	const struct sio_gpu_dma_plugin *ops = NULL;
	const char *err;

	if (h) {
		dlerror();
		ops = dlsym(h, SIO_GPU_DMA_PLUGIN_SYMBOL);
		if (!ops || !ops->copy) {
			err = dlerror();
			snprintf(gpu_why, sizeof(gpu_why), "%s exports no %s (built from other "
				 "sources?): %s", name, SIO_GPU_DMA_PLUGIN_SYMBOL, err ? err : "no copy op");
			ops = NULL;
		}
	} else {
		err = dlerror();
		snprintf(gpu_why, sizeof(gpu_why), "cannot load %s: %s", name,
			 err ? err : "unknown error");
	}
	if (!ops)
		fprintf(stderr, "smartio: DMA to GPU memory is not possible in this process: %s "
			"(set SMARTIO_GPU_PLUGIN to the path of libsmartio-gpudma.so)\n", gpu_why);
	p = getenv("SMARTIO_GPU_DMA_BATCH");
	gpu_batch = ops && ops->copy_later && ops->land && !(p && !strcmp(p, "0"));
	__atomic_store_n(&gpu_ops, ops, __ATOMIC_RELEASE);
}

struct sio_dma_cache_ent {
	uint64_t bus, size;
	int seg, group;
	uint64_t seg_gen;
	int ln[2], la[2];
	uint32_t rt_ns;
	char *va;
	bool gpu;			/* GPU memory: no host pointer */
};

/* A GPU segment of the registry as its plugin sees it. */
static struct sio_gpu_seg gpu_seg(const struct reg_seg *s, int slot)
{
	struct sio_gpu_seg g = { .slot = (uint32_t)slot, .id = s->id, .gen = s->gen,
				 .size = s->size, .gpu = s->gpu };

	memcpy(g.handle, s->gpu_handle, sizeof(g.handle));
	return g;
}

/* Registry lock held: the GPU segments that exist now, for the plugin's forget(). */
static void gpu_live(struct sio_devreg *reg)
{
	const struct sio_registry *r = reg->f->reg;

	reg->ngpu = 0;
	for (int s = 0; s < SIO_MAX_SEGS; s++) {
		if (!r->segs[s].used || r->segs[s].kind != SIO_SEG_GPU)
			continue;
		if (reg->ngpu == reg->gpu_cap) {
			int cap = reg->gpu_cap ? 2 * reg->gpu_cap : 16;
			void *p = realloc(reg->gpu, cap * sizeof(*reg->gpu));
			if (!p)
				return;	/* a shorter list only closes more: reopened on use */
			reg->gpu = p;
			reg->gpu_cap = cap;
		}
		reg->gpu[reg->ngpu++] = gpu_seg(&r->segs[s], s);
	}
}

static int reload(struct sio_devreg *reg)
{
	struct sio_fabric *f = reg->f;
	struct sio_registry *r = f->reg;
	const struct sio_gpu_dma_plugin *ops;
	bool gpu = false;
	int n = 0, ret;

	ret = sio__lock(f);
	if (ret)
		return ret;	/* the old cache stays; the next DMA tries again */
	reg->cache_gen = atomic_load_explicit(&r->map_gen, memory_order_acquire);
	for (int m = 0; m < SIO_MAX_DMAMAPS; m++) {
		const struct reg_dmamap *d = &r->dmamaps[m];
		struct sio_dma_cache_ent *e;

		const struct reg_seg *sg = d->seg >= 0 ? reg_seg_at(r, d->seg) : NULL;

		if (!d->used || d->dev != reg->slot)
			continue;
		/* Shared memory is input: a mapping must name a real segment (or
		 * group) and lie inside it, or a DMA through it would stray. */
		if (d->seg >= 0 ? !sg || d->size > sg->size : !reg_group_at(r, d->group))
			continue;
		if (n == reg->cache_cap) {
			int cap = reg->cache_cap ? 2 * reg->cache_cap : 32;
			void *p = realloc(reg->cache, cap * sizeof(*reg->cache));
			if (!p)
				break;
			reg->cache = p;
			reg->cache_cap = cap;
		}
		e = &reg->cache[n];
		*e = (struct sio_dma_cache_ent){ .bus = d->bus, .size = d->size, .seg = d->seg,
						 .group = d->group, .seg_gen = d->seg_gen,
						 .ln = { d->link_node[0], d->link_node[1] },
						 .la = { d->link_adapter[0], d->link_adapter[1] },
						 .rt_ns = d->rt_ns };
		if (sg && sg->kind == SIO_SEG_GPU) {
			e->gpu = true;
			gpu = true;
		} else if (d->seg >= 0 && !(e->va = sio__segmap(f, d->seg, d->seg_gen)))
			continue;
		n++;
	}
	reg->ncache = n;
	reg->mru = -1;
	ops = __atomic_load_n(&gpu_ops, __ATOMIC_ACQUIRE);
	if (gpu || (ops && ops->forget))
		gpu_live(reg);
	sio__unlock(f);
	/*
	 * GPU memory mapped for this device: load the plugin now, which also
	 * starts CUDA here (seconds, at worst) while the host sets up its
	 * queues, not at the first command that GPU threads wait for.
	 */
	if (gpu)
		pthread_once(&gpu_once, gpu_load);
	/* Mappings moved: the plugin closes its IPC mappings of GPU segments
	 * that went away (their exporter may cudaFree them now). */
	ops = __atomic_load_n(&gpu_ops, __ATOMIC_ACQUIRE);
	if (ops && ops->forget)
		ops->forget(reg->gpu, reg->ngpu);
	return 0;
}

static bool link_ok(struct sio_registry *r, const struct sio_dma_cache_ent *e)
{
	for (int i = 0; i < 2; i++)
		if (e->ln[i] >= 0 && !atomic_load_explicit(&r->nodes[e->ln[i]].link_up[e->la[i]],
							   memory_order_relaxed))
			return false;
	return true;
}

static struct sio_dma_cache_ent *lookup(struct sio_devreg *reg, uint64_t bus, size_t len)
{
	struct sio_registry *r = reg->f->reg;

	for (int pass = 0; pass < 2; pass++) {
		if (pass || atomic_load_explicit(&r->map_gen, memory_order_acquire) != reg->cache_gen)
			reload(reg);
		if (reg->mru >= 0) {
			struct sio_dma_cache_ent *e = &reg->cache[reg->mru];
			if (bus >= e->bus && bus - e->bus + len <= e->size && bus - e->bus < e->size)
				return e;
		}
		for (int i = 0; i < reg->ncache; i++) {
			struct sio_dma_cache_ent *e = &reg->cache[i];
			if (bus >= e->bus && bus - e->bus < e->size && bus - e->bus + len <= e->size) {
				reg->mru = i;
				return e;
			}
		}
	}
	return NULL;
}

static int fault(struct sio_devreg *reg, uint64_t bus)
{
	struct reg_dev *v = &reg->f->reg->devs[reg->slot];

	atomic_fetch_add(&v->dma_faults, 1);
	atomic_store(&v->last_fault, bus);
	return sio__err(EFAULT, "DMA fault: device %u has nothing mapped at bus address 0x%llx",
			reg->id, (unsigned long long)bus);
}

static int linkdown(struct sio_devreg *reg, uint64_t bus)
{
	atomic_fetch_add(&reg->f->reg->devs[reg->slot].dma_linkdown, 1);
	return sio__err(ENOLINK, "DMA to 0x%llx from device %u crosses a link that is down",
			(unsigned long long)bus, reg->id);
}

int sio_dma_ptr(struct sio_devreg *reg, uint64_t bus, size_t len, bool write, void **ptr)
{
	struct sio_dma_cache_ent *e;

	if (!reg || !ptr || !len)
		return sio__err(EINVAL, "bad arguments to sio_dma_ptr");
	e = lookup(reg, bus, len);
	if (!e || e->group >= 0)	/* group addresses take posted writes only */
		return fault(reg, bus);
	if (!link_ok(reg->f->reg, e))
		return linkdown(reg, bus);
	if (e->gpu)
		return sio__err(EOPNOTSUPP, "bus address 0x%llx is GPU memory: no host pointer, use sio_dma_read/sio_dma_write",
				(unsigned long long)bus);
	if (!write)
		sio__delay_ns(e->rt_ns);
	*ptr = e->va + (bus - e->bus);
	return 0;
}

static int gpu_copy(struct sio_devreg *reg, struct sio_dma_cache_ent *e, uint64_t bus, void *buf,
		    size_t len, bool to_gpu)
{
	struct sio_fabric *f = reg->f;
	struct sio_gpu_seg g;
	struct reg_seg snap;
	int ret;

	pthread_once(&gpu_once, gpu_load);
	if (!gpu_ops)
		return sio__err(EOPNOTSUPP, "DMA to GPU memory needs the smartio GPU plugin: %s",
				gpu_why);
	/*
	 * The segment as it is now, taken under the lock: if its slot was freed
	 * (or reused) since the mapping was cached, nothing is copied, and the
	 * plugin opens the handle of exactly the generation that was mapped.
	 */
	if (e->seg < 0 || e->seg >= SIO_MAX_SEGS)
		return fault(reg, bus);
	ret = sio__lock(f);
	if (ret)
		return ret;
	snap = f->reg->segs[e->seg];
	sio__unlock(f);
	if (!snap.used || snap.gen != e->seg_gen || snap.kind != SIO_SEG_GPU)
		return fault(reg, bus);
	if (!to_gpu)
		sio__delay_ns(e->rt_ns);
	g = gpu_seg(&snap, e->seg);
	if (to_gpu && reg->batch && gpu_batch) {
		ret = gpu_ops->copy_later(&g, bus - e->bus, buf, len);
		reg->later |= !ret;
	} else {
		ret = gpu_ops->copy(&g, bus - e->bus, buf, len, to_gpu);
	}
	if (ret)
		return sio__err(-ret, "DMA %s GPU segment %u (GPU %d) at bus 0x%llx failed: %s "
				"(the plugin's messages are on stderr)", to_gpu ? "to" : "from",
				snap.id, snap.gpu, (unsigned long long)bus, strerror(-ret));
	return 0;
}

int sio_dma_read(struct sio_devreg *reg, uint64_t bus, void *buf, size_t len)
{
	struct sio_dma_cache_ent *e;
	void *p;
	int ret;

	if (!buf || !reg || !len)
		return sio__err(EINVAL, "bad arguments to sio_dma_read");
	e = lookup(reg, bus, len);
	if (e && e->gpu && link_ok(reg->f->reg, e))
		return gpu_copy(reg, e, bus, buf, len, false);
	ret = sio_dma_ptr(reg, bus, len, false, &p);
	if (ret == -ENOLINK)
		memset(buf, 0xff, len);	/* PCIe completes reads on a dead link with all ones */
	else if (!ret)
		memcpy(buf, p, len);
	return ret;
}

static int mcast_write(struct sio_devreg *reg, struct sio_dma_cache_ent *e, uint64_t bus,
		       const void *buf, size_t len)
{
	struct sio_fabric *f = reg->f;
	struct sio_registry *r = f->reg;
	const struct reg_group *g = reg_group_at(r, e->group);
	int lender = r->devs[reg->slot].lender, ret;
	uint64_t end = bus - e->bus + len;

	if (!g)
		return fault(reg, bus);
	ret = sio__lock(f);
	if (ret)
		return ret;
	for (int i = 0; i < g->nsubs && i < SIO_MAX_SUBS; i++) {
		const struct reg_seg *sg = reg_seg_at(r, g->sub_seg[i]);
		int s = g->sub_seg[i], node;
		struct sio_path path;
		char *va;

		if (!sg || !sg->used || sg->gen != g->sub_gen[i] || sg->size < end)
			continue;
		node = sg->node;
		if (node != lender && (sio__route(f, lender, node, -1, false, false, &path) || !path.up))
			continue;	/* that branch of the tree is down: dropped there */
		if ((va = sio__segmap(f, s, g->sub_gen[i])))
			memcpy(va + (bus - e->bus), buf, len);
	}
	sio__unlock(f);
	return 0;
}

int sio_dma_write(struct sio_devreg *reg, uint64_t bus, const void *buf, size_t len)
{
	struct sio_dma_cache_ent *e;

	if (!reg || !buf || !len)
		return sio__err(EINVAL, "bad arguments to sio_dma_write");
	e = lookup(reg, bus, len);
	if (!e)
		return fault(reg, bus);
	if (e->group >= 0)
		return mcast_write(reg, e, bus, buf, len);
	if (!link_ok(reg->f->reg, e))
		return linkdown(reg, bus);	/* posted: dropped, the device is not told */
	if (e->gpu)
		return gpu_copy(reg, e, bus, (void *)buf, len, true);
	memcpy(e->va + (bus - e->bus), buf, len);
	return 0;
}

void sio_dma_batch_begin(struct sio_devreg *reg)
{
	if (reg)
		reg->batch = true;
}

bool sio_dma_batch_pending(const struct sio_devreg *reg)
{
	return reg && reg->later;
}

int sio_dma_batch_end(struct sio_devreg *reg)
{
	int ret;

	if (!reg)
		return sio__err(EINVAL, "sio_dma_batch_end: no registration");
	reg->batch = false;
	if (!reg->later)
		return 0;
	reg->later = false;
	ret = gpu_ops->land();
	if (ret)
		return sio__err(-ret, "deferred DMA into GPU memory failed: %s (the plugin's "
				"messages are on stderr)", strerror(-ret));
	return 0;
}

int sio_dma_stats(struct sio_devreg *reg, struct sio_dma_stats *out)
{
	const struct reg_dev *v;

	if (!reg || !out)
		return sio__err(EINVAL, "registration or out pointer is NULL");
	v = &reg->f->reg->devs[reg->slot];
	out->faults = atomic_load(&v->dma_faults);
	out->linkdown = atomic_load(&v->dma_linkdown);
	out->last_fault_addr = atomic_load(&v->last_fault);
	return 0;
}
