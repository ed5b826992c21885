/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nfabric.ko internals shared by its files: the device structure, the
 * register accessors, the privilege model and the calls between the
 * files (core.c: locking, device memory, mmap, open/release, sysfs;
 * ioctl.c: the ioctl table; pci.c: attach/detach and the module).
 */
#ifndef NFABRIC_CORE_H
#define NFABRIC_CORE_H

#include <linux/bitfield.h>
#include <linux/cdev.h>
#include <linux/delay.h>
#include <linux/cleanup.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/ioport.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/pci.h>
#include <linux/poll.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/rwsem.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/jiffies.h>
#include <linux/uaccess.h>

/* The register layout shared with the QEMU device and user space. */
#include "hw/mem/nfabric_regs.h"
#include "nfabric.h"
/* The checks shared with libnfabric (pure inline functions). */
#include "nfabric_checks.h"

#define NFABRIC_MAX_DEVS	64
#define NFABRIC_HOST_DRIVER	"cxl_pci"

/*
 * The CXL.cache/mem registers of the component register block (BAR0 + 0,
 * the same convention as the controller's block): the HDM decoders say
 * where the host maps device memory and whether it interleaves it.
 */
#define NF_CM_OFFSET		0x1000
#define NF_CM_SIZE		0x1000
#define NF_CM_CAP_ID_MASK	GENMASK(15, 0)
#define NF_CM_CAP_ARRAY_MASK	GENMASK(31, 24)
#define NF_CM_CAP_PTR_MASK	GENMASK(31, 20)
#define NF_CM_CAP_HDR_ID	1
#define NF_CM_CAP_HDM_ID	5
#define NF_HDM_COUNT_MASK	GENMASK(3, 0)
#define NF_HDM_DEC(n, r)	(0x10 + (n) * 0x20 + (r))
#define NF_HDM_BASE_LO		0x00
#define NF_HDM_BASE_HI		0x04
#define NF_HDM_SIZE_LO		0x08
#define NF_HDM_SIZE_HI		0x0c
#define NF_HDM_CTRL		0x10
#define NF_HDM_SKIP_LO		0x14
#define NF_HDM_SKIP_HI		0x18
#define NF_HDM_CTRL_IW_MASK	GENMASK(7, 4)
#define NF_HDM_CTRL_COMMITTED	BIT(10)
#define NF_HDM_MAX		10

/*
 * The privilege model (docs/driver.md): reading the device needs only an
 * open file (the node's mode decides who may open it); changing its state
 * or clearing its statistics needs CAP_SYS_ADMIN; mapping its registers
 * (which bypasses every check of the driver) needs CAP_SYS_RAWIO.  The
 * same rule for ioctls, mmap() and sysfs writes: nf_may().
 */
enum nf_priv {
	NF_PRIV_READ,		/* queries */
	NF_PRIV_ADMIN,		/* state changes, statistics clears */
	NF_PRIV_RAWIO,		/* the register page mapped into user space */
};

static_assert(NFABRIC_DRV_NUM_PATHS == NFABRIC_NUM_PATHS);
static_assert(NFABRIC_REGS_SIZE == PAGE_SIZE);

struct nfabric_file;

/**
 * struct nfabric_dev - one controller
 * @dev: the class device nfabricN (its lifetime is the structure's)
 * @cdev: /dev/nfabricN
 * @pdev: the CXL memory device (a reference is held)
 * @memdev: the cxl_memdev under @pdev, or NULL (a reference is held)
 * @node: entry in nfabric_devs
 * @lock: serialises register access, ioctls and detach
 * @revoke: faults of register mappings (read) against detach (write)
 * @regs: the mapped block; NULL once detached (then every call is -ENODEV)
 * @cm: the CXL.cache/mem registers (HDM decoders), or NULL
 * @hdm: offset of the HDM decoder capability in @cm (0: none)
 * @mapped: register pages may be inserted (false once detached)
 * @regs_phys: physical address of the block
 * @files: open files, to revoke their register mappings on detach
 * @version: VERSION register
 * @caps: CAPS register
 * @num_windows: windows the device has (CAPS[7:0], at most 16)
 * @mem_size: bytes of device memory
 * @id: N of nfabricN
 * @irq: the device's interrupt (irq.c), or -1: waits poll
 * @ev_lock: the event counts and @efd_files, also from the handler
 * @ev_done, @ev_incomplete: messages that reported window i's round
 *	ALL_DONE, INCOMPLETE; @ev_failed: the head's state failed
 * @ev_count: messages counted (waiters and poll() compare it)
 * @wq: ROUND_WAIT and poll() sleep here
 * @efd_files: open files with an eventfd to signal
 */
