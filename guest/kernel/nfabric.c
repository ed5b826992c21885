// SPDX-License-Identifier: GPL-2.0
/*
 * NEURON-Fabric aggregation controller: reference driver.
 *
 * The controller is a vendor register block at BAR0 + 0x2000 of a CXL
 * Type-3 memory device (PCI 1b36:00f0, class 050210).  cxl_pci owns the PCI
 * device and its BARs, so this driver does not bind to it: a PCI bus
 * notifier attaches to each such device while cxl_pci is bound to it, maps
 * the 4 KiB block without requesting the region (cxl_pci's mappings of the
 * CXL register blocks stay untouched) and exposes /dev/nfabricN with the
 * ioctls of uapi/nfabric.h and sysfs attributes.  docs/driver.md.
 */
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
};

struct nfabric_file {
	struct nfabric_dev *nf;
	struct file *filp;
	struct list_head node;
};

static dev_t nfabric_devt;
static DEFINE_IDA(nfabric_ida);
/* The attached devices; also serialises attach against detach. */
static DEFINE_MUTEX(nfabric_devs_lock);
static LIST_HEAD(nfabric_devs);

static const struct class nfabric_class = {
	.name = "nfabric",
};

static inline struct nfabric_dev *to_nfabric(struct device *dev)
{
	return container_of(dev, struct nfabric_dev, dev);
}

static u32 nf_rd32(struct nfabric_dev *nf, u32 off)
{
	return readl(nf->regs + off);
}

static void nf_wr32(struct nfabric_dev *nf, u32 off, u32 val)
{
	writel(val, nf->regs + off);
}

static u64 nf_rd64(struct nfabric_dev *nf, u32 off)
{
	return readq(nf->regs + off);
}

static void nf_wr64(struct nfabric_dev *nf, u32 off, u64 val)
{
	writeq(val, nf->regs + off);
}

/* ---- privileges, locking -------------------------------------------- */

static int nf_may(enum nf_priv p)
{
	switch (p) {
	case NF_PRIV_READ:
		return 0;
	case NF_PRIV_ADMIN:
		return capable(CAP_SYS_ADMIN) ? 0 : -EPERM;
	case NF_PRIV_RAWIO:
		return capable(CAP_SYS_RAWIO) ? 0 : -EPERM;
	}
	return -EPERM;
}

/*
 * Take the device's lock if the device is still attached (0), else
 * -ENODEV without it.  Nothing that can fault (copy_{from,to}_user) runs
 * under the lock: arguments are copied in before and results out after.
 */
static int nf_lock_live(struct nfabric_dev *nf)
{
	mutex_lock(&nf->lock);
	if (nf->regs)
		return 0;
	mutex_unlock(&nf->lock);
	return -ENODEV;
}

/* ---- where the host maps device memory (HDM decoders) ---------------- */

/* Interleave ways of an HDM decoder's IW field (CXL 2.0 8.2.5.12.7). */
static u32 nf_hdm_ways(u32 iw)
{
	if (iw <= 4)
		return 1u << iw;
	if (iw >= 8 && iw <= 10)
		return 3u << (iw - 8);
	return 0;
}

/* Find the HDM decoder capability in the CXL.cache/mem registers. */
static u32 nf_find_hdm(void __iomem *cm)
{
	u32 hdr = readl(cm), n, i, cap;

	if (FIELD_GET(NF_CM_CAP_ID_MASK, hdr) != NF_CM_CAP_HDR_ID)
		return 0;
	n = FIELD_GET(NF_CM_CAP_ARRAY_MASK, hdr);
	for (i = 1; i <= n && i < NF_CM_SIZE / 4; i++) {
		cap = readl(cm + i * 4);
		if (FIELD_GET(NF_CM_CAP_ID_MASK, cap) == NF_CM_CAP_HDM_ID) {
			u32 off = FIELD_GET(NF_CM_CAP_PTR_MASK, cap);

			if (off && off + NF_HDM_DEC(NF_HDM_MAX, 0) <= NF_CM_SIZE)
				return off;
			return 0;
		}
	}
	return 0;
}

/*
 * The committed decoders of the device: each maps the DPA range after the
 * previous decoder's (plus its skip) at its HPA base.  Called with the lock
 * held and the device attached.  Returns the number of spans.
 */
static unsigned int nf_mem_spans(struct nfabric_dev *nf, struct nfabric_mem_span *spans)
{
	void __iomem *h;
	unsigned int n = 0, count, i;
	u64 dpa = 0, size, skip;
	u32 ctrl, ways, cnt;

	if (!nf->cm || !nf->hdm)
		return 0;
	h = nf->cm + nf->hdm;
	cnt = FIELD_GET(NF_HDM_COUNT_MASK, readl(h));
	count = min_t(u32, cnt ? cnt * 2 : 1, NF_HDM_MAX);
	for (i = 0; i < count; i++) {
		ctrl = readl(h + NF_HDM_DEC(i, NF_HDM_CTRL));
		if (!(ctrl & NF_HDM_CTRL_COMMITTED))
			break;		/* decoders commit in order */
		ways = nf_hdm_ways(FIELD_GET(NF_HDM_CTRL_IW_MASK, ctrl));
		size = (u64)readl(h + NF_HDM_DEC(i, NF_HDM_SIZE_HI)) << 32 |
		       (readl(h + NF_HDM_DEC(i, NF_HDM_SIZE_LO)) & 0xf0000000u);
		skip = (u64)readl(h + NF_HDM_DEC(i, NF_HDM_SKIP_HI)) << 32 |
		       (readl(h + NF_HDM_DEC(i, NF_HDM_SKIP_LO)) & 0xf0000000u);
		if (!ways)
			ways = 2;	/* a reserved encoding: not a linear map */
		spans[n].hpa = (u64)readl(h + NF_HDM_DEC(i, NF_HDM_BASE_HI)) << 32 |
			       (readl(h + NF_HDM_DEC(i, NF_HDM_BASE_LO)) & 0xf0000000u);
		spans[n].ways = ways;
		spans[n].dpa = dpa + skip;
		spans[n].size = div_u64(size, ways);
		dpa = spans[n].dpa + spans[n].size;
		n++;
	}
	return n;
}

struct nf_ram_hit {
	u64 start, end;
};

static int nf_ram_found(struct resource *res, void *arg)
{
	struct nf_ram_hit *hit = arg;

	hit->start = res->start;
	hit->end = res->end;
	return 1;
}

/* nfabric_sysram_fn: the kernel's resource tree, as /proc/iomem shows it. */
static bool nf_is_sysram(void *ctx, u64 hpa, u64 len, u64 *start, u64 *end)
{
	struct nf_ram_hit hit;

	if (walk_iomem_res_desc(IORES_DESC_NONE, IORESOURCE_SYSTEM_RAM, hpa,
				hpa + len - 1, &hit, nf_ram_found) != 1)
		return false;
	*start = hit.start;
	*end = hit.end;
	return true;
}

