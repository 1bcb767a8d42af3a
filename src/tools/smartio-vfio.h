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

/**
 * sio_tool_rebind() - bind a function to a driver, or give it back
 * @cmd: the subcommand, for messages ("vfio", "uio")
 * @arg: its PCI address, as given
 * @override: driver_override to set: the driver's name, or "\n" to clear it
 * @want: the driver it must end up bound to; NULL when unbinding
 * Return: the process exit status.
 */
int sio_tool_rebind(const char *cmd, const char *arg, const char *override, const char *want);

/**
 * sio_tool_uio() - the `smartio uio ...` subcommands (bind, unbind, lend)
 * @argc: argument count
 * @argv: argv[0] is "uio", then the subcommand
 * Return: the process exit status.
 */
int sio_tool_uio(int argc, char **argv);

#endif
