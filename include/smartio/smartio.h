/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_SMARTIO_H
#define SMARTIO_SMARTIO_H

/**
 * DOC: smartio
 *
 * The bundle header: everything a userspace driver needs from libsmartio.
 * Programs that emulate devices rather than drive them add <smartio/model.h>.
 */

#include <smartio/fabric.h>
#include <smartio/segment.h>
#include <smartio/device.h>
#include <smartio/hint.h>
#include <smartio/path.h>
#include <smartio/multicast.h>
#include <smartio/event.h>
#include <smartio/status.h>
#include <smartio/irq.h>
#include <smartio/backoff.h>

#endif