/* ---- ioctls ---------------------------------------------------------- */

static int nf_ioc_info(struct nfabric_dev *nf, unsigned int cmd, void *arg, bool *out)
{
	struct nfabric_ioc_info *info = arg;
	int rc;

	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	info->version = nf->version;
	info->caps = nf->caps;
	info->num_windows = nf->num_windows;
	info->num_paths = NFABRIC_NUM_PATHS;
	info->mem_size = nf->mem_size;
	info->regs_phys = nf->regs_phys;
	rc = nf_lock_live(nf);
	if (rc)
		return rc;
	if (nf->memdev)
		strscpy(info->memdev, dev_name(nf->memdev), sizeof(info->memdev));
	strscpy(info->pci_dev, pci_name(nf->pdev), sizeof(info->pci_dev));
	mutex_unlock(&nf->lock);
	*out = true;
	return 0;
}

static bool nf_ranges_overlap(u64 a, u64 alen, u64 b, u64 blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

/*
 * Check a window configuration against the documented rules and the
 * device memory; what only the device knows (other enabled windows) is
 * left to it.
 */
static int nf_check_window(struct nfabric_dev *nf, const struct nfabric_ioc_window *w,
			   u64 *cbytes)
{
	struct device *dev = &nf->dev;
	bool agg = w->path != NFABRIC_PATH_FP32;
	u64 end;

	if (w->index >= nf->num_windows) {
		dev_dbg(dev, "window %u: the device has %u\n", w->index, nf->num_windows);
		return -EINVAL;
	}
	if (w->path >= NFABRIC_NUM_PATHS ||
	    !(nf->caps & BIT(NFABRIC_CAPS_PATHS_SHIFT + w->path))) {
		dev_dbg(dev, "window %u: unsupported path %u\n", w->index, w->path);
		return -EINVAL;
	}
	if (!agg) {
		if (w->width || w->tie || w->threshold || w->counters) {
			dev_dbg(dev, "window %u: FP32 takes no width, tie, threshold or counters\n",
				w->index);
			return -EINVAL;
		}
	} else {
		if ((w->width != 8 && w->width != 16) ||
		    !(nf->caps & BIT(NFABRIC_CAPS_WIDTHS_SHIFT + ilog2(w->width / 8)))) {
			dev_dbg(dev, "window %u: unsupported width %u\n", w->index, w->width);
			return -EINVAL;
		}
		if (w->path == NFABRIC_PATH_GBINARY &&
		    (w->tie >= NFABRIC_NUM_TIES || w->threshold)) {
			dev_dbg(dev, "window %u: bad tie rule %u or threshold %u for G-Binary\n",
				w->index, w->tie, w->threshold);
			return -EINVAL;
		}
		if (w->path == NFABRIC_PATH_GTERNARY &&
		    (w->tie || !w->threshold || w->threshold > (1u << (w->width - 1)) - 1)) {
			dev_dbg(dev, "window %u: bad threshold %u or tie rule %u for G-Ternary\n",
				w->index, w->threshold, w->tie);
			return -EINVAL;
		}
	}
	if (!w->length || !IS_ALIGNED(w->base, NFABRIC_ALIGN) ||
	    !IS_ALIGNED(w->length, NFABRIC_ALIGN) ||
	    !IS_ALIGNED(w->counters, NFABRIC_ALIGN)) {
		dev_dbg(dev, "window %u: base, length and counters must be non-zero multiples of %u\n",
			w->index, NFABRIC_ALIGN);
		return -EINVAL;
	}
	if (check_add_overflow(w->base, w->length, &end) || end > nf->mem_size) {
		dev_dbg(dev, "window %u: data past the device memory (%llu bytes)\n",
			w->index, nf->mem_size);
		return -ERANGE;
	}
	/* length <= mem_size here: the counter size cannot overflow. */
	*cbytes = nfabric_counter_bytes(w->path, w->width, w->length);
	if (agg && (check_add_overflow(w->counters, *cbytes, &end) || end > nf->mem_size)) {
		dev_dbg(dev, "window %u: counters past the device memory\n", w->index);
		return -ERANGE;
	}
	if (agg && nf_ranges_overlap(w->base, w->length, w->counters, *cbytes)) {
		dev_dbg(dev, "window %u: data and counters overlap\n", w->index);
		return -EINVAL;
	}
	return 0;
}

/*
 * What libnfabric refuses too (nfabric_check_window_memory): a low-bit
 * window on interleaved memory or over System RAM.  Called with the lock
 * held.
 */
static int nf_check_window_memory(struct nfabric_dev *nf, const struct nfabric_ioc_window *w)
{
	struct nfabric_mem_span spans[NF_HDM_MAX];
	struct nfabric_mem_why why = { 0 };
	unsigned int n = nf_mem_spans(nf, spans);
	int rc;

	rc = nfabric_check_window_memory(w->path, w->width, w->base, w->length, w->counters,
					 spans, n, nf_is_sysram, NULL, &why);
	if (rc == -EXDEV)
		dev_dbg(&nf->dev, "window %u: decoder %u interleaves the memory over %u devices\n",
			w->index, why.span, spans[why.span].ways);
	else if (rc == -EBUSY)
		dev_dbg(&nf->dev, "window %u: its %s (DPA %#llx, HPA %#llx) is System RAM (%#llx-%#llx)\n",
			w->index, why.area ? "counter area" : "data", why.dpa, why.hpa,
			why.ram_start, why.ram_end);
	return rc;
}

static int nf_ioc_win_set(struct nfabric_dev *nf, unsigned int cmd, void *arg, bool *out)
{
	struct nfabric_ioc_window *w = arg;
	u32 before, wctrl, err, i;
	u64 cbytes;
	int rc;

	rc = nf_check_window(nf, w, &cbytes);
	if (rc)
		return rc;
	i = w->index;
	rc = nf_lock_live(nf);
	if (rc)
		return rc;
	rc = nf_check_window_memory(nf, w);
	if (rc)
		goto out;
	if (nf_rd32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL)) & NFABRIC_WCTRL_ENABLE) {
		dev_dbg(&nf->dev, "window %u is enabled\n", i);
		rc = -EBUSY;
		goto out;
	}
	before = nf_rd32(nf, NFABRIC_REG_ERROR_COUNT);
	nf_wr64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE), w->base);
	nf_wr64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE), w->length);
	nf_wr64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS), w->counters);
	nf_wr32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD), w->threshold);
	wctrl = NFABRIC_WCTRL(w->path, w->width, w->tie) | NFABRIC_WCTRL_ENABLE;
	nf_wr32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL), wctrl);
	if (nf_rd32(nf, NFABRIC_REG_ERROR_COUNT) == before &&
	    (nf_rd32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL)) & NFABRIC_WCTRL_ENABLE))
		goto out;
	err = nf_rd32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_ERROR));
	if (err == NFABRIC_ERR_OVERLAP) {
		dev_dbg(&nf->dev, "window %u overlaps an enabled window\n", i);
		rc = -EBUSY;
	} else {
		/* Everything else was checked above: the device disagrees with us. */
		dev_err_ratelimited(&nf->dev, "window %u: enable refused with error %u\n", i, err);
		rc = -EIO;
	}
	w->error = err;
	*out = true;		/* a refusal tells the device's error */
