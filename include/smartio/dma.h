/* SPDX-License-Identifier: MIT */
/* The provider API's old name: see <smartio/model.h>. */
#include <smartio/model.h>