struct nfabric_dev {
	struct device dev;
	struct cdev cdev;
	struct pci_dev *pdev;
	struct device *memdev;
	struct list_head node;
	struct mutex lock;		/* see @lock above */
	struct rw_semaphore revoke;	/* see @revoke above */
	void __iomem *regs;
	void __iomem *cm;
	u32 hdm;
	bool mapped;
	phys_addr_t regs_phys;
	struct list_head files;
	u32 version;
	u32 caps;
	u32 num_windows;
	u64 mem_size;
	int id;
	int irq;
	spinlock_t ev_lock;
	u32 ev_done[NFABRIC_NUM_WINDOWS];
	u32 ev_incomplete[NFABRIC_NUM_WINDOWS];
	u32 ev_failed;
	u64 ev_count;
	wait_queue_head_t wq;
	struct list_head efd_files;
};

/*
 * An open file: its device, and what NFABRIC_IOC_EVENTS last told it
 * (the device's counts then) and its eventfd (irq.c).
 */
struct nfabric_file {
	struct nfabric_dev *nf;
	struct file *filp;
	struct list_head node;
	u32 done_seen[NFABRIC_NUM_WINDOWS];
	u32 incomplete_seen[NFABRIC_NUM_WINDOWS];
	u32 failed_seen;
	u64 ev_seen;
	struct eventfd_ctx *efd;
	struct list_head efd_node;
};


static inline struct nfabric_dev *to_nfabric(struct device *dev)
{
	return container_of(dev, struct nfabric_dev, dev);
}

static inline u32 nf_rd32(struct nfabric_dev *nf, u32 off)
{
	return readl(nf->regs + off);
}

static inline void nf_wr32(struct nfabric_dev *nf, u32 off, u32 val)
{
	writel(val, nf->regs + off);
}

static inline u64 nf_rd64(struct nfabric_dev *nf, u32 off)
{
	return readq(nf->regs + off);
}

static inline void nf_wr64(struct nfabric_dev *nf, u32 off, u64 val)
{
	writeq(val, nf->regs + off);
}


extern dev_t nfabric_devt;
extern const struct class nfabric_class;
extern const struct file_operations nfabric_fops;
extern const struct attribute_group *nfabric_groups[];

/* core.c */
int nf_may(enum nf_priv p);
int nf_lock_live(struct nfabric_dev *nf);
u32 nf_find_hdm(void __iomem *cm);
unsigned int nf_mem_spans(struct nfabric_dev *nf, struct nfabric_mem_span *spans);
bool nf_is_sysram(void *ctx, u64 hpa, u64 len, u64 *start, u64 *end);

/* ioctl.c */
long nfabric_ioctl(struct file *filp, unsigned int cmd, unsigned long arg);

/* irq.c */
void nf_irq_setup(struct nfabric_dev *nf);
void nf_irq_teardown(struct nfabric_dev *nf);
u64 nf_irq_events(struct nfabric_dev *nf);
int nf_irq_wait(struct nfabric_dev *nf, u64 seen, unsigned long timeout);
void nf_irq_file_open(struct nfabric_file *nff);
void nf_irq_file_release(struct nfabric_file *nff);
__poll_t nf_irq_poll(struct file *filp, poll_table *pt);
int nf_ioc_events(struct nfabric_file *nff, void *arg, bool *out);
int nf_ioc_eventfd(struct nfabric_file *nff, void *arg, bool *out);

#endif /* NFABRIC_CORE_H */