out:
	mutex_unlock(&nf->lock);
	return rc;
}

static int nf_ioc_win_get(struct nfabric_dev *nf, unsigned int cmd, void *arg, bool *out)
{
	struct nfabric_ioc_window *w = arg;
	u32 i = w->index, wctrl;
	int rc;

	memset(w, 0, sizeof(*w));
	w->size = sizeof(*w);
	w->index = i;
	rc = nf_lock_live(nf);
	if (rc)
		return rc;
	wctrl = nf_rd32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL));
	w->enabled = !!(wctrl & NFABRIC_WCTRL_ENABLE);
	w->path = FIELD_GET(NFABRIC_WCTRL_PATH_MASK, wctrl);
	w->width = FIELD_GET(NFABRIC_WCTRL_WIDTH_MASK, wctrl);
	w->tie = FIELD_GET(NFABRIC_WCTRL_TIE_MASK, wctrl);
	w->threshold = nf_rd32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD));
	w->base = nf_rd64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE));
	w->length = nf_rd64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE));
	w->counters = nf_rd64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS));
	w->error = nf_rd32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_ERROR));
	w->contrib_writes = nf_rd64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CONTRIB_WRITES));
	w->contrib_bytes = nf_rd64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CONTRIB_BYTES));
	w->reserved_codes = nf_rd32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_RESERVED_CODES));
	mutex_unlock(&nf->lock);
	*out = true;
	return 0;
}

static int nf_ioc_win_cmd(struct nfabric_dev *nf, unsigned int cmd, void *arg, bool *out)
{
	const struct nfabric_ioc_window_cmd *c = arg;
	u32 before, i = c->index, wctrl, err;
	int rc;

	rc = nf_lock_live(nf);
	if (rc)
		return rc;
	before = nf_rd32(nf, NFABRIC_REG_ERROR_COUNT);
	if (cmd == NFABRIC_IOC_WIN_DISABLE) {
		wctrl = nf_rd32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL));
		nf_wr32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL), wctrl & ~NFABRIC_WCTRL_ENABLE);
	} else {
		nf_wr32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR);
	}
	if (nf_rd32(nf, NFABRIC_REG_ERROR_COUNT) != before) {
		err = nf_rd32(nf, NFABRIC_REG_LAST_ERROR);
		dev_err_ratelimited(&nf->dev, "window %u: %s refused with error %u\n", i,
				    cmd == NFABRIC_IOC_WIN_DISABLE ? "disable" : "clear", err);
		rc = -EIO;
	}
	mutex_unlock(&nf->lock);
	return rc;
}

static int nf_ioc_stats(struct nfabric_dev *nf, unsigned int cmd, void *arg, bool *out)
{
	struct nfabric_ioc_stats *st = arg;
	u32 flags = st->flags, p;
	int rc;

	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	st->flags = flags;
	rc = nf_lock_live(nf);
	if (rc)
		return rc;
	for (p = 0; p < NFABRIC_NUM_PATHS; p++) {
		st->path[p].reads = nf_rd64(nf, NFABRIC_REG_STATS_PATH(p, NFABRIC_STATS_READS));
		st->path[p].writes = nf_rd64(nf, NFABRIC_REG_STATS_PATH(p, NFABRIC_STATS_WRITES));
		st->path[p].read_bytes =
			nf_rd64(nf, NFABRIC_REG_STATS_PATH(p, NFABRIC_STATS_READ_BYTES));
		st->path[p].write_bytes =
			nf_rd64(nf, NFABRIC_REG_STATS_PATH(p, NFABRIC_STATS_WRITE_BYTES));
	}
	st->error_count = nf_rd32(nf, NFABRIC_REG_ERROR_COUNT);
	st->last_error = nf_rd32(nf, NFABRIC_REG_LAST_ERROR);
	st->enabled_mask = nf_rd32(nf, NFABRIC_REG_ENABLED_MASK);
	if (flags)
		nf_wr32(nf, NFABRIC_REG_CTRL,
			(flags & NFABRIC_STATS_F_CLEAR ? NFABRIC_CTRL_CLEAR_STATS : 0) |
			(flags & NFABRIC_STATS_F_CLEAR_ERRORS ? NFABRIC_CTRL_CLEAR_ERROR : 0));
	mutex_unlock(&nf->lock);
	*out = true;
	return 0;
}

static int nf_ioc_timing(struct nfabric_dev *nf, unsigned int cmd, void *arg, bool *out)
{
	struct nfabric_ioc_timing *t = arg;
	u32 flags = t->flags, p;
	int rc;

	memset(t, 0, sizeof(*t));
	t->size = sizeof(*t);
	t->flags = flags;
	rc = nf_lock_live(nf);
	if (rc)
		return rc;
	t->clock_mhz = nf_rd32(nf, NFABRIC_REG_T_CLOCK_MHZ);
	t->depth = nf_rd32(nf, NFABRIC_REG_T_DEPTH);
	t->service_ns = nf_rd32(nf, NFABRIC_REG_T_SERVICE_NS);
	t->link_mbps = nf_rd32(nf, NFABRIC_REG_T_LINK_MBPS);
	t->exposed_ppm = nf_rd32(nf, NFABRIC_REG_T_EXPOSED_PPM);
	t->total_ps = nf_rd64(nf, NFABRIC_REG_T_TOTAL_PS);
	t->runtime_ps = nf_rd64(nf, NFABRIC_REG_T_RUNTIME_PS);
	t->queued_ps = nf_rd64(nf, NFABRIC_REG_T_QUEUED_PS);
	t->link_busy_ps = nf_rd64(nf, NFABRIC_REG_T_LINK_BUSY_PS);
	for (p = 0; p < NFABRIC_NUM_PATHS; p++) {
		t->path_time_ps[p] =
			nf_rd64(nf, NFABRIC_REG_T_PATH_FIELD(p, NFABRIC_T_PATH_TIME_PS));
		t->path_exposed_ps[p] =
			nf_rd64(nf, NFABRIC_REG_T_PATH_FIELD(p, NFABRIC_T_PATH_EXPOSED_PS));
		t->path_accesses[p] = nf_rd64(nf, NFABRIC_REG_T_ACCESSES_PATH(p));
	}
	if (flags & NFABRIC_TIMING_F_CLEAR)
		nf_wr32(nf, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_TIMING);
	mutex_unlock(&nf->lock);
	*out = true;
	return 0;
}

