/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_TESTS_GPU_MPS_H
#define SMARTIO_TESTS_GPU_MPS_H

/*
 * gpu_test_mps() - let the test and nvme-emu share the GPU through MPS
 *
 * Call first in main(), before any CUDA call: what it exports reaches every
 * process the test starts.
 */
void gpu_test_mps(void);

#endif
