/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_NVME_BARRIER_H
#define SMARTIO_NVME_BARRIER_H

/**
 * DOC: Barriers between the host (or GPU) and a device doing DMA
 *
 * What a queue pair needs, per architecture, and nothing else:
 *
 * - sio_nvme_wmb(): stores before it (SQ entries, PRP lists) reach memory
 *   the device reads before stores after it (the SQ tail doorbell).
 * - sio_nvme_rmb(): loads before it (a completion's phase tag) complete
 *   before loads and stores after it (the rest of the entry; the CQ head
 *   doorbell that hands the slot back).
 * - sio_nvme_mb(): stores before it are visible before loads after it (a
 *   shadow doorbell store before the EventIdx load that decides whether
 *   the MMIO doorbell is rung too).
 * - sio_nvme_mmio_write32(): one untorn 32-bit store to a register.
 * - sio_nvme_cpu_relax(): a hint inside a spin loop.
 *
 * x86-64 (and i386): stores are not reordered with stores, nor loads with
 * loads or later stores, so rmb only stops the compiler. wmb is SFENCE,
 * which also drains write-combining buffers (an SQ in a CMB mapped
 * write-combined); Linux's writel() does without it for SQs in host memory.
 *
 * aarch64: the device is an observer in the outer-shareable domain, so the
 * barriers are the outer-shareable ones Linux uses for DMA memory:
 * wmb = "dmb oshst" (Linux dma_wmb(), which writel() issues before the
 * store), rmb = "dmb oshld" (Linux dma_rmb(), between nvme_cqe_pending()
 * and reading the entry). A DMB LD orders the loads before it against later
 * loads and stores, which is also what the CQ head doorbell needs.
 * Inner-shareable barriers (what C11 fences compile to) are not enough.
 *
 * CUDA device code: __threadfence_system() orders the thread's accesses to
 * memory as seen by the host and peers, both ways.
 *
 * Any other architecture is refused at compile time rather than assumed.
 * The header needs only <stdint.h> (through types.h), so nvcc takes it.
 */

#include <smartio/nvme/types.h>

#if !defined(__CUDA_ARCH__) && !defined(__x86_64__) && !defined(__i386__) && \
	!defined(__aarch64__)
#error "smartio/nvme/barrier.h: no DMA barriers for this architecture (x86, aarch64, CUDA)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** sio_nvme_wmb() - order stores to DMA memory before a later doorbell store */
static inline SIO_HD void sio_nvme_wmb(void)
{
#if defined(__CUDA_ARCH__)
	__threadfence_system();
#elif defined(__aarch64__)
	__asm__ __volatile__("dmb oshst" ::: "memory");
#else
	__asm__ __volatile__("sfence" ::: "memory");
#endif
}

/** sio_nvme_rmb() - order a load of DMA memory before later loads and stores */
static inline SIO_HD void sio_nvme_rmb(void)
{
#if defined(__CUDA_ARCH__)
	__threadfence_system();
#elif defined(__aarch64__)
	__asm__ __volatile__("dmb oshld" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/** sio_nvme_mb() - order stores to DMA memory before later loads of it */
static inline SIO_HD void sio_nvme_mb(void)
{
#if defined(__CUDA_ARCH__)
	__threadfence_system();
#elif defined(__aarch64__)
	__asm__ __volatile__("dmb osh" ::: "memory");
#else
	__asm__ __volatile__("mfence" ::: "memory");
#endif
}

/** sio_nvme_mmio_write32() - store a 32-bit register (a doorbell), untorn */
static inline SIO_HD void sio_nvme_mmio_write32(volatile uint32_t *reg, uint32_t v)
{
#if defined(__CUDA_ARCH__)
	*reg = v;
#else
	__atomic_store_n(reg, v, __ATOMIC_RELAXED);
#endif
}

/** sio_nvme_cpu_relax() - tell the CPU we are spinning */
static inline SIO_HD void sio_nvme_cpu_relax(void)
{
#if defined(__CUDA_ARCH__)
	/* nothing: the caller bounds its loop */
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("pause" ::: "memory");
#endif
}

#ifdef __cplusplus
}
#endif
#endif