/* ---- rounds (register layout 1.1) ------------------------------------- */

static bool nf_has_rounds(struct nfabric_dev *nf)
{
	return (nf->version & 0xffff) >= 1;
}

static void nf_round_read(struct nfabric_dev *nf, struct nfabric_ioc_round *r)
{
	u32 i = r->index;

	/* STATUS first: SEQ read after it is at least as new. */
	r->status = nf_rd32(nf, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_STATUS));
	r->seq = nf_rd32(nf, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_SEQ));
	r->done = nf_rd32(nf, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_DONE));
	r->heads_done = FIELD_GET(NFABRIC_RSTAT_DONE_MASK, r->status);
	r->heads_expected = FIELD_GET(NFABRIC_RSTAT_EXPECT_MASK, r->status);
	r->all_done = !!(r->status & NFABRIC_RSTAT_ALL_DONE);
}

/* The window must be enabled for a round call.  Called with the lock held. */
static int nf_round_enabled(struct nfabric_dev *nf, u32 i)
{
	if (nf_rd32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL)) & NFABRIC_WCTRL_ENABLE)
		return 0;
	dev_dbg(&nf->dev, "window %u: no round, the window is disabled\n", i);
	return -ENOENT;
}

static int nf_ioc_round_get(struct nfabric_dev *nf, unsigned int cmd, void *arg, bool *out)
{
	struct nfabric_ioc_round *r = arg;
	int rc;

	rc = nf_lock_live(nf);
	if (rc)
		return rc;
	rc = nf_round_enabled(nf, r->index);
	if (!rc)
		nf_round_read(nf, r);
	mutex_unlock(&nf->lock);
	*out = !rc;
	return rc;
}

static int nf_ioc_round_complete(struct nfabric_dev *nf, unsigned int cmd, void *arg,
				 bool *out)
{
	struct nfabric_ioc_round *r = arg;
	u32 before, seq, err;
	int rc;

	rc = nf_lock_live(nf);
	if (rc)
		return rc;
	rc = nf_round_enabled(nf, r->index);
	if (rc)
		goto out;
	seq = r->seq;
	if (nf_rd32(nf, NFABRIC_REG_ROUND(r->index, NFABRIC_ROUND_SEQ)) != seq) {
		rc = -ESTALE;
	} else {
		before = nf_rd32(nf, NFABRIC_REG_ERROR_COUNT);
		nf_wr32(nf, NFABRIC_REG_ROUND(r->index, NFABRIC_ROUND_COMPLETE), seq);
		if (nf_rd32(nf, NFABRIC_REG_ERROR_COUNT) != before) {
			/*
			 * Another head may have started the next round.  Round
			 * errors go to this head's LAST_ERROR only.
			 */
			err = nf_rd32(nf, NFABRIC_REG_LAST_ERROR);
			if (err != NFABRIC_ERR_ROUND) {
				dev_err_ratelimited(&nf->dev, "window %u: round complete refused with error %u\n",
						    r->index, err);
				rc = -EIO;
				goto out;
			}
			rc = -ESTALE;
		}
	}
	nf_round_read(nf, r);
	*out = true;		/* done, or ESTALE with the round as it is */
out:
	mutex_unlock(&nf->lock);
	return rc;
}

/*
 * Poll the round (the device has no interrupt for it) without holding the
 * lock while sleeping, so that other calls and detach go on; a detach ends
 * the wait with -ENODEV.
 */
static int nf_ioc_round_wait(struct nfabric_dev *nf, unsigned int cmd, void *arg, bool *out)
{
	struct nfabric_ioc_round *r = arg;
	unsigned long deadline;
	u32 seq;
	int rc;

	rc = nf_lock_live(nf);
	if (rc)
		return rc;
	rc = nf_round_enabled(nf, r->index);
	mutex_unlock(&nf->lock);
	if (rc)
		return rc;
	seq = r->seq;
	deadline = jiffies + msecs_to_jiffies(r->timeout_ms);
	for (;;) {
		rc = nf_lock_live(nf);
		if (rc)
			return rc;
		nf_round_read(nf, r);
		mutex_unlock(&nf->lock);
		if (r->seq != seq) {
			rc = -ESTALE;
			break;
		}
		if (r->all_done) {
			rc = 0;
			break;
		}
		if (time_after_eq(jiffies, deadline)) {
			rc = -ETIMEDOUT;
			break;
		}
		if (signal_pending(current))
			return -EINTR;
		msleep_interruptible(1);
	}
	*out = true;		/* the round as the wait left it */
	return rc;
}

/* ---- the ioctl table ------------------------------------------------------ */

/* What a command needs of its caller: NF_PRIV_* or, by its flags, this. */
#define NF_PRIV_BY_FLAGS	(-1)	/* admin with flags (clears), else read */

/*
 * One ioctl: its argument (every one starts with size and flags), the
 * flags it accepts, the privilege it needs, the checks of its other fields
 * (reserved fields zero, an index in range: -EINVAL), and what it does.
 * run() may set *out to have the argument copied back to the caller.
 */
struct nf_ioctl {
	unsigned int cmd;
	size_t size;
	u32 flags;
	int priv;
	bool (*fields_ok)(const struct nfabric_dev *nf, unsigned int cmd, const void *arg);
	int (*run)(struct nfabric_dev *nf, unsigned int cmd, void *arg, bool *out);
	bool need_rounds;	/* register layout 1.1: -EOPNOTSUPP before */
};

struct nf_ioc_header {
	__u32 size;
	__u32 flags;
};

static bool nf_info_ok(const struct nfabric_dev *nf, unsigned int cmd, const void *arg)
{
	return true;
}

static bool nf_win_set_ok(const struct nfabric_dev *nf, unsigned int cmd, const void *arg)
{
	const struct nfabric_ioc_window *w = arg;

	return !w->reserved0 && !w->enabled && !w->error && !w->contrib_writes &&
	       !w->contrib_bytes && !w->reserved_codes && !w->reserved1 &&
	       !w->reserved[0] && !w->reserved[1];
}

static bool nf_win_get_ok(const struct nfabric_dev *nf, unsigned int cmd, const void *arg)
{
	const struct nfabric_ioc_window *w = arg;

	return !w->reserved0 && !w->reserved1 && !w->reserved[0] && !w->reserved[1] &&
	       w->index < nf->num_windows;
}

static bool nf_win_cmd_ok(const struct nfabric_dev *nf, unsigned int cmd, const void *arg)
{
	const struct nfabric_ioc_window_cmd *c = arg;

	return !c->reserved && c->index < nf->num_windows;
}

static bool nf_stats_ok(const struct nfabric_dev *nf, unsigned int cmd, const void *arg)
{
	const struct nfabric_ioc_stats *st = arg;

	return !st->reserved0 && !st->reserved[0] && !st->reserved[1];
}

