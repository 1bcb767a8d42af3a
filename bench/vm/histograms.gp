# SPDX-License-Identifier: MIT
# The vm benchmarks' charts, their common style: clustered histograms.
# bench_png (lib.sh) runs it before each benchmark's NAME.gp.
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.7 border -1
set boxwidth 0.9
set grid y
set key top left
