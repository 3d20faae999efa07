/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The part of the NVIDIA GPU driver's peer-to-peer interface ("nv-p2p.h") that NVIDIA's
 * nvidia-fs compiles against, written for the nfs-gds VM tests, which have no NVIDIA driver.
 *
 * ABI source: the nv-p2p.h NVIDIA publishes with its driver (kernel-open/nvidia/nv-p2p.h in
 * NVIDIA/open-gpu-kernel-modules, MIT): the structure layouts below, their version words and
 * the six entry points nvidia-fs calls keep that header's order, types and values. Only what
 * nvidia-fs 2.13 and 2.19 use is declared (no mailbox, rsync or persistent-pages API).
 */
#ifndef _NV_P2P_H_
#define _NV_P2P_H_

#include <linux/types.h>

struct pci_dev;

/* A structure's version word: major in the upper 16 bits, minor in the lower 16. */
#define NVIDIA_P2P_MAJOR_VERSION(v) (((v) & 0xffff0000u) >> 16)
#define NVIDIA_P2P_MINOR_VERSION(v) ((v) & 0x0000ffffu)
#define NVIDIA_P2P_VERSION_COMPATIBLE(p, v)                                      \
	(NVIDIA_P2P_MAJOR_VERSION((p)->version) == NVIDIA_P2P_MAJOR_VERSION(v) && \
	 NVIDIA_P2P_MINOR_VERSION((p)->version) >= NVIDIA_P2P_MINOR_VERSION(v))

enum nvidia_p2p_page_size_type {
	NVIDIA_P2P_PAGE_SIZE_4KB = 0,
	NVIDIA_P2P_PAGE_SIZE_64KB,
	NVIDIA_P2P_PAGE_SIZE_128KB,
	NVIDIA_P2P_PAGE_SIZE_COUNT
};

typedef struct nvidia_p2p_page {
	uint64_t physical_address;
	union nvidia_p2p_request_registers {
		struct {
			uint32_t wreqmb_h;
			uint32_t rreqmb_h;
			uint32_t rreqmb_0;
			uint32_t reserved[3];
		} fermi;
	} registers;
} nvidia_p2p_page_t;

#define NVIDIA_P2P_PAGE_TABLE_VERSION 0x00010002
#define NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(p) \
	NVIDIA_P2P_VERSION_COMPATIBLE(p, NVIDIA_P2P_PAGE_TABLE_VERSION)

typedef struct nvidia_p2p_page_table {
	uint32_t version;
	uint32_t page_size; /* enum nvidia_p2p_page_size_type */
	struct nvidia_p2p_page **pages;
	uint32_t entries;
	uint8_t *gpu_uuid;
} nvidia_p2p_page_table_t;

#define NVIDIA_P2P_DMA_MAPPING_VERSION 0x00020003
#define NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(p) \
	NVIDIA_P2P_VERSION_COMPATIBLE(p, NVIDIA_P2P_DMA_MAPPING_VERSION)

typedef struct nvidia_p2p_dma_mapping {
	uint32_t version;
	enum nvidia_p2p_page_size_type page_size_type;
	uint32_t entries;
	uint64_t *dma_addresses;
	void *private;
	struct pci_dev *pci_dev;
} nvidia_p2p_dma_mapping_t;

int nvidia_p2p_get_pages(uint64_t p2p_token, uint32_t va_space, uint64_t virtual_address,
			 uint64_t length, struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data);
int nvidia_p2p_put_pages(uint64_t p2p_token, uint32_t va_space, uint64_t virtual_address,
			 struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_dma_map_pages(struct pci_dev *peer, struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping);
int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer, struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping);
int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping *dma_mapping);

#endif /* _NV_P2P_H_ */