static bool nf_timing_ok(const struct nfabric_dev *nf, unsigned int cmd, const void *arg)
{
	const struct nfabric_ioc_timing *t = arg;

	return !t->reserved0 && !t->reserved1[0] && !t->reserved1[1] &&
	       !t->reserved[0] && !t->reserved[1];
}

static bool nf_round_ok(const struct nfabric_dev *nf, unsigned int cmd, const void *arg)
{
	const struct nfabric_ioc_round *r = arg;

	return !r->status && !r->done && !r->heads_done && !r->heads_expected &&
	       !r->all_done && !r->reserved[0] && !r->reserved[1] &&
	       r->index < nf->num_windows &&
	       !(cmd == NFABRIC_IOC_ROUND_GET && r->seq) &&
	       !(cmd != NFABRIC_IOC_ROUND_WAIT && r->timeout_ms) &&
	       r->timeout_ms <= NFABRIC_ROUND_MAX_TIMEOUT_MS;
}

#define NF_IOCTL(c, type, fl, pr, ok, fn, rounds) \
	{ .cmd = (c), .size = sizeof(type), .flags = (fl), .priv = (pr), \
	  .fields_ok = (ok), .run = (fn), .need_rounds = (rounds) }

static const struct nf_ioctl nf_ioctls[] = {
	NF_IOCTL(NFABRIC_IOC_INFO, struct nfabric_ioc_info, 0, NF_PRIV_READ,
		 nf_info_ok, nf_ioc_info, false),
	NF_IOCTL(NFABRIC_IOC_WIN_SET, struct nfabric_ioc_window, 0, NF_PRIV_ADMIN,
		 nf_win_set_ok, nf_ioc_win_set, false),
	NF_IOCTL(NFABRIC_IOC_WIN_GET, struct nfabric_ioc_window, 0, NF_PRIV_READ,
		 nf_win_get_ok, nf_ioc_win_get, false),
	NF_IOCTL(NFABRIC_IOC_WIN_DISABLE, struct nfabric_ioc_window_cmd, 0, NF_PRIV_ADMIN,
		 nf_win_cmd_ok, nf_ioc_win_cmd, false),
	NF_IOCTL(NFABRIC_IOC_WIN_CLEAR, struct nfabric_ioc_window_cmd, 0, NF_PRIV_ADMIN,
		 nf_win_cmd_ok, nf_ioc_win_cmd, false),
	NF_IOCTL(NFABRIC_IOC_STATS, struct nfabric_ioc_stats, NFABRIC_STATS_F_VALID,
		 NF_PRIV_BY_FLAGS, nf_stats_ok, nf_ioc_stats, false),
	NF_IOCTL(NFABRIC_IOC_TIMING, struct nfabric_ioc_timing, NFABRIC_TIMING_F_VALID,
		 NF_PRIV_BY_FLAGS, nf_timing_ok, nf_ioc_timing, false),
	NF_IOCTL(NFABRIC_IOC_ROUND_GET, struct nfabric_ioc_round, 0, NF_PRIV_READ,
		 nf_round_ok, nf_ioc_round_get, true),
	NF_IOCTL(NFABRIC_IOC_ROUND_COMPLETE, struct nfabric_ioc_round, 0, NF_PRIV_ADMIN,
		 nf_round_ok, nf_ioc_round_complete, true),
	NF_IOCTL(NFABRIC_IOC_ROUND_WAIT, struct nfabric_ioc_round, 0, NF_PRIV_READ,
		 nf_round_ok, nf_ioc_round_wait, true),
};

/* Room for the largest argument. */
union nf_ioc_arg {
	struct nf_ioc_header hdr;
	struct nfabric_ioc_info info;
	struct nfabric_ioc_window window;
	struct nfabric_ioc_window_cmd window_cmd;
	struct nfabric_ioc_stats stats;
	struct nfabric_ioc_timing timing;
	struct nfabric_ioc_round round;
};

/*
 * The one place an ioctl's argument is taken in and checked: copied in
 * (-EFAULT); a command that changes state needs its privilege first
 * (-EPERM); then its size, its flags and its other fields (-EINVAL); a
 * statistics or timing call that clears needs admin (-EPERM); a round
 * call needs register layout 1.1 (-EOPNOTSUPP).  Nothing that can fault
 * runs under the device's lock: the result is copied out after run().
 * The structure stays valid for the open file (a reference per file); a
 * detach makes every later call -ENODEV.
 */
static long nfabric_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct nfabric_file *nff = filp->private_data;
	struct nfabric_dev *nf = nff->nf;
	void __user *uarg = (void __user *)arg;
	const struct nf_ioctl *d = NULL;
	union nf_ioc_arg a;
	bool out = false;
	size_t k;
	int rc;

	for (k = 0; k < ARRAY_SIZE(nf_ioctls); k++) {
		if (nf_ioctls[k].cmd == cmd) {
			d = &nf_ioctls[k];
			break;
		}
	}
	if (!d)
		return -ENOTTY;
	if (WARN_ON_ONCE(d->size > sizeof(a)))
		return -ENOTTY;
	if (copy_from_user(&a, uarg, d->size))
		return -EFAULT;
	if (d->priv == NF_PRIV_ADMIN) {
		rc = nf_may(NF_PRIV_ADMIN);
		if (rc)
			return rc;
	}
	if (a.hdr.size != d->size || (a.hdr.flags & ~d->flags) || !d->fields_ok(nf, cmd, &a))
		return -EINVAL;
	if (d->priv == NF_PRIV_BY_FLAGS) {
		rc = nf_may(a.hdr.flags ? NF_PRIV_ADMIN : NF_PRIV_READ);
		if (rc)
			return rc;
	}
	if (d->need_rounds && !nf_has_rounds(nf))
		return -EOPNOTSUPP;
	rc = d->run(nf, cmd, &a, &out);
	if (out && copy_to_user(uarg, &a, d->size))
		return -EFAULT;
	return rc;
}

/* ---- register mapping -------------------------------------------------- */

/*
 * The page is inserted at fault time under nf->revoke (read), so that
 * detach (which clears nf->mapped and then zaps every mapping under the
 * same semaphore, written) leaves no mapping behind: a later access faults
 * again and gets SIGBUS.  The device's mutex is not taken here: a fault
 * can come from anywhere, and nothing it does can leave the mutex held.
 * Nothing in it can BUG either: private mappings, other offsets and sizes
 * were refused by mmap() and are refused again here.
 */
static vm_fault_t nfabric_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct nfabric_file *nff = vma->vm_private_data;
	struct nfabric_dev *nf = nff->nf;
	vm_fault_t ret = VM_FAULT_SIGBUS;

	if (is_cow_mapping(vma->vm_flags) || !(vma->vm_flags & VM_PFNMAP) ||
	    vmf->pgoff || vma->vm_end - vma->vm_start != PAGE_SIZE)
		return VM_FAULT_SIGBUS;
	down_read(&nf->revoke);
	if (nf->mapped)
		ret = vmf_insert_pfn(vma, vmf->address, PHYS_PFN(nf->regs_phys));
	up_read(&nf->revoke);
	return ret;
}

