// SPDX-License-Identifier: GPL-2.0
/*
 * NEURON-Fabric aggregation controller: reference driver, core: locking,
 * where the host maps device memory, the register mapping, open/release
 * and sysfs.
 *
 * The controller's registers are the register page of a designated vendor
 * specific register block that the Register Locator DVSEC of a CXL Type-3
 * memory device (PCI 1b36:00f0, class 050210) names (docs/registers.md).  cxl_pci owns the PCI
 * device and its BARs, so this driver does not bind to it: a PCI bus
 * notifier attaches to each such device while cxl_pci is bound to it, maps
 * the 4 KiB block without requesting the region (cxl_pci's mappings of the
 * CXL register blocks stay untouched) and exposes /dev/nfabricN with the
 * ioctls of uapi/nfabric.h and sysfs attributes.  docs/driver.md.
 */
#include "core.h"

/* ---- privileges, locking -------------------------------------------- */

int nf_may(enum nf_priv p)
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
int nf_lock_live(struct nfabric_dev *nf)
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
u32 nf_find_hdm(void __iomem *cm)
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
unsigned int nf_mem_spans(struct nfabric_dev *nf, struct nfabric_mem_span *spans)
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
bool nf_is_sysram(void *ctx, u64 hpa, u64 len, u64 *start, u64 *end)
{
	struct nf_ram_hit hit;

	if (walk_iomem_res_desc(IORES_DESC_NONE, IORESOURCE_SYSTEM_RAM, hpa,
				hpa + len - 1, &hit, nf_ram_found) != 1)
		return false;
	*start = hit.start;
	*end = hit.end;
	return true;
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
	nf_irq_file_open(nff);
	filp->private_data = nff;
	return nonseekable_open(inode, filp);
}

static int nfabric_release(struct inode *inode, struct file *filp)
{
	struct nfabric_file *nff = filp->private_data;
	struct nfabric_dev *nf = nff->nf;

	scoped_guard(mutex, &nf->lock)
		list_del(&nff->node);
	nf_irq_file_release(nff);
	kfree(nff);
	put_device(&nf->dev);
	return 0;
}

const struct file_operations nfabric_fops = {
	.owner = THIS_MODULE,
	.open = nfabric_open,
	.release = nfabric_release,
	.unlocked_ioctl = nfabric_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = nfabric_mmap,
	.poll = nf_irq_poll,
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

const struct attribute_group *nfabric_groups[] = {
	&nfabric_group,
	&nfabric_stats_group,
	NULL
};

