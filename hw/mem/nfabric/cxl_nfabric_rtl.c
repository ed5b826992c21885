/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric device: the low-bit datapath served by its RTL.
 *
 * rtl=serve|compare loads rtl-lib, the Verilated RTL datapath (hw/rtl/
 * nf_agg.v) built as a shared library by the project (hw/rtl/nfrtl.h, ABI
 * version 1; scripts/nfabric rtl-lib prints its path), with dlopen(), so
 * QEMU itself stays C.  The controller then hands every low-bit access to
 * it (serve) or runs it beside the engine and drops the first access on
 * which they differ, with an error report (compare).  docs/rtl.md.
 */

#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/mem/cxl_nfabric.h"
#include "system/system.h"
#include "trace.h"
#include <dlfcn.h>

/* The library's interface (hw/rtl/nfrtl.h), by its C symbols. */
#define NFABRIC_RTL_ABI_VERSION 1

/* Differences reported in full; later ones are counted and traced. */
#define NFABRIC_RTL_REPORTS     8

void nfabric_rtl_mismatch(CXLNFabricState *s, unsigned win, bool write,
                          uint64_t off, unsigned len, const char *what)
{
    trace_nfabric_rtl_mismatch(win, write, off, len, what);
    if (s->ctrl.rtl_mismatches <= NFABRIC_RTL_REPORTS) {
        error_report("%s: rtl=compare: the RTL and the engine differ on a "
                     "%u-byte %s of window %u at +0x%" PRIx64 ": %s; the "
                     "access was dropped%s", TYPE_CXL_NFABRIC, len,
                     write ? "write" : "read", win, off, what,
                     s->ctrl.rtl_mismatches == NFABRIC_RTL_REPORTS ?
                     " (later differences: 'rtl-mismatches', trace "
                     "nfabric_rtl_mismatch)" : "");
    }
}

static void nfabric_rtl_exit_notify(Notifier *n, void *data)
{
    CXLNFabricState *s = container_of(n, CXLNFabricState, rtl_exit_notifier);
    NFabricRtlLib *l = &s->rtl_lib_fn;

    info_report("%s: rtl=%s: %" PRIu64 " low-bit accesses through the RTL "
                "(%" PRIu64 " lines, %" PRIu64 " cycles, latency %u cycles), "
                "%" PRIu64 " differences from the engine", TYPE_CXL_NFABRIC,
                s->rtl, s->ctrl.rtl_accesses, l->lines(l->model),
                l->cycles(l->model), l->latency(l->model),
                s->ctrl.rtl_mismatches);
}

/*
 * The library's symbol name into *slot (a function pointer: POSIX lets a
 * dlsym() result be one); false and *errp set if it has none.
 */
static bool nfabric_rtl_sym(CXLNFabricState *s, const char *name, void *slot,
                            Error **errp)
{
    void *p = dlsym(s->rtl_lib_fn.handle, name);

    if (!p) {
        error_setg(errp, "%s: property 'rtl-lib': '%s' has no symbol '%s': "
                   "not a libnfrtl.so (hw/rtl/nfrtl.h)", TYPE_CXL_NFABRIC,
                   s->rtl_lib, name);
        return false;
    }
    memcpy(slot, &p, sizeof(p));
    return true;
}