static const struct vm_operations_struct nfabric_vm_ops = {
	.fault = nfabric_vm_fault,
};

static int nfabric_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct nfabric_file *nff = filp->private_data;
	struct nfabric_dev *nf = nff->nf;
	int rc;

	rc = nf_may(NF_PRIV_RAWIO);
	if (rc)
		return rc;
	/* The rule libnfabric follows too (nfabric_checks.h). */
	rc = nfabric_check_regs_mmap(vma->vm_flags & VM_MAYSHARE, vma->vm_flags & VM_EXEC,
				     (u64)vma->vm_pgoff << PAGE_SHIFT,
				     vma->vm_end - vma->vm_start, PAGE_SIZE);
	if (rc) {
		dev_dbg(&nf->dev, "mmap refused (%s%s, offset %#lx, %lu bytes)\n",
			vma->vm_flags & VM_MAYSHARE ? "shared" : "private",
			vma->vm_flags & VM_EXEC ? ", executable" : "",
			vma->vm_pgoff << PAGE_SHIFT, vma->vm_end - vma->vm_start);
		return rc;
	}
	rc = nf_lock_live(nf);
	if (rc)
		return rc;
	/* Never executable later either (mprotect(PROT_EXEC) fails). */
	vm_flags_mod(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP, VM_MAYEXEC);
	vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
	vma->vm_private_data = nff;
	vma->vm_ops = &nfabric_vm_ops;
	mutex_unlock(&nf->lock);
	return 0;
}

/* ---- open / release ---------------------------------------------------- */

static int nfabric_open(struct inode *inode, struct file *filp)
{
	struct nfabric_dev *nf = container_of(inode->i_cdev, struct nfabric_dev, cdev);
	struct nfabric_file *nff;

	nff = kzalloc(sizeof(*nff), GFP_KERNEL);
	if (!nff)
		return -ENOMEM;
	nff->nf = nf;
	nff->filp = filp;
	scoped_guard(mutex, &nf->lock) {
		if (!nf->regs) {
			kfree(nff);
			return -ENODEV;
		}
		get_device(&nf->dev);
		list_add(&nff->node, &nf->files);
	}
	filp->private_data = nff;
	return nonseekable_open(inode, filp);
}

static int nfabric_release(struct inode *inode, struct file *filp)
{
	struct nfabric_file *nff = filp->private_data;
	struct nfabric_dev *nf = nff->nf;

	scoped_guard(mutex, &nf->lock)
		list_del(&nff->node);
	kfree(nff);
	put_device(&nf->dev);
	return 0;
}

static const struct file_operations nfabric_fops = {
	.owner = THIS_MODULE,
	.open = nfabric_open,
	.release = nfabric_release,
	.unlocked_ioctl = nfabric_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = nfabric_mmap,
	.llseek = noop_llseek,
};

/* ---- sysfs ------------------------------------------------------------- */

static ssize_t version_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct nfabric_dev *nf = to_nfabric(dev);

	return sysfs_emit(buf, "%u.%u\n", nf->version >> 16, nf->version & 0xffff);
}
static DEVICE_ATTR_RO(version);

static ssize_t caps_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "0x%08x\n", to_nfabric(dev)->caps);
}
static DEVICE_ATTR_RO(caps);

static ssize_t num_windows_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_nfabric(dev)->num_windows);
}
static DEVICE_ATTR_RO(num_windows);

static ssize_t mem_size_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", to_nfabric(dev)->mem_size);
}
static DEVICE_ATTR_RO(mem_size);

static ssize_t regs_phys_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%pa\n", &to_nfabric(dev)->regs_phys);
}
static DEVICE_ATTR_RO(regs_phys);

static ssize_t memdev_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct nfabric_dev *nf = to_nfabric(dev);

	return sysfs_emit(buf, "%s\n", nf->memdev ? dev_name(nf->memdev) : "");
}
static DEVICE_ATTR_RO(memdev);

static struct attribute *nfabric_attrs[] = {
	&dev_attr_version.attr,
	&dev_attr_caps.attr,
	&dev_attr_num_windows.attr,
	&dev_attr_mem_size.attr,
	&dev_attr_regs_phys.attr,
	&dev_attr_memdev.attr,
	NULL
};

static const struct attribute_group nfabric_group = {
	.attrs = nfabric_attrs,
};

/* A live register: @var is (size << 16 | offset), size 4 or 8. */
static ssize_t nf_reg_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct nfabric_dev *nf = to_nfabric(dev);
	unsigned long v = (unsigned long)container_of(attr, struct dev_ext_attribute, attr)->var;
	u32 off = v & 0xffff;

	guard(mutex)(&nf->lock);
	if (!nf->regs)
		return -ENODEV;
	if (v >> 16 == 8)
		return sysfs_emit(buf, "%llu\n", nf_rd64(nf, off));
	return sysfs_emit(buf, "%u\n", nf_rd32(nf, off));
}

#define NF_REG_ATTR(_name, _size, _off)					\
	struct dev_ext_attribute dev_attr_##_name = {			\
		__ATTR(_name, 0444, nf_reg_show, NULL),			\
		(void *)(((_size) << 16) | (_off))			\
	}

/* Statistics register F of path P. */
#define NF_STAT(P, F)	NFABRIC_REG_STATS_PATH(NFABRIC_PATH_##P, NFABRIC_STATS_##F)

static NF_REG_ATTR(fp32_reads, 8, NF_STAT(FP32, READS));
static NF_REG_ATTR(fp32_writes, 8, NF_STAT(FP32, WRITES));
static NF_REG_ATTR(fp32_read_bytes, 8, NF_STAT(FP32, READ_BYTES));
static NF_REG_ATTR(fp32_write_bytes, 8, NF_STAT(FP32, WRITE_BYTES));
static NF_REG_ATTR(gbinary_reads, 8, NF_STAT(GBINARY, READS));
static NF_REG_ATTR(gbinary_writes, 8, NF_STAT(GBINARY, WRITES));
static NF_REG_ATTR(gbinary_read_bytes, 8, NF_STAT(GBINARY, READ_BYTES));
static NF_REG_ATTR(gbinary_write_bytes, 8, NF_STAT(GBINARY, WRITE_BYTES));
static NF_REG_ATTR(gternary_reads, 8, NF_STAT(GTERNARY, READS));
static NF_REG_ATTR(gternary_writes, 8, NF_STAT(GTERNARY, WRITES));
static NF_REG_ATTR(gternary_read_bytes, 8, NF_STAT(GTERNARY, READ_BYTES));
static NF_REG_ATTR(gternary_write_bytes, 8, NF_STAT(GTERNARY, WRITE_BYTES));
static NF_REG_ATTR(enabled_mask, 4, NFABRIC_REG_ENABLED_MASK);
static NF_REG_ATTR(error_count, 4, NFABRIC_REG_ERROR_COUNT);
static NF_REG_ATTR(last_error, 4, NFABRIC_REG_LAST_ERROR);
static NF_REG_ATTR(exposed_ppm, 4, NFABRIC_REG_T_EXPOSED_PPM);
static NF_REG_ATTR(total_ps, 8, NFABRIC_REG_T_TOTAL_PS);

