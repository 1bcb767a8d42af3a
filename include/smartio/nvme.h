/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_NVME_H
#define SMARTIO_NVME_H

/**
 * DOC: the NVMe driver
 *
 * The bundle header of libsmartio-nvme (pkg-config smartio-nvme): the wire
 * types and command builders (nvme/types.h, nvme/cmd.h), the queue pair's
 * static-inline hot path and its barriers (nvme/queue.h, nvme/barrier.h),
 * the controller (nvme/ctrl.h), the client with its I/O queues
 * (nvme/client.h) and the manager that shares a controller among clients
 * (nvme/manager.h), and live per-queue counters (nvme/stats.h). It brings
 * <smartio/smartio.h> with it. Code that needs only the hot path, such as
 * a CUDA kernel, may include nvme/queue.h alone.
 */

#include <smartio/smartio.h>
#include <smartio/nvme/types.h>
#include <smartio/nvme/barrier.h>
#include <smartio/nvme/cmd.h>
#include <smartio/nvme/queue.h>
#include <smartio/nvme/ctrl.h>
#include <smartio/nvme/client.h>
#include <smartio/nvme/manager.h>
#include <smartio/nvme/stats.h>

#endif
