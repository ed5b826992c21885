// SPDX-License-Identifier: GPL-2.0
/*
 * NEURON-Fabric reference driver: the ioctls of uapi/nfabric.h, one table
 * and one validator (docs/driver.md).
 */
#include "core.h"

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

/* HEAD_INFO.STATE_FAILED (layout 1.3): no round this head waits for ends. */
static bool nf_has_heads_failed(struct nfabric_dev *nf)
{
	return (nf->version & 0xffff) >= 3 &&
	       (nf_rd32(nf, NFABRIC_REG_HEAD_INFO) & NFABRIC_HEAD_INFO_STATE_FAILED);
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
 * Wait for the round without holding the lock while sleeping, so that
 * other calls and detach go on; a detach ends the wait with -ENODEV.  With
 * the device's interrupt (irq.c) it sleeps until a message (or 100 ms, for
 * what raises none: the round moving on); without, it looks every ms.
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
		/* Read before looking: a message after the look wakes the sleep. */
		u64 seen = nf_irq_events(nf);
		bool failed;

		rc = nf_lock_live(nf);
		if (rc)
			return rc;
		nf_round_read(nf, r);
		failed = nf_has_heads_failed(nf);
		mutex_unlock(&nf->lock);
		if (failed) {
			rc = -EIO;
			break;
		}
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
		rc = nf_irq_wait(nf, seen, min_t(unsigned long, deadline - jiffies,
						 msecs_to_jiffies(100)));
		if (rc)
			return rc;
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
	/* Instead of run: a command of the open file's own (irq.c). */
	int (*run_file)(struct nfabric_file *nff, void *arg, bool *out);
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

static bool nf_events_ok(const struct nfabric_dev *nf, unsigned int cmd, const void *arg)
{
	const struct nfabric_ioc_events *e = arg;

	return !e->done && !e->incomplete && !e->head && !e->irq &&
	       !e->reserved[0] && !e->reserved[1];
}

static bool nf_eventfd_ok(const struct nfabric_dev *nf, unsigned int cmd, const void *arg)
{
	const struct nfabric_ioc_eventfd *e = arg;

	return !e->reserved && e->fd >= -1;
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
#define NF_IOCTL_FILE(c, type, ok, fn) \
	{ .cmd = (c), .size = sizeof(type), .flags = 0, .priv = NF_PRIV_READ, \
	  .fields_ok = (ok), .run_file = (fn), .need_rounds = true }

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
	NF_IOCTL_FILE(NFABRIC_IOC_EVENTS, struct nfabric_ioc_events,
		      nf_events_ok, nf_ioc_events),
	NF_IOCTL_FILE(NFABRIC_IOC_EVENTFD, struct nfabric_ioc_eventfd,
		      nf_eventfd_ok, nf_ioc_eventfd),
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
	struct nfabric_ioc_events events;
	struct nfabric_ioc_eventfd eventfd;
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
long nfabric_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
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
	rc = d->run_file ? d->run_file(nff, &a, &out) : d->run(nf, cmd, &a, &out);
	if (out && copy_to_user(uarg, &a, d->size))
		return -EFAULT;
	return rc;
}

