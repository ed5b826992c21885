// SPDX-License-Identifier: GPL-2.0
/*
 * NEURON-Fabric reference driver: attaching to each controller while
 * cxl_pci is bound to its PCI device (a bus notifier), detaching, and the
 * module (docs/driver.md).
 */
#include "core.h"

dev_t nfabric_devt;
static DEFINE_IDA(nfabric_ida);
/* The attached devices; also serialises attach against detach. */
static DEFINE_MUTEX(nfabric_devs_lock);
static LIST_HEAD(nfabric_devs);

const struct class nfabric_class = {
	.name = "nfabric",
};

/* ---- attach / detach ---------------------------------------------------- */

static void nfabric_dev_release(struct device *dev)
{
	struct nfabric_dev *nf = to_nfabric(dev);

	ida_free(&nfabric_ida, nf->id);
	pci_dev_put(nf->pdev);
	kfree(nf);
}

/*
 * The PCI device's cxl_memdev: its child on the cxl bus named memN, with a
 * reference, as device_find_child() would return it.  Found with
 * device_for_each_child(), whose callback is the same on every kernel the
 * driver builds for: device_find_child()'s match data became const in
 * 6.15 (device_match_t), which 6.12's does not take.
 */
static int nf_memdev_of(struct device *dev, void *data)
{
	struct device **found = data;

	if (!dev->bus || strcmp(dev->bus->name, "cxl") ||
	    strncmp(dev_name(dev), "mem", 3))
		return 0;
	*found = get_device(dev);
	return 1;
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

/*
 * The controller's registers, as the device names them: the designated
 * vendor specific block (identifier 0xff) of the Register Locator DVSEC
 * whose header says NEURON-Fabric (docs/registers.md, "Finding the block").
 * Returns the physical address of the registers, or 0 after saying why.
 */
static resource_size_t nf_find_regs(struct pci_dev *pdev)
{
	u32 hdr1, lo, hi, id, rev, len;
	resource_size_t start;
	void __iomem *h;
	u16 loc, end, e;
	u64 off;
	int bar;

	loc = pci_find_dvsec_capability(pdev, NFABRIC_CXL_DVSEC_VENDOR_ID,
					NFABRIC_CXL_DVSEC_REGLOC);
	if (!loc) {
		pci_err(pdev, "nfabric: no Register Locator DVSEC\n");
		return 0;
	}
	pci_read_config_dword(pdev, loc + PCI_DVSEC_HEADER1, &hdr1);
	end = loc + PCI_DVSEC_HEADER1_LEN(hdr1);
	for (e = loc + NFABRIC_REGLOC_ENTRIES; e + 8 <= end; e += 8) {
		pci_read_config_dword(pdev, e, &lo);
		pci_read_config_dword(pdev, e + 4, &hi);
		if (FIELD_GET(NFABRIC_REGLOC_RBI_MASK, lo) != NFABRIC_REGLOC_RBI_VENDOR)
			continue;
		bar = FIELD_GET(NFABRIC_REGLOC_BIR_MASK, lo);
		off = (u64)hi << 32 | (lo & NFABRIC_REGLOC_OFF_LO_MASK);
		if (bar >= PCI_STD_NUM_BARS ||
		    !(pci_resource_flags(pdev, bar) & IORESOURCE_MEM) ||
		    off > pci_resource_len(pdev, bar) ||
		    pci_resource_len(pdev, bar) - off < NFABRIC_DVS_SIZE) {
			pci_info(pdev, "nfabric: vendor block at BAR%d + %#llx is outside the BAR\n",
				 bar, off);
			continue;
		}
		start = pci_resource_start(pdev, bar) + off;
		h = ioremap(start, NFABRIC_DVS_HDR_SIZE);
		if (!h)
			return 0;
		id = readl(h + NFABRIC_DVS_HDR_ID);
		rev = readl(h + NFABRIC_DVS_HDR_REVISION) & 0xf;
		len = readl(h + NFABRIC_DVS_HDR_LENGTH);
		iounmap(h);
		if (id != NFABRIC_DVS_ID || rev < NFABRIC_DVS_REVISION ||
		    len < NFABRIC_DVS_REGS + NFABRIC_REGS_SIZE) {
			pci_info(pdev, "nfabric: vendor block at BAR%d + %#llx is not ours (id %#x, revision %u, length %#x)\n",
				 bar, off, id, rev, len);
			continue;
		}
		return start + NFABRIC_DVS_REGS;
	}
	pci_err(pdev, "nfabric: the Register Locator names no NEURON-Fabric block (vendor %#x, block %#x)\n",
		NFABRIC_DVS_VENDOR_ID, NFABRIC_DVS_BLOCK_ID);
	return 0;
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
	start = nf_find_regs(pdev);
	if (!start)
		return -ENODEV;
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
	 * CXL register blocks in it (not the vendor block, which Linux
	 * leaves alone).
	 */
	nf->regs_phys = start;
	nf->regs = ioremap(start, NFABRIC_REGS_SIZE);
	if (!nf->regs) {
		rc = -ENOMEM;
		goto err_put;
	}
	magic = nf_rd32(nf, NFABRIC_REG_MAGIC);
	nf->version = nf_rd32(nf, NFABRIC_REG_VERSION);
	if (magic != NFABRIC_MAGIC || nf->version >> 16 != NFABRIC_VERSION_MAJOR) {
		pci_err(pdev, "nfabric: no controller at %pa (magic %#x, version %#x)\n",
			&start, magic, nf->version);
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
	device_for_each_child(&pdev->dev, &nf->memdev, nf_memdev_of);
	nf->mapped = true;
	nf_irq_setup(nf);

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
	dev_info(dev, "NEURON-Fabric %u.%u on %s (%s): %u windows, %llu MiB, registers at %pa, %s\n",
		 nf->version >> 16, nf->version & 0xffff, pci_name(pdev),
		 nf->memdev ? dev_name(nf->memdev) : "no cxl_memdev", nf->num_windows,
		 nf->mem_size >> 20, &nf->regs_phys,
		 nf->irq >= 0 ? "interrupt" : "no interrupt (waits poll)");
	return 0;

err_del:
	cdev_device_del(&nf->cdev, dev);
err_memdev:
	nf_irq_teardown(nf);
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
	/* Before the registers go: the handler reads them. */
	nf_irq_teardown(nf);
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
	wake_up_interruptible_all(&nf->wq);	/* waiters: -ENODEV */
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
