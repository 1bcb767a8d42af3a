/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_TESTS_GPU_GPUMAIN_H
#define SMARTIO_TESTS_GPU_GPUMAIN_H

/*
 * gpu_suite_main() - run a suite whose every test needs a GPU
 *
 * Without one: print why and return 77 (meson: SKIP), or 1 when
 * SMARTIO_REQUIRE_GPU says a GPU must be there. Otherwise run the
 * Criterion tests and return their verdict.
 */
int gpu_suite_main(int argc, char *argv[]);

#endif