bool nfabric_rtl_load(CXLNFabricState *s, Error **errp)
{
    NFabricRtlLib *l = &s->rtl_lib_fn;
    int (*abi)(void);
    const char *err;

    if (!s->rtl || !strcmp(s->rtl, "off")) {
        s->rtl_mode = NFABRIC_RTL_OFF;
        if (s->rtl_lib) {
            error_setg(errp, "%s: property 'rtl-lib' needs 'rtl=serve' or "
                       "'rtl=compare'", TYPE_CXL_NFABRIC);
            return false;
        }
        return true;
    }
    if (!strcmp(s->rtl, "serve")) {
        s->rtl_mode = NFABRIC_RTL_SERVE;
    } else if (!strcmp(s->rtl, "compare")) {
        s->rtl_mode = NFABRIC_RTL_COMPARE;
    } else {
        error_setg(errp, "%s: property 'rtl' must be off, serve or compare, "
                   "not '%s'", TYPE_CXL_NFABRIC, s->rtl);
        return false;
    }
    if (!s->rtl_lib || !*s->rtl_lib) {
        error_setg(errp, "%s: property 'rtl=%s' needs 'rtl-lib', the path of "
                   "libnfrtl.so (scripts/nfabric rtl-lib builds it and prints "
                   "it)", TYPE_CXL_NFABRIC, s->rtl);
        return false;
    }
    l->handle = dlopen(s->rtl_lib, RTLD_NOW | RTLD_LOCAL);
    if (!l->handle) {
        err = dlerror();
        error_setg(errp, "%s: property 'rtl-lib': cannot load '%s': %s",
                   TYPE_CXL_NFABRIC, s->rtl_lib, err ? err : "?");
        return false;
    }
    if (!nfabric_rtl_sym(s, "nfrtl_abi_version", &abi, errp) ||
        !nfabric_rtl_sym(s, "nfrtl_new", &l->model_new, errp) ||
        !nfabric_rtl_sym(s, "nfrtl_free", &l->model_free, errp) ||
        !nfabric_rtl_sym(s, "nfrtl_agg_write", &l->ops.agg_write, errp) ||
        !nfabric_rtl_sym(s, "nfrtl_agg_read", &l->ops.agg_read, errp) ||
        !nfabric_rtl_sym(s, "nfrtl_cycles", &l->cycles, errp) ||
        !nfabric_rtl_sym(s, "nfrtl_lines", &l->lines, errp) ||
        !nfabric_rtl_sym(s, "nfrtl_latency", &l->latency, errp)) {
        goto fail;
    }
    if (abi() != NFABRIC_RTL_ABI_VERSION) {
        error_setg(errp, "%s: property 'rtl-lib': '%s' has interface version "
                   "%d, this device needs %d (rebuild it: scripts/nfabric "
                   "rtl-lib)", TYPE_CXL_NFABRIC, s->rtl_lib, abi(),
                   NFABRIC_RTL_ABI_VERSION);
        goto fail;
    }
    l->model = l->model_new();
    if (!l->model) {
        error_setg(errp, "%s: property 'rtl-lib': '%s' could not make a "
                   "model", TYPE_CXL_NFABRIC, s->rtl_lib);
        goto fail;
    }
    return true;

fail:
    dlclose(l->handle);
    memset(l, 0, sizeof(*l));
    return false;
}

void nfabric_rtl_start(CXLNFabricState *s)
{
    if (!s->rtl_lib_fn.model) {
        return;
    }
    nfabric_ctrl_set_rtl(&s->ctrl, s->rtl_mode, &s->rtl_lib_fn.ops,
                         s->rtl_lib_fn.model);
    s->rtl_exit_notifier.notify = nfabric_rtl_exit_notify;
    qemu_add_exit_notifier(&s->rtl_exit_notifier);
}

void nfabric_rtl_unload(CXLNFabricState *s)
{
    NFabricRtlLib *l = &s->rtl_lib_fn;

    if (!l->handle) {
        return;
    }
    if (s->rtl_exit_notifier.notify) {
        qemu_remove_exit_notifier(&s->rtl_exit_notifier);
        s->rtl_exit_notifier.notify = NULL;
    }
    nfabric_ctrl_set_rtl(&s->ctrl, NFABRIC_RTL_OFF, NULL, NULL);
    if (l->model) {
        l->model_free(l->model);
    }
    dlclose(l->handle);
    memset(l, 0, sizeof(*l));
}

static void nfabric_rtl_get(Object *obj, Visitor *v, const char *name,
                            void *opaque, Error **errp)
{
    CXLNFabricState *s = CXL_NFABRIC(obj);
    NFabricRtlLib *l = &s->rtl_lib_fn;
    uint64_t val = 0;

    if (!strcmp(name, "rtl-accesses")) {
        val = s->ctrl.rtl_accesses;
    } else if (!strcmp(name, "rtl-mismatches")) {
        val = s->ctrl.rtl_mismatches;
    } else if (l->model && !strcmp(name, "rtl-cycles")) {
        val = l->cycles(l->model);
    } else if (l->model && !strcmp(name, "rtl-latency")) {
        val = l->latency(l->model);
    }
    visit_type_uint64(v, name, &val, errp);
}

void nfabric_rtl_class_init(ObjectClass *oc)
{
    static const char *const figures[][2] = {
        { "rtl-accesses", "low-bit accesses the RTL served or was compared "
          "on (read-only)" },
        { "rtl-mismatches", "accesses on which the RTL and the engine "
          "differed, each dropped (rtl=compare; read-only)" },
        { "rtl-cycles", "clock cycles the RTL model has run (read-only)" },
        { "rtl-latency", "the RTL's latency in cycles, measured when it was "
          "loaded (read-only)" },
    };

    object_class_property_set_description(oc, "rtl",
        "serve the low-bit datapath through its RTL (serve), or run the RTL "
        "beside the engine and drop any access they differ on (compare); "
        "off by default");
    object_class_property_set_description(oc, "rtl-lib",
        "the RTL datapath as a shared library (libnfrtl.so, hw/rtl/nfrtl.h)");
    for (size_t i = 0; i < ARRAY_SIZE(figures); i++) {
        object_class_property_add(oc, figures[i][0], "uint64",
                                  nfabric_rtl_get, NULL, NULL, NULL);
        object_class_property_set_description(oc, figures[i][0],
                                              figures[i][1]);
    }
}
