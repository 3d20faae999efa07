// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only addition to the kernel's own net/sunrpc/xprtrdma sources: the two entry points that
 * nvidia-fs looks up with __symbol_get() in a GDS-enabled rpcrdma. They only record the ops
 * pointer; the data path is untouched, so the module is otherwise the distro's rpcrdma.
 *
 * Built twice by the VM harness: with NFS_GDS_NVFS_EXPORT_GPL defined (EXPORT_SYMBOL_GPL, what
 * works on kernels that refuse symbol_get of non-GPL symbols) and without it (plain
 * EXPORT_SYMBOL, what those kernels refuse).
 */
#include <linux/export.h>
#include <linux/module.h>
#include <linux/printk.h>

static void *nfs_gds_nvfs_ops;

int rpcrdma_register_nvfs_dma_ops(void *ops)
{
	WRITE_ONCE(nfs_gds_nvfs_ops, ops);
	pr_info("rpcrdma: nvfs dma ops registered (nfs-gds test build)\n");
	return 0;
}

void rpcrdma_unregister_nvfs_dma_ops(void)
{
	WRITE_ONCE(nfs_gds_nvfs_ops, NULL);
	pr_info("rpcrdma: nvfs dma ops unregistered (nfs-gds test build)\n");
}

#ifdef NFS_GDS_NVFS_EXPORT_GPL
EXPORT_SYMBOL_GPL(rpcrdma_register_nvfs_dma_ops);
EXPORT_SYMBOL_GPL(rpcrdma_unregister_nvfs_dma_ops);
#else
EXPORT_SYMBOL(rpcrdma_register_nvfs_dma_ops);
EXPORT_SYMBOL(rpcrdma_unregister_nvfs_dma_ops);
#endif
