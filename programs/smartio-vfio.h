/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_TOOL_VFIO_H
#define SMARTIO_TOOL_VFIO_H

/**
 * sio_tool_vfio() - the `smartio vfio ...` subcommands
 * @argc: argument count
 * @argv: argv[0] is "vfio", then the subcommand (list, bind, unbind, probe, lend)
 * Return: the process exit status.
 */
int sio_tool_vfio(int argc, char **argv);

#endif