/*
 * stats/clear: write "stats", "timing" or "errors" to clear them, as the
 * ioctls' clear flags do, with the same privilege (CAP_SYS_ADMIN).
 */
static ssize_t clear_store(struct device *dev, struct device_attribute *attr,
			   const char *buf, size_t count)
{
	struct nfabric_dev *nf = to_nfabric(dev);
	u32 ctrl;
	int rc;

	rc = nf_may(NF_PRIV_ADMIN);
	if (rc)
		return rc;
	if (sysfs_streq(buf, "stats"))
		ctrl = NFABRIC_CTRL_CLEAR_STATS;
	else if (sysfs_streq(buf, "timing"))
		ctrl = NFABRIC_CTRL_CLEAR_TIMING;
	else if (sysfs_streq(buf, "errors"))
		ctrl = NFABRIC_CTRL_CLEAR_ERROR;
	else
		return -EINVAL;
	rc = nf_lock_live(nf);
	if (rc)
		return rc;
	nf_wr32(nf, NFABRIC_REG_CTRL, ctrl);
	mutex_unlock(&nf->lock);
	return count;
}
static DEVICE_ATTR_WO(clear);

static struct attribute *nfabric_stats_attrs[] = {
	&dev_attr_clear.attr,
	&dev_attr_fp32_reads.attr.attr,
	&dev_attr_fp32_writes.attr.attr,
	&dev_attr_fp32_read_bytes.attr.attr,
	&dev_attr_fp32_write_bytes.attr.attr,
	&dev_attr_gbinary_reads.attr.attr,
	&dev_attr_gbinary_writes.attr.attr,
	&dev_attr_gbinary_read_bytes.attr.attr,
	&dev_attr_gbinary_write_bytes.attr.attr,
	&dev_attr_gternary_reads.attr.attr,
	&dev_attr_gternary_writes.attr.attr,
	&dev_attr_gternary_read_bytes.attr.attr,
	&dev_attr_gternary_write_bytes.attr.attr,
	&dev_attr_enabled_mask.attr.attr,
	&dev_attr_error_count.attr.attr,
	&dev_attr_last_error.attr.attr,
	&dev_attr_exposed_ppm.attr.attr,
	&dev_attr_total_ps.attr.attr,
	NULL
};

static const struct attribute_group nfabric_stats_group = {
	.name = "stats",
	.attrs = nfabric_stats_attrs,
};

static const struct attribute_group *nfabric_groups[] = {
	&nfabric_group,
	&nfabric_stats_group,
	NULL
};

/* ---- attach / detach ---------------------------------------------------- */

static void nfabric_dev_release(struct device *dev)
{
	struct nfabric_dev *nf = to_nfabric(dev);

	ida_free(&nfabric_ida, nf->id);
	pci_dev_put(nf->pdev);
	kfree(nf);
}

static int nf_match_memdev(struct device *dev, void *data)
{
	return dev->bus && !strcmp(dev->bus->name, "cxl") &&
	       !strncmp(dev_name(dev), "mem", 3);
}

static struct nfabric_dev *nf_find(struct pci_dev *pdev)
{
	struct nfabric_dev *nf;

	lockdep_assert_held(&nfabric_devs_lock);
	list_for_each_entry(nf, &nfabric_devs, node)
		if (nf->pdev == pdev)
			return nf;
	return NULL;
}

/* Called with the PCI device's lock held, once cxl_pci is bound to it. */
static int nfabric_attach(struct pci_dev *pdev)
{
	struct nfabric_dev *nf;
	resource_size_t start;
	struct device *dev;
	u32 magic;
	int rc;

	guard(mutex)(&nfabric_devs_lock);
	if (nf_find(pdev))
		return 0;
	if (!(pci_resource_flags(pdev, 0) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, 0) < NFABRIC_REGS_OFFSET + NFABRIC_REGS_SIZE) {
		pci_err(pdev, "nfabric: BAR0 is too small for the controller block\n");
		return -ENXIO;
	}
	nf = kzalloc(sizeof(*nf), GFP_KERNEL);
	if (!nf)
		return -ENOMEM;
	rc = ida_alloc_max(&nfabric_ida, NFABRIC_MAX_DEVS - 1, GFP_KERNEL);
	if (rc < 0) {
		kfree(nf);
		return rc;
	}
	nf->id = rc;
	nf->pdev = pci_dev_get(pdev);
	mutex_init(&nf->lock);
	init_rwsem(&nf->revoke);
	INIT_LIST_HEAD(&nf->files);

	dev = &nf->dev;
	device_initialize(dev);
	dev->class = &nfabric_class;
	dev->parent = &pdev->dev;
	dev->devt = MKDEV(MAJOR(nfabric_devt), nf->id);
	dev->groups = nfabric_groups;
	dev->release = nfabric_dev_release;
	/* From here on, put_device() frees everything above. */
	rc = dev_set_name(dev, "nfabric%d", nf->id);
	if (rc)
		goto err_put;

	/*
	 * No request_mem_region(): BAR0 belongs to cxl_pci, which maps the
	 * CXL register blocks in it.  The controller block is a range the
	 * CXL specification leaves to the implementation, unused by Linux.
	 */
	start = pci_resource_start(pdev, 0) + NFABRIC_REGS_OFFSET;
	nf->regs_phys = start;
	nf->regs = ioremap(start, NFABRIC_REGS_SIZE);
	if (!nf->regs) {
		rc = -ENOMEM;
		goto err_put;
	}
	magic = nf_rd32(nf, NFABRIC_REG_MAGIC);
	nf->version = nf_rd32(nf, NFABRIC_REG_VERSION);
	if (magic != NFABRIC_MAGIC || nf->version >> 16 != NFABRIC_VERSION_MAJOR) {
		pci_err(pdev, "nfabric: no controller at BAR0+%#x (magic %#x, version %#x)\n",
			NFABRIC_REGS_OFFSET, magic, nf->version);
		rc = -ENODEV;
		goto err_unmap;
	}
	nf->caps = nf_rd32(nf, NFABRIC_REG_CAPS);
	nf->num_windows = min_t(u32, nf->caps & NFABRIC_CAPS_WINDOWS_MASK,
				NFABRIC_NUM_WINDOWS);
	nf->mem_size = nf_rd64(nf, NFABRIC_REG_MEM_SIZE);
	/*
	 * The HDM decoders, read (never written: they are the CXL core's) to
	 * know where the host maps device memory.  Without them WIN_SET cannot
	 * tell System RAM or interleaving, as libnfabric without a region.
	 */
	nf->cm = ioremap(pci_resource_start(pdev, 0) + NF_CM_OFFSET, NF_CM_SIZE);
	if (nf->cm) {
		nf->hdm = nf_find_hdm(nf->cm);
		if (!nf->hdm)
			pci_info(pdev, "nfabric: no HDM decoder capability found\n");
	}
	nf->memdev = device_find_child(&pdev->dev, NULL, nf_match_memdev);
	nf->mapped = true;

	cdev_init(&nf->cdev, &nfabric_fops);
	nf->cdev.owner = THIS_MODULE;
	rc = cdev_device_add(&nf->cdev, dev);
	if (rc)
		goto err_memdev;
	if (nf->memdev) {
		rc = sysfs_create_link(&dev->kobj, &nf->memdev->kobj, "cxl_memdev");
		if (rc)
			goto err_del;
	}
	list_add_tail(&nf->node, &nfabric_devs);
	dev_info(dev, "NEURON-Fabric %u.%u on %s (%s): %u windows, %llu MiB, registers at %pa\n",
		 nf->version >> 16, nf->version & 0xffff, pci_name(pdev),
		 nf->memdev ? dev_name(nf->memdev) : "no cxl_memdev", nf->num_windows,
		 nf->mem_size >> 20, &nf->regs_phys);
	return 0;

err_del:
	cdev_device_del(&nf->cdev, dev);
err_memdev:
	put_device(nf->memdev);
	if (nf->cm)
		iounmap(nf->cm);
	nf->cm = NULL;
	nf->mapped = false;
err_unmap:
	iounmap(nf->regs);
	nf->regs = NULL;
err_put:
	put_device(dev);
	return rc;
}

