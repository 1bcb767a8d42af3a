/* SPDX-License-Identifier: MIT */
#ifndef SIO_SUPPORT_ALIGN_H
#define SIO_SUPPORT_ALIGN_H

/**
 * DOC: rounding up to an alignment
 *
 * Sizes and offsets that the fabric maps, lends or exports are whole
 * pages, and some layouts align to larger blocks. The rounding is written
 * here once, as libvfn's support/align.h does, rather than as a mask at
 * each call. In no library's ABI (the ``sio__`` prefix).
 */

#include <stdint.h>

/* The page that segments, BARs and windows are counted in. */
#define SIO__PAGE_SIZE		4096ull

/**
 * SIO__ALIGN_UP() - round up to a multiple of a power of two
 * @v: the value
 * @a: the alignment, a power of two
 *
 * A macro so that it serves constant expressions (a layout's offsets).
 * The result is 64 bits wide.
 */
#define SIO__ALIGN_UP(v, a)	(((uint64_t)(v) + (a) - 1) & ~((uint64_t)(a) - 1))

/**
 * sio__page_up() - round a size up to whole pages
 * @v: the size in bytes
 *
 * Return: @v rounded up to a multiple of %SIO__PAGE_SIZE.
 */
static inline uint64_t sio__page_up(uint64_t v)
{
	return SIO__ALIGN_UP(v, SIO__PAGE_SIZE);
}

#endif
