// SPDX-License-Identifier: GPL-2.0
/*
 * A peer-to-peer provider for the nfs-gds VM tests: it exports the six nvidia_p2p_* entry points
 * NVIDIA's nvidia-fs links against (2.19) or takes with __symbol_get on open (2.13), as the
 * NVIDIA GPU driver does, so that nvidia-fs loads, makes its devices and /proc files and binds
 * to rpcrdma on a machine without a GPU. There is no GPU memory to pin: getting or mapping
 * pages fails with -EINVAL (what the driver answers for an address it does not know), and the
 * release calls accept only what they could have handed out, which is nothing.
 *
 * Exported EXPORT_SYMBOL_GPL, as current NVIDIA drivers do (NV_EXPORT_SYMBOL in nv-linux.h):
 * kernels that allow symbol_get only of GPL exports would refuse 2.13's __symbol_get otherwise.
 */
#include <linux/errno.h>
#include <linux/module.h>

#include "nv-p2p.h"

int nvidia_p2p_get_pages(uint64_t p2p_token, uint32_t va_space, uint64_t virtual_address,
			 uint64_t length, struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data)
{
	if (page_table)
		*page_table = NULL;
	return -EINVAL;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_get_pages);

int nvidia_p2p_put_pages(uint64_t p2p_token, uint32_t va_space, uint64_t virtual_address,
			 struct nvidia_p2p_page_table *page_table)
{
	return -EINVAL;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_put_pages);

int nvidia_p2p_dma_map_pages(struct pci_dev *peer, struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping)
{
	if (dma_mapping)
		*dma_mapping = NULL;
	return -EINVAL;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_dma_map_pages);

int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer, struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping)
{
	return -EINVAL;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_dma_unmap_pages);

int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table)
{
	return page_table ? -EINVAL : 0;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_free_page_table);

int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping *dma_mapping)
{
	return dma_mapping ? -EINVAL : 0;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_free_dma_mapping);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("nfs-gds VM tests: nvidia_p2p_* provider without a GPU");