/*
 * Revoke the device: later calls on open files get -ENODEV, register
 * mappings are zapped (SIGBUS on the next access), the device node goes.
 * The structure lives on until the last file is closed.
 */
static void nfabric_detach(struct nfabric_dev *nf, const char *why)
{
	struct nfabric_file *nff;
	void __iomem *regs, *cm;
	unsigned int open = 0;

	lockdep_assert_held(&nfabric_devs_lock);
	list_del(&nf->node);
	scoped_guard(mutex, &nf->lock) {
		regs = nf->regs;
		cm = nf->cm;
		nf->regs = NULL;
		nf->cm = NULL;
		/* No fault inserts the page from here on; then zap the rest. */
		down_write(&nf->revoke);
		nf->mapped = false;
		list_for_each_entry(nff, &nf->files, node) {
			unmap_mapping_range(nff->filp->f_mapping, 0, 0, 1);
			open++;
		}
		up_write(&nf->revoke);
	}
	iounmap(regs);
	if (cm)
		iounmap(cm);
	if (nf->memdev) {
		sysfs_remove_link(&nf->dev.kobj, "cxl_memdev");
		put_device(nf->memdev);
		nf->memdev = NULL;
	}
	dev_info(&nf->dev, "detached (%s), %u open file%s revoked\n", why, open,
		 open == 1 ? "" : "s");
	cdev_device_del(&nf->cdev, &nf->dev);
	put_device(&nf->dev);
}

static void nfabric_attach_logged(struct pci_dev *pdev)
{
	int rc = nfabric_attach(pdev);

	if (rc)
		pci_err(pdev, "nfabric: not attached (%pe)\n", ERR_PTR(rc));
}

static bool nf_is_ours(struct pci_dev *pdev)
{
	return pdev->vendor == NFABRIC_PCI_VENDOR_ID &&
	       pdev->device == NFABRIC_PCI_DEVICE_ID;
}

static bool nf_host_bound(struct pci_dev *pdev)
{
	return pdev->dev.driver && !strcmp(pdev->dev.driver->name, NFABRIC_HOST_DRIVER);
}

static int nfabric_pci_notify(struct notifier_block *nb, unsigned long action, void *data)
{
	struct pci_dev *pdev = to_pci_dev(data);
	struct nfabric_dev *nf;

	if (!nf_is_ours(pdev))
		return NOTIFY_DONE;
	switch (action) {
	case BUS_NOTIFY_BOUND_DRIVER:
		if (nf_host_bound(pdev))
			nfabric_attach_logged(pdev);
		break;
	case BUS_NOTIFY_UNBIND_DRIVER:
	case BUS_NOTIFY_DEL_DEVICE: {
		guard(mutex)(&nfabric_devs_lock);
		nf = nf_find(pdev);
		if (nf)
			nfabric_detach(nf, action == BUS_NOTIFY_DEL_DEVICE ?
				       "device removed" : "driver unbinding");
		break;
	}
	}
	return NOTIFY_OK;
}

static struct notifier_block nfabric_pci_nb = {
	.notifier_call = nfabric_pci_notify,
};

static int __init nfabric_init(void)
{
	struct pci_dev *pdev = NULL;
	int rc;

	rc = alloc_chrdev_region(&nfabric_devt, 0, NFABRIC_MAX_DEVS, "nfabric");
	if (rc)
		return rc;
	rc = class_register(&nfabric_class);
	if (rc)
		goto err_chrdev;
	/* First the notifier, then the devices already bound: none is missed. */
	rc = bus_register_notifier(&pci_bus_type, &nfabric_pci_nb);
	if (rc)
		goto err_class;
	while ((pdev = pci_get_device(NFABRIC_PCI_VENDOR_ID, NFABRIC_PCI_DEVICE_ID, pdev))) {
		device_lock(&pdev->dev);
		if (nf_host_bound(pdev))
			nfabric_attach_logged(pdev);
		else
			pci_info(pdev, "nfabric: not bound to %s, not attached\n",
				 NFABRIC_HOST_DRIVER);
		device_unlock(&pdev->dev);
	}
	return 0;

err_class:
	class_unregister(&nfabric_class);
err_chrdev:
	unregister_chrdev_region(nfabric_devt, NFABRIC_MAX_DEVS);
	return rc;
}

static void __exit nfabric_exit(void)
{
	struct nfabric_dev *nf, *tmp;

	bus_unregister_notifier(&pci_bus_type, &nfabric_pci_nb);
	scoped_guard(mutex, &nfabric_devs_lock) {
		list_for_each_entry_safe(nf, tmp, &nfabric_devs, node)
			nfabric_detach(nf, "module unload");
	}
	class_unregister(&nfabric_class);
	unregister_chrdev_region(nfabric_devt, NFABRIC_MAX_DEVS);
	ida_destroy(&nfabric_ida);
}

module_init(nfabric_init);
module_exit(nfabric_exit);

MODULE_DESCRIPTION("NEURON-Fabric CXL aggregation controller (reference driver)");
MODULE_LICENSE("GPL");
MODULE_AUTHOR("NEURON-Fabric project");
