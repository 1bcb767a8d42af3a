/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_TOOL_VFIO_H
#define SMARTIO_TOOL_VFIO_H

#include <stdbool.h>
#include <stddef.h>

struct sio_pci_fn;

/**
 * sio_tool_vfio() - the `smartio vfio ...` subcommands
 * @argc: argument count
 * @argv: argv[0] is "vfio", then the subcommand (list, bind, unbind, probe, lend)
 * Return: the process exit status.
 */
int sio_tool_vfio(int argc, char **argv);

/**
 * sio_tool_bind() - `smartio vfio|uio bind|unbind [--force] BDF`
 * @cmd: the command, for messages ("vfio", "uio")
 * @argc: argument count
 * @argv: argv[0] is "bind" or "unbind", then its options and the address
 * @drv: the driver to bind to (vfio-pci, uio_pci_generic)
 *
 * bind refuses a function this host uses (sio_tool_pci_users()), --force or
 * not, and one of a class smartio does not lend without --force.
 * Return: the process exit status.
 */
int sio_tool_bind(const char *cmd, int argc, char **argv, const char *drv);

/**
 * sio_tool_pci_users() - what on this host uses a PCI function
 * @bdf: its address, as sio_pci_bdf_parse() gives it
 * @out: filled with the uses, "; " between them ("nvme0n1p1 is mounted on
 *       /mnt"), or "" when none
 * @len: the size of @out
 * Return: the number of uses, or a negative errno when sysfs cannot say.
 */
int sio_tool_pci_users(const char *bdf, char *out, size_t len);

/**
 * sio_tool_pci_lendable() - whether a function is of a class smartio lends
 * @fn: the function
 * Return: false for a virtio function (but ivshmem), a disk controller
 * other than NVMe, a network controller, a bridge other than NTB's, ...
 */
bool sio_tool_pci_lendable(const struct sio_pci_fn *fn);

/**
 * sio_tool_uio() - the `smartio uio ...` subcommands (bind, unbind, lend)
 * @argc: argument count
 * @argv: argv[0] is "uio", then the subcommand
 * Return: the process exit status.
 */
int sio_tool_uio(int argc, char **argv);

#endif
